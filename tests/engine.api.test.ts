import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runGraph, resumeRun, threadHistory, listThreads, checkpointState } from "../src/index.js";
import { loadGraph } from "../src/graph/load.js";
import { Thread } from "../src/engine/thread.js";
import { openStore } from "../src/store/store.js";
import type { RunEvent } from "../src/index.js";
import { ROOT } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";
import { settingsOf } from "../src/config/environment-settings.js";

const FIXTURES = join(ROOT, "tests/fixtures/engine");
const scripted = (name: string) => `scripted:${join(FIXTURES, name)}`;

const temp = (): string => tempWorkspace().dir;

describe("library API", () => {
  it("runs a subgraph node inside the parent thread and counts its nodes' visits", async () => {
    const dir = temp();
    const events: RunEvent[] = [];
    const outcome = await runGraph({
      graph: join(FIXTURES, "outer.yaml"),
      task: "nested",
      workspace: dir,
      db: join(dir, "db"),
      model: scripted("breakpoint.script.yaml"),
      onEvent: (e) => events.push(e),
      settings: settingsOf({}),
    });
    expect(outcome.status).toBe("finished");
    expect(readFileSync(join(dir, "steps.log"), "utf8")).toBe("first\ninner_step\nlast\n");
    expect(outcome.state.visits).toMatchObject({ first: 1, nested: 1, inner_step: 1, inner_agent: 1, last: 1 });
    expect(outcome.state.outputs.inner_agent).toBe("finished after the breakpoint");
    expect(events.filter((e) => e.type === "node_started").map((e) => (e as { node: string }).node)).toEqual([
      "first",
      "nested",
      "inner_step",
      "inner_agent",
      "last",
    ]);
  });

  it("a loop stops at max_visits and follows on_limit", async () => {
    const dir = temp();
    const outcome = await runGraph({
      graph: "example-review",
      task: "t",
      db: join(dir, "db"),
      model: scripted("always-revise.script.yaml"),
      settings: settingsOf({}),
    });
    expect(outcome.status, outcome.error).toBe("finished");
    expect(outcome.state.visits).toMatchObject({ draft: 1, critique: 4, revise: 3, stats: 1 });
    expect(outcome.state.outputs.stats).toMatchObject({ revised: true });
  });

  it("retries an invalid structured answer once with the validation error", async () => {
    const dir = temp();
    const outcome = await runGraph({
      graph: "example-review",
      task: "t",
      db: join(dir, "db"),
      model: scripted("repair.script.yaml"),
      settings: settingsOf({}),
    });
    expect(outcome.status, outcome.error).toBe("finished");
    expect(outcome.state.outputs.critique).toEqual({ verdict: "approve", notes: "ok" });
    expect(outcome.state.scripted[scripted("repair.script.yaml")]).toEqual({ draft: 1, critique: 2 });
  });

  it("fails the run (exit 1) when the answer is still invalid after the retry, and records why", async () => {
    const dir = temp();
    const db = join(dir, "db");
    const outcome = await runGraph({
      graph: "example-review",
      task: "t",
      db,
      model: scripted("bad-output.script.yaml"),
      settings: settingsOf({}),
    });
    expect(outcome.status).toBe("failed");
    expect(outcome.exitCode).toBe(1);
    expect(outcome.error).toMatch(/node "critique".*does not match the output schema/);
    const [thread] = await listThreads({ db, env: {} });
    expect(thread).toMatchObject({ status: "failed", error: outcome.error });
  });

  it("fails clearly when the scripted model is exhausted", async () => {
    const dir = temp();
    const outcome = await runGraph({
      graph: "example-review",
      task: "t",
      db: join(dir, "db"),
      model: scripted("breakpoint.script.yaml"),
      settings: settingsOf({}),
    });
    expect(outcome.status).toBe("failed");
    expect(outcome.error).toMatch(/scripted model exhausted/);
  });

  it("stores runs in .loopgraph/loopgraph.db under the working directory, or in LOOPGRAPH_DB", async () => {
    const cwd = temp();
    const model = scripted("breakpoint.script.yaml");
    await runGraph({ graph: join(FIXTURES, "breakpoint-after.yaml"), threadId: "a", cwd, settings: settingsOf({}), model });
    expect(existsSync(join(cwd, ".loopgraph/loopgraph.db"))).toBe(true);
    const elsewhere = join(cwd, "other.db");
    await runGraph({
      graph: join(FIXTURES, "breakpoint-after.yaml"),
      threadId: "b",
      cwd,
      settings: settingsOf({ LOOPGRAPH_DB: elsewhere }),
      model,
    });
    expect((await listThreads({ cwd, env: {} })).map((t) => t.threadId)).toEqual(["a"]);
    expect((await listThreads({ db: elsewhere, env: {} })).map((t) => t.threadId)).toEqual(["b"]);
  });

  it("threadHistory and checkpointState read a run back without the graph file", async () => {
    const dir = temp();
    const db = join(dir, "db");
    const outcome = await runGraph({
      graph: "example-review",
      task: "t",
      db,
      model: "scripted:examples/example-review.script.yaml",
      settings: settingsOf({}),
    });
    const history = await threadHistory(outcome.threadId, { db, env: {} });
    expect(history.checkpoints.map((c) => c.nodes.join())).toEqual(["input", "start", "draft", "critique", "revise", "critique", "stats"]);
    const revise = history.checkpoints[4]!;
    expect(revise.changes.map((c) => c.path)).toContain("outputs.revise");
    const state = await checkpointState(outcome.threadId, revise.checkpointId.slice(0, 30), { db, env: {} });
    expect((state.values.visits as Record<string, number>).revise).toBe(1);
    expect(state.values.outputs).not.toHaveProperty("stats");
  });
});

describe("resume of a thread killed before its first checkpoint", () => {
  it("starts from the recorded input and finishes, instead of failing on an empty history", async () => {
    const dir = temp();
    const db = join(dir, "db");
    const graph = await loadGraph(join(FIXTURES, "durable.yaml"));
    // What a kill between recording the thread and its first checkpoint leaves: the record alone.
    const store = await openStore({ db, env: {} }, "create");
    const spec = Thread.newThread(graph, {
      threadId: "early",
      workspace: dir,
      model: scripted("durable.script.yaml"),
      settings: settingsOf({}),
    });
    await Thread.prepare(store, graph, spec, { settings: settingsOf({}) }).record("prove durability");
    await store.close();
    expect((await threadHistory("early", { db, env: {} })).checkpoints).toHaveLength(0);

    const outcome = await resumeRun({ threadId: "early", db, settings: settingsOf({}) });
    expect(outcome.status, outcome.error).toBe("finished");
    expect(outcome.state.task).toBe("prove durability");
    expect(readFileSync(join(dir, "steps.log"), "utf8")).toBe("first\nsecond\n");
  });
});
