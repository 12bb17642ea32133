import { spawnSync } from "node:child_process";
import Database from "better-sqlite3";
import { describe, expect, it, vi } from "vitest";
import { MIGRATIONS, STORE_VERSION } from "../src/store/sqlite/schema.js";
import { openStore, type Store } from "../src/store/store.js";
import { asSeen, HEARTBEAT_EXPIRY_MS, HEARTBEAT_MS, processStart, THIS_PROCESS } from "../src/runs/thread-registry.js";
import { tempWorkspace } from "./helpers/workspace.js";
import type { SqliteCheckpointSaver } from "../src/store/sqlite/saver.js";

const NEW_THREAD = { graphFile: "g.yaml", graphName: "g", task: "task", approval: "ask", workspace: "/w" } as const;

/** A store (a real SQLite file) with thread `t`, ended with `status`. */
async function storeWith(status: "paused" | "finished" = "paused"): Promise<{ store: Store; db: string }> {
  const { db } = tempWorkspace();
  const store = await openStore({ db }, "create");
  expect(await store.threads.create({ threadId: "t", ...NEW_THREAD })).toBeUndefined();
  await store.threads.markEnded("t", status, undefined, status === "paused" ? { reason: "breakpoint", node: "a" } : undefined);
  return { store, db };
}

/** Writes the owner of thread `t` as another process would have: running, in `owner`. */
function ownedBy(db: string, owner: { pid: number; host: string; start?: number | null; heartbeatAt?: string }): void {
  const raw = new Database(db);
  raw
    .prepare(
      `UPDATE loopgraph_threads SET status = 'running', pid = ?, owner_host = ?, owner_start = ?, heartbeat_at = ? WHERE thread_id = 't'`,
    )
    .run(owner.pid, owner.host, owner.start ?? null, owner.heartbeatAt ?? new Date().toISOString());
  raw.close();
}

/** A pid no process has now: one of a process that has ended. */
function deadPid(): number {
  return spawnSync("true").pid!;
}

describe("the thread registry's claim", () => {
  it("takes an unowned thread: running in this process (pid, host, start time, heartbeat); this process may claim it again", async () => {
    const { store } = await storeWith();
    const claim = await store.threads.claim("t", { approval: "auto" });
    expect(claim).toMatchObject({ claimed: true, before: { status: "paused", pause: { reason: "breakpoint" } } });
    const record = (await store.threads.get("t"))!;
    expect(record).toMatchObject({ status: "running", pid: process.pid, host: THIS_PROCESS.host, approval: "auto" });
    expect(record.ownerStart).toBe(processStart(process.pid));
    expect(record.pause).toBeUndefined();
    expect(Date.now() - Date.parse(record.heartbeatAt!)).toBeLessThan(HEARTBEAT_EXPIRY_MS);
    expect(await store.threads.claim("t")).toMatchObject({ claimed: true });
    expect(await store.threads.claim("nope")).toBeUndefined();
    await store.close();
  });

  it("release gives the thread back as it was; markEnded ends the hold (the pid stays as who ran it)", async () => {
    const { store } = await storeWith();
    const claim = await store.threads.claim("t");
    if (!claim?.claimed) throw new Error("not claimed");
    await store.threads.release("t", claim.before);
    expect(await store.threads.get("t")).toMatchObject({ status: "paused", pause: { reason: "breakpoint", node: "a" } });
    await store.threads.claim("t");
    await store.threads.markEnded("t", "finished");
    expect(await store.threads.get("t")).toMatchObject({ status: "finished", pid: process.pid });
    expect(asSeen((await store.threads.get("t"))!).status).toBe("finished");
    await store.close();
  });

  it("creating a thread whose id is taken writes nothing and returns the record that holds it", async () => {
    const { store } = await storeWith("finished");
    expect(await store.threads.create({ threadId: "t", ...NEW_THREAD, task: "another" })).toMatchObject({
      threadId: "t",
      task: "task",
      status: "finished",
    });
    expect((await store.threads.get("t"))?.task).toBe("task");
    await store.close();
  });

  it("refuses a thread a live process of this host runs (the pid runs, with the start time recorded)", async () => {
    const { store, db } = await storeWith();
    const parent = process.ppid;
    ownedBy(db, { pid: parent, host: THIS_PROCESS.host, start: processStart(parent) });
    expect(await store.threads.claim("t")).toMatchObject({ claimed: false, holder: { pid: parent, status: "running" } });
    expect(asSeen((await store.threads.get("t"))!).status).toBe("running");
    await store.close();
  });

  it("takes over a thread whose process is gone, and readers see it interrupted until then", async () => {
    const { store, db } = await storeWith();
    const gone = deadPid();
    ownedBy(db, { pid: gone, host: THIS_PROCESS.host, start: 12345 });
    expect(asSeen((await store.threads.get("t"))!)).toMatchObject({
      status: "interrupted",
      goneOwner: gone,
      error: `process ${gone}, which ran it, is gone`,
    });
    expect(await store.threads.claim("t")).toMatchObject({ claimed: true, before: { status: "running", pid: gone } });
    expect(await store.threads.get("t")).toMatchObject({ status: "running", pid: process.pid });
    await store.close();
  });

  it.skipIf(processStart(process.pid) === undefined)(
    "takes over a thread whose pid is alive with another start time: the pid was given to a later process",
    async () => {
      const { store, db } = await storeWith();
      const parent = process.ppid;
      ownedBy(db, { pid: parent, host: THIS_PROCESS.host, start: processStart(parent)! - 1 });
      expect(asSeen((await store.threads.get("t"))!)).toMatchObject({ status: "interrupted", goneOwner: parent });
      expect(await store.threads.claim("t")).toMatchObject({ claimed: true });
      await store.close();
    },
  );

  it("a thread of another host: refused while its heartbeat is fresh, taken over once it expired", async () => {
    const { store, db } = await storeWith();
    // The pid is this process's own: on another host it says nothing, only the heartbeat does.
    const fresh = new Date(Date.now() - (HEARTBEAT_EXPIRY_MS - 5_000)).toISOString();
    ownedBy(db, { pid: process.pid, host: "elsewhere.example", start: 1, heartbeatAt: fresh });
    expect(await store.threads.claim("t")).toMatchObject({ claimed: false, holder: { host: "elsewhere.example" } });
    expect(asSeen((await store.threads.get("t"))!).status).toBe("running");

    const expired = new Date(Date.now() - (HEARTBEAT_EXPIRY_MS + 1_000)).toISOString();
    ownedBy(db, { pid: process.pid, host: "elsewhere.example", start: 1, heartbeatAt: expired });
    expect(asSeen((await store.threads.get("t"))!)).toMatchObject({
      status: "interrupted",
      error: `process ${process.pid} on elsewhere.example, which ran it, has not been heard of since ${expired}`,
    });
    expect(await store.threads.claim("t")).toMatchObject({ claimed: true, before: { host: "elsewhere.example" } });
    expect(await store.threads.get("t")).toMatchObject({ host: THIS_PROCESS.host, pid: process.pid });
    await store.close();
  });

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

    const reader = await openStore({ db }, "read");
    expect(asSeen((await reader.threads.get("t"))!)).toMatchObject({ task: "old task", status: "interrupted" });
    await reader.close();

    const writer = await openStore({ db }, "write");
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
