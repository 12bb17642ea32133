import unittest

from stats import median


class MedianTest(unittest.TestCase):
    def test_odd_count(self):
        self.assertEqual(median([3, 1, 2]), 2)
        self.assertEqual(median([5]), 5)

    def test_even_count(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)
        self.assertEqual(median([10, 20]), 15)


if __name__ == "__main__":
    unittest.main()
