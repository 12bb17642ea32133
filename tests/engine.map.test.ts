/**
 * Maps run: the mapped node once per item, the instances in one superstep (one checkpoint),
 * their outputs gathered in item order, the next node once; an empty list and a missing one.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resumeRun, runGraph } from "../src/index.js";
import { settingsOf } from "../src/config/environment-settings.js";
import { concurrencyLimiter } from "../src/engine/map.js";
import { addedUsage, gatheredOutput, mergeOutputs, mergeUsage } from "../src/state/map.js";
import type { TokenUsage } from "../src/state/graph-state.js";
import { ROOT } from "./helpers/cli.js";
import { runAndVerify, runGraphFile } from "./helpers/e2e.js";
import { tempWorkspace } from "./helpers/workspace.js";

const fixture = (name: string) => join(ROOT, "tests/fixtures/parallel", name);

const runFixture = (name: string, task: string, script?: string) =>
  runGraphFile(fixture(name), task, script === undefined ? undefined : fixture(script));

describe("the outputs channel's reducer", () => {
  const write = (index: number, value: string) => ({ work: gatheredOutput({ node: "work", index, count: 3, as: "subtask" }, value) });

  it("places each instance's output at its item's index, whatever order the writes come in", () => {
    const merged = [write(2, "c"), write(0, "a"), write(1, "b")].reduce(mergeOutputs, { work: ["old"], plan: "p" });
    expect(merged).toEqual({ work: ["a", "b", "c"], plan: "p" });
  });

  it("starts a new list on a new pass, and a whole state written again stays as it is", () => {
    const first = [write(0, "a"), write(1, "b"), write(2, "c")].reduce(mergeOutputs, {});
    const second = [write(1, "B"), write(0, "A"), write(2, "C")].reduce(mergeOutputs, first);
    expect(second).toEqual({ work: ["A", "B", "C"] });
    expect(mergeOutputs(second, second)).toEqual(second);
  });
});

describe("the usage channel's reducer", () => {
  it("adds each instance's tokens to the node's total, and a total written again replaces", () => {
    const start = { work: { inputTokens: 10, outputTokens: 1 } };
    const instance = (tokens: number) => ({ work: addedUsage(start.work, { inputTokens: 10 + tokens, outputTokens: 1 + tokens }) });
    const merged = [instance(2), instance(3)].reduce<Record<string, TokenUsage>>(mergeUsage, start);
    expect(merged).toEqual({ work: { inputTokens: 15, outputTokens: 6 } });
    expect(mergeUsage(merged, merged)).toEqual(merged);
  });
});

describe("concurrencyLimiter", () => {
  it("runs at most the limit at once, the others in the order they came", async () => {
    const limited = concurrencyLimiter(2);
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const task = (n: number) => async () => {
      started.push(n);
      peak = Math.max(peak, ++running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running--;
      return n;
    };
    expect(await Promise.all([1, 2, 3, 4, 5].map((n) => limited(task(n))))).toEqual([1, 2, 3, 4, 5]);
    expect(peak).toBe(2);
    expect(started).toEqual([1, 2, 3, 4, 5]);
  });
});

describe("a map of function nodes", () => {
  it("runs the instances in one step, gathers their outputs in item order, then the next node once", async () => {
    const { outcome, history, steps } = await runFixture("map-functions.yaml", "a b c");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(steps).toEqual([["input"], ["start"], ["plan"], ["work"], ["report"]]);
    expect(history.checkpoints[3]!.instances).toEqual({ work: 3 });
    // The last item finished first: the list is in item order all the same.
    const gathered = ["did a (1/3)", "did b (2/3)", "did c (3/3)"];
    expect(outcome.state.outputs.work).toEqual(gathered);
    expect(outcome.state.outputs.report).toEqual({ gathered, peak: 3 });
    expect(outcome.state.visits).toEqual({ plan: 1, work: 3, report: 1 });
    expect([...(outcome.state.vars.log as string[])].sort()).toEqual(["a", "b", "c"]);
  });

  it("a recorded map run verifies against its graph", async () => {
    const verified = await runAndVerify(fixture("map-functions.yaml"), "a b");
    expect(verified.divergence).toBeUndefined();
    expect(verified.consistent).toBe(true);
  });

  it("pauses at a breakpoint before the mapped node, and resume runs every instance", async () => {
    const ws = tempWorkspace();
    const common = { workspace: ws.dir, db: ws.db, settings: settingsOf({}) };
    const paused = await runGraph({ ...common, graph: fixture("map-breakpoint.yaml"), task: "a b", threadId: "bp" });
    expect(paused.status, paused.error).toBe("paused");
    const resumed = await resumeRun({ ...common, threadId: "bp" });
    expect(resumed.status, resumed.error).toBe("finished");
    expect(resumed.state.outputs.work).toEqual(["did a (1/2)", "did b (2/2)"]);
    expect(resumed.state.visits.work).toBe(2);
  });

  it("maps straight from START, over a field's default", async () => {
    const { outcome, steps } = await runFixture("map-from-start.yaml", "t");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(steps.slice(2)).toEqual([["work"]]);
    expect(outcome.state.outputs.work).toEqual(["did x (1/2)", "did y (2/2)"]);
  });

  it("maps over a count: one instance per number 1 … n, the count from the field's default or from --attempts", async () => {
    const { outcome } = await runFixture("map-count.yaml", "t");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(outcome.state.outputs.work).toEqual(["did 1 (1/2)", "did 2 (2/2)"]);
    const ws = tempWorkspace();
    const three = await runGraph({
      graph: fixture("map-count.yaml"),
      task: "t",
      attempts: 3,
      workspace: ws.dir,
      db: ws.db,
      settings: settingsOf({}),
    });
    expect(three.state.outputs.work).toEqual(["did 1 (1/3)", "did 2 (2/3)", "did 3 (3/3)"]);
  });

  it("maps from a conditional edge's branch (LangGraph's Sends from a conditional edge), and takes another branch without the list", async () => {
    const mapped = await runFixture("branch-map.yaml", "a b");
    expect(mapped.outcome.status, mapped.outcome.error).toBe("finished");
    expect(mapped.steps.slice(2)).toEqual([["plan"], ["work"], ["report"]]);
    expect(mapped.outcome.state.outputs.work).toEqual(["did a (1/2)", "did b (2/2)"]);
    const skipped = await runFixture("branch-map.yaml", "missing");
    expect(skipped.outcome.status, skipped.outcome.error).toBe("finished");
    expect(skipped.steps.slice(2)).toEqual([["plan"], ["report"]]);
    expect(skipped.outcome.state.visits.work).toBeUndefined();
  });

  it("runs no instance for an empty list: the output is the empty list and the map's node's edges go on", async () => {
    const { outcome, steps } = await runFixture("map-functions.yaml", "");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(outcome.state.outputs.work).toEqual([]);
    expect(outcome.state.outputs.report).toMatchObject({ gathered: [] });
    expect(outcome.state.visits).toEqual({ plan: 1, report: 1 });
    expect(steps.at(-1)).toEqual(["report"]);
  });

  it("fails the run with one line when the list is missing", async () => {
    const { outcome } = await runFixture("map-functions.yaml", "missing");
    expect(outcome.status).toBe("failed");
    expect(outcome.error).toBe('the map from "plan" to "work" runs over outputs.plan.subtasks, which is missing');
  });

  it("runs no more instances at once than the map's max_concurrency", async () => {
    const { outcome } = await runFixture("map-bounded.yaml", "a b c d e");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(outcome.state.outputs.report).toMatchObject({ peak: 2 });
    expect(outcome.state.outputs.work).toHaveLength(5);
    expect((outcome.state.outputs.work as string[])[4]).toBe("did e (5/5)");
  });
});

describe("a map of agent nodes with the scripted model", () => {
  it("gives the instances distinct responses of the node's: instance i the i-th, in item order", async () => {
    const { outcome, steps } = await runFixture("map-agents.yaml", "red green blue", "map-agents.script.yaml");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(steps.slice(2)).toEqual([["plan"], ["write"]]);
    expect(outcome.state.outputs.write).toEqual(["line 0", "line 1", "line 2"]);
    // Each instance's answer is a message of its own; they were added in the order they finished.
    const answers = outcome.state.messages.filter((message) => message.name === "write").map((message) => message.content);
    expect(answers.sort()).toEqual(["line 0", "line 1", "line 2"]);
    expect(Object.values(outcome.state.scripted)).toEqual([{ write: 3 }]);
    // The node's tokens are the three instances' together (each answer is as long as the others).
    const single = await runFixture("map-agents.yaml", "red", "map-agents.script.yaml");
    expect(outcome.state.usage.write!.outputTokens).toBe(3 * single.outcome.state.usage.write!.outputTokens);
  });

  it("gives an instance its own responses (node: write[1]) before the node's", async () => {
    const { outcome } = await runFixture("map-agents.yaml", "red green blue", "map-agents-own.script.yaml");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(outcome.state.outputs.write).toEqual(["shared 0", "own of 1", "shared 2"]);
    expect(Object.values(outcome.state.scripted)).toEqual([{ write: 3, "write[1]": 1 }]);
  });
});

describe("a map of Coders", () => {
  it("runs a Coder per item, each on its part, scripted per instance (several calls each)", async () => {
    const { outcome, steps } = await runFixture("map-coders.yaml", "zero one", "map-coders.script.yaml");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(steps.at(-1)).toEqual(["fix"]);
    const results = outcome.state.outputs.fix as { status: string; summary: string }[];
    expect(results.map((result) => [result.status, result.summary])).toEqual([
      ["success", "wrote zero.txt"],
      ["success", "wrote one.txt"],
    ]);
    expect(Object.values(outcome.state.scripted)).toEqual([{ "fix[0]": 2, "fix[1]": 2 }]);
    // Each instance's result is a message of its own (their ids differ).
    expect(outcome.state.messages.filter((message) => message.name === "fix")).toHaveLength(2);
  });
});

describe("a map of Coders in branch worktrees", () => {
  it("each instance works on a branch of its own, numbered by its item; a merge of the node takes every instance's", async () => {
    const { outcome, workspace } = await runFixture("map-worktree-coders.yaml", "zero one", "map-coders.script.yaml");
    expect(outcome.status, outcome.error).toBe("finished");
    const results = outcome.state.outputs.fix as { branch: string; files: { path: string }[] }[];
    expect(results.map((result) => [result.branch, result.files.map((file) => file.path)])).toEqual([
      ["loopgraph/map-worktree-coders/fix-0", ["zero.txt"]],
      ["loopgraph/map-worktree-coders/fix-1", ["one.txt"]],
    ]);
    expect(outcome.state.outputs.merge).toMatchObject({ status: "applied", applied: ["one.txt", "zero.txt"] });
    expect(readFileSync(join(workspace, "zero.txt"), "utf8")).toBe("zero\n");
    expect(readFileSync(join(workspace, "one.txt"), "utf8")).toBe("one\n");
  });
});
