import { describe, expect, it } from "vitest";
import { evaluateCondition, getPath } from "../src/format/condition.js";
import type { ComparisonOperator, Condition } from "../src/format/types.js";

const state = {
  task: "Write a haiku",
  outputs: { critique: { verdict: "approve", score: 7, tags: ["short", "clear"] }, draft: "An old silent pond" },
  vars: { audience: "developers", empty: null },
  visits: { revise: 2 },
  messages: [{ role: "user", content: "hi" }],
};

const compare = (path: string, op: ComparisonOperator, value: unknown): Condition => ({ path, op, value });

describe("getPath", () => {
  it("follows dotted paths through objects and arrays", () => {
    expect(getPath(state, "outputs.critique.verdict")).toBe("approve");
    expect(getPath(state, "messages.0.content")).toBe("hi");
    expect(getPath(state, "messages.length")).toBe(1);
    expect(getPath(state, "task")).toBe("Write a haiku");
  });

  it("returns undefined for missing steps, scalars and inherited properties", () => {
    expect(getPath(state, "outputs.revise.verdict")).toBeUndefined();
    expect(getPath(state, "task.length")).toBeUndefined();
    expect(getPath(state, "vars.empty.x")).toBeUndefined();
    expect(getPath(state, "outputs.constructor")).toBeUndefined();
    expect(getPath(undefined, "a")).toBeUndefined();
  });
});

describe("evaluateCondition", () => {
  it.each<[string, Condition, boolean]>([
    ["eq holds", compare("outputs.critique.verdict", "eq", "approve"), true],
    ["eq fails", compare("outputs.critique.verdict", "eq", "revise"), false],
    ["eq compares structurally", compare("outputs.critique.tags", "eq", ["short", "clear"]), true],
    ["eq does not coerce types", compare("outputs.critique.score", "eq", "7"), false],
    ["ne holds", compare("outputs.critique.verdict", "ne", "revise"), true],
    ["ne fails", compare("outputs.critique.verdict", "ne", "approve"), false],
    ["in holds", compare("vars.audience", "in", ["experts", "developers"]), true],
    ["in fails", compare("vars.audience", "in", ["experts"]), false],
    ["not_in holds", compare("vars.audience", "not_in", ["experts"]), true],
    ["not_in fails", compare("vars.audience", "not_in", ["developers"]), false],
    ["gt holds", compare("outputs.critique.score", "gt", 6), true],
    ["gt fails on equal", compare("outputs.critique.score", "gt", 7), false],
    ["gte holds on equal", compare("outputs.critique.score", "gte", 7), true],
    ["gte fails", compare("outputs.critique.score", "gte", 8), false],
    ["lt holds", compare("visits.revise", "lt", 3), true],
    ["lt fails on equal", compare("visits.revise", "lt", 2), false],
    ["lte holds on equal", compare("visits.revise", "lte", 2), true],
    ["lte fails", compare("visits.revise", "lte", 1), false],
    ["ordering needs numbers", compare("outputs.critique.verdict", "gt", 1), false],
    ["exists: true holds", compare("outputs.draft", "exists", true), true],
    ["exists: true fails for null", compare("vars.empty", "exists", true), false],
    ["exists: false holds for a missing path", compare("outputs.revise", "exists", false), true],
    ["exists: false fails", compare("outputs.draft", "exists", false), false],
    ["contains holds on a string", compare("outputs.draft", "contains", "silent"), true],
    ["contains fails on a string", compare("outputs.draft", "contains", "loud"), false],
    ["contains holds on a list", compare("outputs.critique.tags", "contains", "clear"), true],
    ["contains fails on a list", compare("outputs.critique.tags", "contains", "long"), false],
    ["matches holds", compare("outputs.draft", "matches", "^An .* pond$"), true],
    ["matches fails", compare("outputs.draft", "matches", "^pond"), false],
    ["matches needs a string", compare("outputs.critique.score", "matches", "7"), false],
  ])("%s", (_, condition, expected) => {
    expect(evaluateCondition(condition, state)).toBe(expected);
  });

  it("treats a missing path as undefined", () => {
    const missing = "outputs.nobody.verdict";
    expect(evaluateCondition(compare(missing, "eq", "approve"), state)).toBe(false);
    expect(evaluateCondition(compare(missing, "ne", "approve"), state)).toBe(true);
    expect(evaluateCondition(compare(missing, "in", ["approve"]), state)).toBe(false);
    expect(evaluateCondition(compare(missing, "gt", 0), state)).toBe(false);
    expect(evaluateCondition(compare(missing, "contains", "a"), state)).toBe(false);
    expect(evaluateCondition(compare(missing, "matches", "."), state)).toBe(false);
  });

  it("combines conditions with all, any and not", () => {
    const approved = compare("outputs.critique.verdict", "eq", "approve");
    const manyVisits = compare("visits.revise", "gte", 3);
    expect(evaluateCondition({ all: [approved, { not: manyVisits }] }, state)).toBe(true);
    expect(evaluateCondition({ all: [approved, manyVisits] }, state)).toBe(false);
    expect(evaluateCondition({ any: [manyVisits, approved] }, state)).toBe(true);
    expect(evaluateCondition({ any: [manyVisits, { not: approved }] }, state)).toBe(false);
    expect(evaluateCondition({ not: { any: [manyVisits] } }, state)).toBe(true);
  });
});
