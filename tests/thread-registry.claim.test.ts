import { spawnSync } from "node:child_process";
import Database from "better-sqlite3";
import { describe, expect, it, vi } from "vitest";
import { MIGRATIONS, STORE_VERSION } from "../src/store/sqlite/schema.js";
import { openStore, type Store } from "../src/store/store.js";
import { asSeen, HEARTBEAT_MS } from "../src/runs/thread-registry.js";
import { tempWorkspace } from "./helpers/workspace.js";
import type { SqliteCheckpointSaver } from "../src/store/sqlite/saver.js";

const NEW_THREAD = { graphFile: "g.yaml", graphName: "g", task: "task", approval: "ask", workspace: "/w" } as const;

/** A store (a real SQLite file) with thread `t`, ended with `status`. */
async function storeWith(status: "paused" | "finished" = "paused"): Promise<{ store: Store; db: string }> {
  const { db } = tempWorkspace();
  const store = await openStore({ db, env: {} }, "create");
  expect(await store.threads.create({ threadId: "t", ...NEW_THREAD })).toBeUndefined();
  await store.threads.markEnded("t", status, undefined, status === "paused" ? { reason: "breakpoint", node: "a" } : undefined);
  return { store, db };
}

/** A pid no process has now: one of a process that has ended. */
function deadPid(): number {
  return spawnSync("true").pid!;
}

// What every store's thread table does is in tests/store.contract.test.ts.
describe("the thread registry's claim", () => {
  it("the owner writes its heartbeat every HEARTBEAT_MS while it runs the thread, and stops when the thread ends", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "Date"] });
    try {
      const { store } = await storeWith();
      await store.threads.claim("t");
      const first = (await store.threads.get("t"))!.heartbeatAt!;
      vi.advanceTimersByTime(HEARTBEAT_MS);
      const second = (await store.threads.get("t"))!.heartbeatAt!;
      expect(Date.parse(second) - Date.parse(first)).toBe(HEARTBEAT_MS);
      await store.threads.markEnded("t", "paused");
      expect(vi.getTimerCount()).toBe(0);
      vi.advanceTimersByTime(HEARTBEAT_MS);
      expect((await store.threads.get("t"))!.heartbeatAt).toBe(second);
      await store.threads.claim("t");
      expect(vi.getTimerCount()).toBe(1);
      await store.close();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("the store's schema version 2 (thread owners)", () => {
  it("a version-1 store is read through a migrated copy, and migrated by the first writer: its threads kept, their owner columns added", async () => {
    const { db } = tempWorkspace();
    const old = new Database(db);
    MIGRATIONS[0]!.up(old);
    old.pragma("user_version = 1");
    old.exec(`INSERT INTO loopgraph_threads (thread_id, graph_file, graph_name, task, approval, workspace, status, pid, created_at, updated_at)
      VALUES ('t', 'g.yaml', 'g', 'old task', 'ask', '/w', 'running', ${deadPid()}, '2024-01-01', '2024-01-01')`);
    old.close();

    const reader = await openStore({ db, env: {} }, "read");
    expect(asSeen((await reader.threads.get("t"))!)).toMatchObject({ task: "old task", status: "interrupted" });
    await reader.close();

    const writer = await openStore({ db, env: {} }, "write");
    expect((writer.saver as SqliteCheckpointSaver).db.pragma("user_version", { simple: true })).toBe(STORE_VERSION);
    expect(STORE_VERSION).toBeGreaterThanOrEqual(2);
    const columns = (
      (writer.saver as SqliteCheckpointSaver).db.prepare("PRAGMA table_info(loopgraph_threads)").all() as { name: string }[]
    ).map((c) => c.name);
    expect(columns).toEqual(expect.arrayContaining(["owner_host", "owner_start", "heartbeat_at", "command_groups"]));
    // The thread of a process gone before owners were recorded is taken over.
    expect(await writer.threads.claim("t")).toMatchObject({ claimed: true, before: { task: "old task" } });
    await writer.close();
  });
});
