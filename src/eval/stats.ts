/**
 * The statistics of the eval report (docs/eval.md, "The report"): a pass rate with its Wilson score
 * interval, and the difference of two pass rates with Newcombe's hybrid score interval. Pure
 * functions; a skipped trial is counted by none of them (its caller leaves it out of `n`).
 */

/** A proportion with its interval, each a fraction from 0 to 1. */
export interface Interval {
  /** `passed / n`; NaN when n is 0 (no trial ran: there is no rate to show). */
  rate: number;
  low: number;
  high: number;
}

/** The difference of two proportions (b − a) with its interval, each from −1 to 1. */
export interface Difference {
  /** NaN when either side has no trial. */
  delta: number;
  low: number;
  high: number;
}

/** The normal quantile of a two-sided 95% interval. */
export const Z95 = 1.96;

/**
 * The Wilson score interval of `passed` successes in `n` trials (Wilson 1927; method 3 of
 * Newcombe 1998, "Two-sided confidence intervals for the single proportion"). With n = 0 nothing
 * is known: the rate is NaN and the interval the whole of [0, 1].
 */
export function wilson(passed: number, n: number, z = Z95): Interval {
  if (n === 0) return { rate: Number.NaN, low: 0, high: 1 };
  const rate = passed / n;
  const z2 = z * z;
  const denominator = 1 + z2 / n;
  const centre = (rate + z2 / (2 * n)) / denominator;
  const half = (z / denominator) * Math.sqrt((rate * (1 - rate)) / n + z2 / (4 * n * n));
  // At 0 and 1 the bound is the rate itself; rounding must not put it a hair beyond.
  return { rate, low: passed === 0 ? 0 : centre - half, high: passed === n ? 1 : centre + half };
}

/** Passed trials out of trials run. */
export interface Tally {
  passed: number;
  n: number;
}

/**
 * b's rate minus a's, with Newcombe's hybrid score interval (method 10 of Newcombe 1998,
 * "Interval estimation for the difference between independent proportions"), built on each
 * side's Wilson interval. With a side of no trials the difference is NaN and its interval
 * the whole of [−1, 1].
 */
export function difference(a: Tally, b: Tally, z = Z95): Difference {
  if (a.n === 0 || b.n === 0) return { delta: Number.NaN, low: -1, high: 1 };
  const wa = wilson(a.passed, a.n, z);
  const wb = wilson(b.passed, b.n, z);
  const delta = wb.rate - wa.rate;
  return {
    delta,
    low: delta - Math.hypot(wb.rate - wb.low, wa.high - wa.rate),
    high: delta + Math.hypot(wb.high - wb.rate, wa.rate - wa.low),
  };
}
