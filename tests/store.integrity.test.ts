import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../src/errors.js";
import { MIGRATIONS, STORE_VERSION } from "../src/store/sqlite/schema.js";
import { openStore, storeError, type StoreAccess } from "../src/store/store.js";
import { tempWorkspace } from "./helpers/workspace.js";
import type { SqliteCheckpointSaver } from "../src/store/sqlite/saver.js";

/** The error `openStore` throws, which must be a one-line ConfigError (exit 2). */
async function openError(db: string, access: StoreAccess): Promise<ConfigError> {
  let thrown: unknown;
  try {
    await (await openStore({ db, env: {} }, access)).close();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  const error = thrown as ConfigError;
  expect(error.message).not.toContain("\n");
  expect(error.message).toContain(db);
  return error;
}

/** A store with one thread, closed. */
async function storeWithThread(db: string): Promise<void> {
  const store = await openStore({ db, env: {} }, "create");
  await store.threads.create({ threadId: "t1", graphFile: "g.yaml", graphName: "g", task: "task", approval: "ask", workspace: "/w" });
  await store.close();
}

/** Another program's database: one table of its own, the default rollback journal. */
function otherAppDatabase(path: string): void {
  const db = new Database(path);
  db.exec("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES ('Ada')");
  db.close();
}

describe("the store's file", () => {
  it("refuses a text file for reads and writes and leaves it as it was", async () => {
    const { db } = tempWorkspace();
    writeFileSync(db, "not a database\n".repeat(100));
    for (const access of ["read", "write", "create"] as const)
      expect((await openError(db, access)).message).toMatch(/is not a SQLite database/);
    expect(readFileSync(db, "utf8")).toBe("not a database\n".repeat(100));
  });

  it("refuses a damaged store: truncated or garbled", async () => {
    const { root, db } = tempWorkspace();
    await storeWithThread(db);
    const bytes = readFileSync(db);
    const truncated = join(root, "truncated.db");
    writeFileSync(truncated, bytes.subarray(0, 1500));
    const garbled = join(root, "garbled.db");
    const noise = Buffer.from(bytes);
    for (let i = 100; i < noise.length; i++) noise[i] = (i * 7) & 255;
    writeFileSync(garbled, noise);
    for (const path of [truncated, garbled]) {
      for (const access of ["read", "write"] as const)
        expect((await openError(path, access)).message).toMatch(/is damaged \(malformed database\)/);
    }
  });

  it("refuses a directory", async () => {
    const { root } = tempWorkspace();
    const dir = join(root, "store.db");
    mkdirSync(dir);
    for (const access of ["read", "write", "create"] as const)
      expect((await openError(dir, access)).message).toMatch(/is a directory, not a store/);
  });

  it("refuses another program's database, reading or writing, and changes none of its bytes nor its journal mode", async () => {
    const { root } = tempWorkspace();
    const path = join(root, "other-app.db");
    otherAppDatabase(path);
    const before = readFileSync(path);
    for (const access of ["read", "write", "create"] as const) {
      expect((await openError(path, access)).message).toMatch(/is not a loopgraph store \(it has other tables\)/);
    }
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(readdirSync(root).filter((name) => name.startsWith("other-app"))).toEqual(["other-app.db"]);
    const db = new Database(path, { readonly: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("delete");
    await db.close();
  });

  it("a missing store is an error for reads and writes, and nothing is created; only `create` makes one", async () => {
    const { root } = tempWorkspace();
    const typo = join(root, "typo", "x.db");
    for (const access of ["read", "write"] as const) expect((await openError(typo, access)).message).toMatch(/^no store at /);
    expect(existsSync(dirname(typo))).toBe(false);
    await (await openStore({ db: typo, env: {} }, "create")).close();
    expect(existsSync(typo)).toBe(true);
  });

  it("an empty file becomes a store for a writer", async () => {
    const { db } = tempWorkspace();
    writeFileSync(db, "");
    const store = await openStore({ db, env: {} }, "write");
    expect(await store.threads.list()).toEqual([]);
    expect((store.saver as SqliteCheckpointSaver).db.pragma("user_version", { simple: true })).toBe(STORE_VERSION);
    await store.close();
  });

  it("reads a store read-only: a reader cannot write, and the file keeps its bytes", async () => {
    const { db } = tempWorkspace();
    await storeWithThread(db);
    const before = readFileSync(db);
    const store = await openStore({ db, env: {} }, "read");
    expect((await store.threads.get("t1"))?.task).toBe("task");
    await expect(store.inbox.post("t1", "stop", { command: "stop" })).rejects.toThrow(/readonly/);
    await store.close();
    expect(readFileSync(db).equals(before)).toBe(true);
  });

  it.skipIf(process.getuid?.() === 0)(
    "refuses a read-only file to a command that writes (not as root, whom chmod does not stop)",
    async () => {
      const { db } = tempWorkspace();
      await storeWithThread(db);
      chmodSync(db, 0o444);
      expect((await openError(db, "write")).message).toMatch(/is read-only/);
      expect(await (await openStore({ db, env: {} }, "read")).threads.get("t1")).toBeDefined();
    },
  );

  it("says what to do when SQLite refuses a write to a read-only store or waits beyond the busy timeout", async () => {
    const { db } = tempWorkspace();
    await storeWithThread(db);
    const reader = new Database(db, { readonly: true });
    let readOnly: unknown;
    try {
      reader.exec("DELETE FROM loopgraph_threads");
    } catch (error) {
      readOnly = error;
    }
    await reader.close();
    expect((readOnly as { code?: string }).code).toBe("SQLITE_READONLY");
    expect((storeError(db, readOnly) as Error).message).toBe(
      `${db} is read-only: make it (and its folder) writable, or give another store with --db`,
    );
    const other = new Error("something else");
    expect(storeError(db, other)).toBe(other);
  });

  it("a store locked by another program beyond the busy timeout is a one-line error", async () => {
    const { db } = tempWorkspace();
    await storeWithThread(db);
    const holder = new Database(db);
    holder.exec("BEGIN EXCLUSIVE");
    try {
      expect((await openError(db, "write")).message).toMatch(/is locked by another program \(waited 5 s\): try again once it is done/);
    } finally {
      holder.exec("ROLLBACK");
      await holder.close();
    }
  });
});

describe("the store's schema version", () => {
  it("a new store has the current version, and the migrations are numbered 1, 2, … in order", async () => {
    const { db } = tempWorkspace();
    await storeWithThread(db);
    const raw = new Database(db, { readonly: true });
    expect(raw.pragma("user_version", { simple: true })).toBe(STORE_VERSION);
    await raw.close();
    expect(MIGRATIONS.map((migration) => migration.version)).toEqual(MIGRATIONS.map((_, index) => index + 1));
  });

  it("version 5 keeps a version-4 store's recordings, in order, unique by thread, root checkpoint, task path and call index, without an AUTOINCREMENT counter", async () => {
    const { db } = tempWorkspace();
    const old = new Database(db);
    for (const migration of MIGRATIONS.filter((m) => m.version <= 4)) migration.up(old);
    old.pragma("user_version = 4");
    const insert = old.prepare(
      `INSERT INTO loopgraph_recordings (thread_id, checkpoint_id, task_path, call_index, node, kind, name, data, created_at) VALUES (?, ?, ?, ?, 'a', 'tool', 'shell', ?, '2026-01-01')`,
    );
    for (const [checkpoint, path, index, result] of [
      ["c1", "a:1", 0, "one"],
      ["c1", "a:1", 1, "two"],
      ["c2", "b:2", 0, "three"],
    ] as const) {
      insert.run("t", checkpoint, path, index, JSON.stringify({ kind: "tool", name: "shell", args: {}, result }));
    }
    old.close();

    const store = await openStore({ db, env: {} }, "write");
    const results = async () => (await store.recordings.list("t")).map((record) => (record.kind === "tool" ? record.result : undefined));
    expect(await results()).toEqual(["one", "two", "three"]);
    // A task run again (its first call) replaces what its earlier run recorded; others stay.
    store.recordings.put(
      { threadId: "t", checkpointId: "c1", taskPath: "a:1", callIndex: 0, node: "a" },
      { kind: "tool", name: "shell", args: {}, result: "again" },
    );
    expect(await results()).toEqual(["three", "again"]);
    await store.close();

    const raw = new Database(db, { readonly: true });
    expect(raw.pragma("user_version", { simple: true })).toBe(STORE_VERSION);
    const sql = (raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'loopgraph_recordings'").get() as { sql: string }).sql;
    expect(sql).not.toMatch(/AUTOINCREMENT/);
    expect(sql).toMatch(/UNIQUE \(thread_id, checkpoint_id, task_path, call_index\)/);
    expect(
      raw.prepare("SELECT name FROM sqlite_master WHERE tbl_name = 'loopgraph_recordings' AND type = 'index' AND sql IS NOT NULL").all(),
    ).toEqual([]);
    raw.close();
  });

  it("refuses a store newer than this loopgraph understands, for reads and writes", async () => {
    const { db } = tempWorkspace();
    await storeWithThread(db);
    const raw = new Database(db);
    raw.pragma(`user_version = ${STORE_VERSION + 1}`);
    await raw.close();
    for (const access of ["read", "write"] as const) {
      expect((await openError(db, access)).message).toBe(
        `${db} has store schema version ${STORE_VERSION + 1}, newer than this loopgraph understands (${STORE_VERSION}): upgrade loopgraph to use it`,
      );
    }
  });

  it("an unversioned store of an earlier release is read as it is (unchanged) and migrated by the first writer", async () => {
    const { db } = tempWorkspace();
    const old = new Database(db);
    // The threads table before `approval`, `pause` and `graph_hash`, and no other table yet.
    old.exec(`CREATE TABLE loopgraph_threads (thread_id TEXT PRIMARY KEY, graph_file TEXT NOT NULL, graph_name TEXT NOT NULL, task TEXT NOT NULL,
      model TEXT, workspace TEXT NOT NULL, status TEXT NOT NULL, pid INTEGER, error TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
      INSERT INTO loopgraph_threads VALUES ('old', 'g.yaml', 'g', 'an old task', NULL, '/w', 'finished', NULL, NULL, '2024-01-01', '2024-01-01');`);
    await old.close();
    const before = readFileSync(db);

    const reader = await openStore({ db, env: {} }, "read");
    expect(await reader.threads.get("old")).toMatchObject({ task: "an old task", approval: "ask" });
    expect(await reader.inbox.after("old", 0)).toEqual([]);
    await reader.close();
    expect(readFileSync(db).equals(before)).toBe(true);

    const writer = await openStore({ db, env: {} }, "write");
    await writer.inbox.post("old", "stop", { command: "stop" });
    expect((writer.saver as SqliteCheckpointSaver).db.pragma("user_version", { simple: true })).toBe(STORE_VERSION);
    await writer.close();
    expect((await (await openStore({ db, env: {} }, "read")).threads.get("old"))?.approval).toBe("ask");
  });

  it("an older store in WAL mode (as every store a run wrote is) is read through its migrated copy, unchanged", async () => {
    const { db } = tempWorkspace();
    const old = new Database(db);
    old.pragma("journal_mode = WAL");
    old.exec(`CREATE TABLE loopgraph_threads (thread_id TEXT PRIMARY KEY, graph_file TEXT NOT NULL, graph_name TEXT NOT NULL, task TEXT NOT NULL,
      model TEXT, workspace TEXT NOT NULL, status TEXT NOT NULL, pid INTEGER, error TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
      INSERT INTO loopgraph_threads VALUES ('old', 'g.yaml', 'g', 'an old task', NULL, '/w', 'finished', NULL, NULL, '2024-01-01', '2024-01-01');`);
    await old.close();
    const before = readFileSync(db);
    expect(before[18]).toBe(2);

    const reader = await openStore({ db, env: {} }, "read");
    expect(await reader.threads.get("old")).toMatchObject({ task: "an old task", approval: "ask" });
    await reader.close();
    expect(readFileSync(db).equals(before)).toBe(true);
  });
});
