/**
 * Maps through the CLI: `inspect --json` shows a map's instances in one step, and a run killed
 * (kill -9) while one instance still runs resumes without running again the instances whose
 * writes were stored (LangGraph keeps a step's finished tasks' writes as pending writes).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { withStore } from "../src/store/store.js";
import { eventually, ROOT, runCli } from "./helpers/cli.js";
import { finalState, resume, run, startRun } from "./helpers/e2e.js";
import { tempWorkspace } from "./helpers/workspace.js";

const fixture = (name: string) => join(ROOT, "tests/fixtures/parallel", name);

/** The writes stored so far for the tasks of the thread's next step, by channel (none before the store exists). */
function pendingWrites(db: string, thread: string): Promise<string[]> {
  return withStore({ db, env: {} }, "read", async (store) => {
    const tuple = await store.saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: "" } });
    return (tuple?.pendingWrites ?? []).map(([, channel]) => channel);
  }).catch(() => []);
}

describe("a map, run by the CLI", () => {
  it("inspect --json lists the map's step once, with its three instances", async () => {
    const ws = tempWorkspace();
    const result = await run(ws, { graph: fixture("map-functions.yaml"), thread: "map", task: "a b c" });
    expect(result.code, result.stderr).toBe(0);
    const inspected = await runCli(["inspect", "map", "--json", "--db", ws.db]);
    expect(inspected.code, inspected.stderr).toBe(0);
    const { checkpoints } = JSON.parse(inspected.stdout) as { checkpoints: { nodes: string[]; instances?: Record<string, number> }[] };
    expect(checkpoints.map((checkpoint) => checkpoint.nodes)).toEqual([["input"], ["start"], ["plan"], ["work"], ["report"]]);
    expect(checkpoints[3]!.instances).toEqual({ work: 3 });
    const shown = await runCli(["inspect", "map", "--db", ws.db]);
    expect(shown.stdout).toContain("work×3");
    expect(shown.stdout).toContain("ran work[0]…work[2] together");
  });

  it("kill -9 while one instance runs, then resume: the finished instances do not run again", async () => {
    const ws = tempWorkspace();
    const crashing = startRun(ws, { graph: fixture("map-gated.yaml"), thread: "crash", task: "one hold two" });
    // Both other instances' writes are stored (the step's pending writes), while `hold` waits.
    await eventually(
      () => pendingWrites(ws.db, "crash"),
      (channels) => channels.filter((channel) => channel === "outputs").length === 2,
      40_000,
    );
    const killed = await crashing.kill("SIGKILL");
    expect(killed.signal).toBe("SIGKILL");
    const log = () => readFileSync(join(ws.dir, "ran.log"), "utf8").trim().split("\n").sort();
    expect(log()).toEqual(["done one", "done two", "start hold", "start one", "start two"]);

    writeFileSync(join(ws.dir, "open-hold"), "");
    const resumed = await resume(ws, "crash", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    // Only `hold` ran again: it had not finished.
    expect(log()).toEqual(["done hold", "done one", "done two", "start hold", "start hold", "start one", "start two"]);
    const state = await finalState<{ outputs: Record<string, unknown>; visits: Record<string, number> }>(ws.db, "crash");
    expect(state.outputs.work).toEqual(["did one", "did hold", "did two"]);
    expect(state.outputs.report).toMatchObject({ gathered: ["did one", "did hold", "did two"] });
    expect(state.visits).toEqual({ plan: 1, work: 3, report: 1 });
  });
});
