/**
 * `plainDiff` gives microdiff's changes, the same list in the same order: checked on many random
 * JSON-like pairs (objects, arrays, nulls, NaN, a Date, nested edits, keys added and removed).
 */
import { isDeepStrictEqual } from "node:util";
import diff, { type Difference } from "microdiff";
import { describe, expect, it } from "vitest";
import { plainDiff } from "../src/engine/plain-diff.js";

/** A small deterministic generator (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function value(next: () => number, depth: number): unknown {
  const roll = next();
  if (depth > 3 || roll < 0.35) {
    const leaves = [0, 1, 2, "a", "b", "", null, true, false, Number.NaN, undefined, new Date(0), new Date(5)];
    return leaves[Math.floor(next() * leaves.length)];
  }
  if (roll < 0.65) return Array.from({ length: Math.floor(next() * 5) }, () => value(next, depth + 1));
  const keys = ["x", "y", "z", "0", "1", "constructor"].filter(() => next() < 0.5);
  return Object.fromEntries(keys.map((key) => [key, value(next, depth + 1)]));
}

/** A copy of `input` with a few random edits. */
function edited(input: unknown, next: () => number, depth = 0): unknown {
  if (next() < 0.15) return value(next, depth);
  if (Array.isArray(input)) {
    const copy = input.map((item) => edited(item, next, depth + 1));
    if (next() < 0.3) copy.push(value(next, depth + 1));
    if (next() < 0.2) copy.pop();
    return copy;
  }
  if (input && typeof input === "object" && !(input instanceof Date)) {
    const copy = Object.fromEntries(
      Object.entries(input)
        .filter(() => next() > 0.15)
        .map(([key, inner]) => [key, edited(inner, next, depth + 1)]),
    );
    if (next() < 0.3) copy[["x", "w", "1", "2"][Math.floor(next() * 4)]!] = value(next, depth + 1);
    return copy;
  }
  return input;
}

/** Strictly equal (undefined values, number or string path steps); node's check, as expect's trips on a "constructor" key. */
const expectSame = (ours: Difference[], theirs: Difference[]): void =>
  expect(isDeepStrictEqual(ours, theirs), `${JSON.stringify(ours)}\n${JSON.stringify(theirs)}`).toBe(true);

describe("plainDiff", () => {
  it("lists microdiff's changes in microdiff's order", () => {
    const next = random(14);
    for (let trial = 0; trial < 3000; trial++) {
      const before = { channel: value(next, 0) };
      const after = { channel: edited(before.channel, next) };
      expectSame(plainDiff(before, after), diff(before, after));
      const left = [value(next, 1), value(next, 1)];
      const right = edited(left, next);
      if (Array.isArray(right)) expectSame(plainDiff(left, right), diff(left, right));
    }
  });
});
