/**
 * Parallel graphs run: a fan-out's targets run in one superstep (one checkpoint), a join's target
 * once after all its sources, and concurrent writes of a field combine by its reducer.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runGraph, threadHistory } from "../src/index.js";
import { settingsOf } from "../src/config/environment-settings.js";
import { ROOT } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

const fixture = (name: string) => join(ROOT, "tests/fixtures/parallel", name);

async function runFixture(name: string, task = "t") {
  const ws = tempWorkspace();
  const thread = name.replace(/\.yaml$/, "");
  const outcome = await runGraph({
    graph: fixture(name),
    task,
    threadId: thread,
    workspace: ws.dir,
    db: ws.db,
    settings: settingsOf({}),
  });
  const history = await threadHistory(thread, { db: ws.db, env: {} });
  return { outcome, steps: history.checkpoints.map((checkpoint) => checkpoint.nodes) };
}

describe("parallel graphs run", () => {
  it("runs a join's target once, after branches of different lengths, and appends each node's write", async () => {
    const { outcome, steps } = await runFixture("uneven-join.yaml");
    expect(outcome.status, outcome.error).toBe("finished");
    expect(steps).toEqual([["input"], ["start"], ["a", "b"], ["a2"], ["c"]]);
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

  it("fails a function node that returns a field outside its writes:", async () => {
    const { outcome } = await runFixture("writes-violation.yaml");
    expect(outcome.status).toBe("failed");
    expect(outcome.error).toContain(`node "greedy" failed: the function returned vars.extra, which the node's writes: [log] leaves out`);
    expect(outcome.state.vars).toEqual({ log: [], extra: "" });
  });
});
