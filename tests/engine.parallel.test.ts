/**
 * Parallel graphs run: a fan-out's targets run in one superstep (one checkpoint), a join's target
 * once after all its sources, and concurrent writes of a field combine by its reducer.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runGraph, threadHistory } from "../src/index.js";
import { possibleTargets, routeTargets } from "../src/engine/compile.js";
import type { EdgeDefinition } from "../src/format/types.js";
import { loadGraph } from "../src/graph/index.js";
import { rerunPlan } from "../src/replay/rerun-plan.js";
import { combinedWrite, mergeVars, type GraphStateValue } from "../src/state/graph-state.js";
import { describeStep } from "../src/engine/describe-step.js";
import { settingsOf } from "../src/config/environment-settings.js";
import { ROOT } from "./helpers/cli.js";
import { runAndVerify, runGraphFile } from "./helpers/e2e.js";
import { tempWorkspace } from "./helpers/workspace.js";

const fixture = (name: string) => join(ROOT, "tests/fixtures/parallel", name);

const runFixture = (name: string, task = "t") => runGraphFile(fixture(name), task);

describe("the vars channel's reducer", () => {
  it("appends and merges a node's combined writes, and replaces with a plain value", () => {
    const left = { log: ["a"], seen: { a: 1 }, note: "old" };
    const writes = [{ log: combinedWrite("append", ["b"]) }, { seen: combinedWrite("merge", { b: 2 }) }, { note: "new" }];
    expect(writes.reduce(mergeVars, left)).toEqual({ log: ["a", "b"], seen: { a: 1, b: 2 }, note: "new" });
  });

  it("lets a whole value replace, so a subgraph's state handed back does not append twice", () => {
    const afterAppend = mergeVars({ log: ["a"] }, { log: combinedWrite("append", ["b"]) });
    expect(mergeVars(afterAppend, afterAppend)).toEqual({ log: ["a", "b"] });
  });
});

describe("routing of lists of targets", () => {
  const state = (visits: Record<string, number>) => ({ visits }) as unknown as GraphStateValue;

  it("routes to each target after its own visit limit, END only when nothing runs", async () => {
    const graph = await loadGraph(fixture("fan-out-limits.yaml"));
    const fanOut = graph.edges[1]!;
    expect(possibleTargets(fanOut, graph)).toEqual(["a", "spare", "b"]);
    expect(routeTargets(fanOut, graph, state({}))).toEqual(["a", "b"]);
    expect(routeTargets(fanOut, graph, state({ a: 1 }))).toEqual(["spare", "b"]);
    const toEnd: EdgeDefinition = { kind: "static", from: "plan", to: ["END", "b"] };
    expect(routeTargets(toEnd, graph, state({}))).toEqual(["b"]);
    expect(routeTargets({ ...toEnd, to: ["END"] }, graph, state({}))).toEqual(["END"]);
  });

  it("replay --from's plan follows fan-outs and joins", async () => {
    const graph = await loadGraph(fixture("fan-out-join.yaml"));
    expect(rerunPlan(graph, ["a"]).map((step) => step.node)).toEqual(["a", "c"]);
    expect(rerunPlan(graph, ["a", "b"]).map((step) => step.node)).toEqual(["a", "b", "c"]);
  });
});

describe("parallel graphs run", () => {
  it("runs a join's target once, after branches of different lengths, and appends each node's write", async () => {
    const { outcome, history, steps } = await runFixture("uneven-join.yaml");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(steps).toEqual([["input"], ["start"], ["a", "b"], ["a2"], ["c"]]);
    // What inspect says the two-node step did: both nodes' outputs.
    expect(describeStep(history.checkpoints[2]!)).toBe("wrote outputs.a, outputs.b");
    expect(outcome.state.visits).toEqual({ a: 1, b: 1, a2: 1, c: 1 });
    // One superstep's writes apply in the order of its tasks (LangGraph sorts them by node id).
    expect(outcome.state.vars.log).toEqual(["a", "b", "a2", "c"]);
  });

  it("runs a branch's list of targets together, and the join after them", async () => {
    const { outcome, steps } = await runFixture("conditional-fan-out.yaml");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(steps.slice(2)).toEqual([["pick"], ["a", "b"], ["c"]]);
    expect(outcome.state.vars.log).toEqual(["a", "b", "c"]);
  });

  it("takes the other branch alone, and then the join does not run", async () => {
    const { outcome, steps } = await runFixture("conditional-fan-out.yaml", "one");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(steps.slice(2)).toEqual([["pick"], ["solo"]]);
    expect(outcome.state.vars.log).toEqual(["solo"]);
  });

  it("runs a join on each pass of a loop: its sources count again after it ran", async () => {
    const { outcome, steps } = await runFixture("join-loop.yaml");
    // The loop ends as plan's max_visits sends merge's edge to END.
    expect(outcome.status, outcome.error).toBe("limited");
    expect(steps.slice(2)).toEqual([["plan"], ["lint", "test"], ["merge"], ["plan"], ["lint", "test"], ["merge"]]);
    expect(outcome.state.visits).toEqual({ plan: 2, lint: 2, test: 2, merge: 2 });
  });

  it("applies each fan-out target's visit limit on its own", async () => {
    const { outcome, steps } = await runFixture("fan-out-limits.yaml");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(steps.slice(2)).toEqual([["plan"], ["a", "b"], ["plan"], ["b", "spare"]]);
    expect(outcome.state.vars.log).toEqual(["plan", "a", "b", "plan", "b", "spare"]);
  });

  it("a recorded parallel run verifies against its graph: each step's nodes route together, a join waits", async () => {
    const verified = await runAndVerify(fixture("uneven-join.yaml"), "t");
    expect(verified.divergence).toBeUndefined();
    expect(verified).toMatchObject({ consistent: true, checked: 4 });
  });

  it("combines a subgraph node's writes by its parent's reducers, and its state handed back appends nothing twice", async () => {
    const { outcome } = await runFixture("with-subgraph.yaml");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(outcome.state.vars.log).toEqual(["a", "b", "inner", "c"]);
  });

  it("runs examples/parallel-checks.yaml: both checks in one step, then the report of both", async () => {
    const ws = tempWorkspace();
    const graph = join(ROOT, "examples/parallel-checks.yaml");
    const task = "count these words\nand these lines";
    const outcome = await runGraph({ graph, task, threadId: "checks", workspace: ws.dir, db: ws.db, settings: settingsOf({}) });
    expect(outcome.status, outcome.error).toBe("finished");
    const history = await threadHistory("checks", { db: ws.db, env: {} });
    expect(history.checkpoints.map((checkpoint) => checkpoint.nodes).slice(2)).toEqual([["lines", "words"], ["report"]]);
    expect(outcome.state.outputs.report).toBe("the task has 2 lines and 6 words");
  });

  it("fails a function node that returns a field outside its writes:", async () => {
    const { outcome } = await runFixture("writes-violation.yaml");
    expect(outcome.status).toBe("failed");
    expect(outcome.error).toContain(`node "greedy" failed: the function returned vars.extra, which the node's writes: [log] leaves out`);
    expect(outcome.state.vars).toEqual({ log: [], extra: "" });
  });
});
