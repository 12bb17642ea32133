import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { looperStatus, runGraph } from "../src/index.js";
import { ROOT } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";
import { settingsOf } from "../src/config/environment-settings.js";

const SCRIPT = join(ROOT, "tests/fixtures/looper/always-continue.script.yaml");

/** Bytes of the thread's checkpoints: checkpoint rows, channel blobs, pending writes and the item logs of list channels. */
function checkpointBytes(db: string): number {
  const store = new Database(db, { readonly: true });
  try {
    const sum = (sql: string): number => (store.prepare(sql).get() as { bytes: number | null }).bytes ?? 0;
    return (
      sum("SELECT SUM(LENGTH(checkpoint) + LENGTH(metadata) + LENGTH(channel_versions)) AS bytes FROM loopgraph_checkpoints") +
      sum("SELECT SUM(LENGTH(data)) AS bytes FROM loopgraph_checkpoint_blobs") +
      sum("SELECT SUM(LENGTH(value)) AS bytes FROM loopgraph_checkpoint_writes") +
      sum("SELECT SUM(LENGTH(data) + LENGTH(ends)) AS bytes FROM loopgraph_checkpoint_items")
    );
  } finally {
    store.close();
  }
}

describe("the Looper's snapshot keeps no task", () => {
  it("a 200 KB task is stored a few times, not once per Looper step (7 steps, 2 rounds)", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const task = `write the report: ${"lorem ipsum dolor sit amet ".repeat(8_000)}`;
    const outcome = await runGraph({
      graph: "coder-review",
      task,
      workspace: ws.dir,
      db: ws.db,
      threadId: "big",
      model: `scripted:${SCRIPT}`,
      approval: "auto",
      maxRounds: 2,
      settings: settingsOf({}),
    });
    expect(outcome.status, outcome.error).toBe("limited");
    expect(outcome.state.visits.looper).toBe(7);
    // What the run keeps whatever the step count: the input, the `task` channel, the task's
    // message, the Coder's and the Review's subgraph inputs, and the `loopTask` channel (the loop's
    // original task, written once with its pending write): about 16 copies here. The Judge's next
    // task repeats the original task cut to 8,000 characters, as its result is kept at every step.
    expect(checkpointBytes(ws.db) / task.length).toBeLessThan(18);
    expect(outcome.state.loopState?.context).not.toHaveProperty("task");

    // The round's task is the state's `task` channel: the Judge's next task (with its context), which status shows.
    expect(outcome.state.task).toMatch(/^keep going\n\n## Original task\nwrite the report: lorem/);
    expect(outcome.state.loopTask).toBe(task);
    const status = await looperStatus("big", { db: ws.db, env: {} });
    expect(status.json).toMatchObject({ state: "IDLE", task: outcome.state.task, round: 2, endReason: "round limit" });
    expect(status.text).toContain("last task: keep going (with context: original task, what was done, review comments)\n");
  });
});
