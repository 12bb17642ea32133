import { isDeepStrictEqual } from "node:util";
import type { ComparisonCondition, Condition } from "./types.js";

/**
 * The value at a dotted path (`outputs.critique.verdict`, `messages.0.content`), or undefined
 * when any step is missing. Only own properties are followed, so `constructor` and the like
 * never resolve.
 */
export function getPath(value: unknown, path: string): unknown {
  let current = value;
  for (const key of path.split(".")) {
    if (current === null || typeof current !== "object" || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** Whether `condition` holds for `state`. A missing path compares as undefined. */
export function evaluateCondition(condition: Condition, state: unknown): boolean {
  if ("all" in condition) return condition.all.every((c) => evaluateCondition(c, state));
  if ("any" in condition) return condition.any.some((c) => evaluateCondition(c, state));
  if ("not" in condition) return !evaluateCondition(condition.not, state);
  return compare(getPath(state, condition.path), condition);
}

function compare(actual: unknown, { op, value }: ComparisonCondition): boolean {
  switch (op) {
    case "eq":
      return isDeepStrictEqual(actual, value);
    case "ne":
      return !isDeepStrictEqual(actual, value);
    case "in":
      return Array.isArray(value) && value.some((item) => isDeepStrictEqual(actual, item));
    case "not_in":
      return Array.isArray(value) && !value.some((item) => isDeepStrictEqual(actual, item));
    case "gt":
      return compareNumbers(actual, value, (a, b) => a > b);
    case "gte":
      return compareNumbers(actual, value, (a, b) => a >= b);
    case "lt":
      return compareNumbers(actual, value, (a, b) => a < b);
    case "lte":
      return compareNumbers(actual, value, (a, b) => a <= b);
    case "exists":
      return (actual !== undefined && actual !== null) === value;
    case "contains":
      if (typeof actual === "string") return typeof value === "string" && actual.includes(value);
      return Array.isArray(actual) && actual.some((item) => isDeepStrictEqual(item, value));
    case "matches":
      return typeof actual === "string" && typeof value === "string" && new RegExp(value).test(actual);
  }
}

/** Ordering operators hold only between two numbers. */
function compareNumbers(a: unknown, b: unknown, holds: (a: number, b: number) => boolean): boolean {
  return typeof a === "number" && typeof b === "number" && holds(a, b);
}
