import unittest

from leap import is_leap_year


class LeapYearTest(unittest.TestCase):
    def test_every_fourth_year(self):
        self.assertTrue(is_leap_year(2024))
        self.assertFalse(is_leap_year(2023))

    def test_centuries(self):
        self.assertFalse(is_leap_year(1900))
        self.assertTrue(is_leap_year(2000))


if __name__ == "__main__":
    unittest.main()
