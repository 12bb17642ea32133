/**
 * The acceptance case of parallel graphs, through the CLI: `START → [a, b] → c` runs a and b in
 * one superstep (one checkpoint, as `inspect --json` lists it) and c once, after both.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, runCli } from "./helpers/cli.js";
import { finalState, run } from "./helpers/e2e.js";
import { tempWorkspace } from "./helpers/workspace.js";

const FAN_OUT_JOIN = join(ROOT, "tests/fixtures/parallel/fan-out-join.yaml");

describe("a fan-out and its join, run by the CLI", () => {
  it("runs a and b in the same step, then c once", async () => {
    const ws = tempWorkspace();
    const result = await run(ws, { graph: FAN_OUT_JOIN, thread: "par", task: "t" });
    expect(result.code, result.stderr).toBe(0);

    const inspected = await runCli(["inspect", "par", "--json", "--db", ws.db]);
    expect(inspected.code, inspected.stderr).toBe(0);
    const { checkpoints } = JSON.parse(inspected.stdout) as { checkpoints: { step: number; nodes: string[] }[] };
    expect(checkpoints.map((checkpoint) => checkpoint.nodes)).toEqual([["input"], ["start"], ["a", "b"], ["c"]]);

    const state = await finalState<{ visits: Record<string, number>; vars: { log: string[] } }>(ws.db, "par");
    expect(state.visits).toEqual({ a: 1, b: 1, c: 1 });
    expect(state.vars.log).toEqual(["a", "b", "c"]);
  });

  it("graphs draw draws the fan-out and the join", async () => {
    const shown = await runCli(["graphs", "draw", FAN_OUT_JOIN]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("__start__ --> a & b");
    expect(shown.stdout).toContain("a & b --> c");
  });
});
