import { describe, expect, it } from "vitest";
import { difference, wilson } from "../src/eval/stats.js";

/** Figures as the papers print them, to four decimals: within 1e-4 of each (the last digit may round the other way). */
function expectFigures(actual: Record<string, number>, published: Record<string, number>): void {
  expect(Object.keys(actual).sort()).toEqual(Object.keys(published).sort());
  for (const [key, value] of Object.entries(published)) expect(Math.abs(actual[key]! - value), key).toBeLessThanOrEqual(1e-4);
}

describe("wilson", () => {
  // Newcombe R.G. (1998), "Two-sided confidence intervals for the single proportion: comparison of
  // seven methods", Statistics in Medicine 17:857-872, Table I, method 3 (score, no continuity correction).
  it.each([
    [81, 263, 0.2553, 0.3662],
    [15, 148, 0.0624, 0.1605],
    [0, 20, 0, 0.1611],
    [1, 29, 0.0061, 0.1718],
    [29, 29, 0.883, 1],
  ])("%i/%i: %f to %f, as Newcombe 1998 prints", (passed, n, low, high) => {
    const interval = wilson(passed, n);
    expectFigures({ low: interval.low, high: interval.high }, { low, high });
    expect(interval.rate).toBe(passed / n);
  });

  it("has no rate of no trial, and the whole of 0 to 1 as its interval", () => {
    expect(wilson(0, 0)).toEqual({ rate: Number.NaN, low: 0, high: 1 });
  });

  it("is wider with a larger z", () => {
    const wide = wilson(7, 10, 2.576);
    const narrow = wilson(7, 10, 1.645);
    expect(wide.low).toBeLessThan(narrow.low);
    expect(wide.high).toBeGreaterThan(narrow.high);
  });
});

describe("difference", () => {
  // Newcombe R.G. (1998), "Interval estimation for the difference between independent proportions:
  // comparison of eleven methods", Statistics in Medicine 17:873-890, Table II, method 10 (hybrid
  // score), examples (a) to (h): the paper's θ = p1 − p2 is difference(p2, p1) here (b − a).
  it.each([
    [56, 70, 48, 80, 0.2, 0.0524, 0.3339],
    [9, 10, 3, 10, 0.6, 0.1705, 0.809],
    [6, 7, 2, 7, 0.5714, 0.0582, 0.8062],
    [5, 56, 0, 29, 0.0893, -0.0381, 0.1926],
    [0, 10, 0, 20, 0, -0.1611, 0.2775],
    [10, 10, 0, 20, 1, 0.6791, 1],
    [10, 10, 0, 10, 1, 0.6075, 1],
  ])("%i/%i − %i/%i: %f [%f to %f]", (bPassed, bN, aPassed, aN, delta, low, high) => {
    const result = difference({ passed: aPassed, n: aN }, { passed: bPassed, n: bN });
    expectFigures({ ...result }, { delta, low, high });
  });

  it("turns its interval over when the sides swap", () => {
    const forward = difference({ passed: 48, n: 80 }, { passed: 56, n: 70 });
    const backward = difference({ passed: 56, n: 70 }, { passed: 48, n: 80 });
    expect(backward.delta).toBeCloseTo(-forward.delta, 12);
    expect(backward.low).toBeCloseTo(-forward.high, 12);
    expect(backward.high).toBeCloseTo(-forward.low, 12);
  });

  it("has no difference when a side ran no trial", () => {
    expect(difference({ passed: 0, n: 0 }, { passed: 3, n: 4 })).toEqual({ delta: Number.NaN, low: -1, high: 1 });
  });
});
