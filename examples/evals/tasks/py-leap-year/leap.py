def is_leap_year(year):
    """Whether year is a leap year in the Gregorian calendar."""
    return year % 4 == 0
