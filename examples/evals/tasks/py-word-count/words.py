def word_count(text):
    """The number of words in text, however they are spaced."""
    if not text:
        return 0
    return len(text.split(" "))
