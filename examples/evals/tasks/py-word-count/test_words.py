import unittest

from words import word_count


class WordCountTest(unittest.TestCase):
    def test_single_spaces(self):
        self.assertEqual(word_count("one two three"), 3)

    def test_runs_of_spaces_and_line_breaks(self):
        self.assertEqual(word_count("  spaced   out  "), 2)
        self.assertEqual(word_count("line\nbreak"), 2)

    def test_empty(self):
        self.assertEqual(word_count(""), 0)


if __name__ == "__main__":
    unittest.main()
