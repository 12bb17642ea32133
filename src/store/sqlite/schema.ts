import type Database from "better-sqlite3";
import { createCheckpointTables, rebuildWithRowid } from "./checkpoint-schema.js";

/**
 * The run store's schema, as migrations. The store's version is SQLite's `user_version`: 0 for a
 * new file and for stores written before the store was versioned, then the version of the last
 * migration applied. A store opened for writing runs the migrations above its version, in order,
 * in one transaction; a store newer than the last one here is refused.
 *
 * A change of the schema is one more entry at the end of MIGRATIONS; entries already released
 * never change.
 */
export interface Migration {
  readonly version: number;
  readonly describe: string;
  up(db: Database.Database): void;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    describe: "checkpoints, threads, inbox, recordings and snapshots (completes the unversioned stores of earlier releases)",
    up(db) {
      createCheckpointTables(db);
      db.exec(`CREATE TABLE IF NOT EXISTS loopgraph_threads (
        thread_id TEXT PRIMARY KEY,
        graph_file TEXT NOT NULL,
        graph_hash TEXT,
        graph_name TEXT NOT NULL,
        task TEXT NOT NULL,
        model TEXT,
        approval TEXT NOT NULL,
        workspace TEXT NOT NULL,
        status TEXT NOT NULL,
        pid INTEGER,
        error TEXT,
        pause TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE IF NOT EXISTS loopgraph_inbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        thread_id TEXT NOT NULL,
        text TEXT NOT NULL,
        command TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS loopgraph_inbox_thread ON loopgraph_inbox (thread_id, id);
      CREATE TABLE IF NOT EXISTS loopgraph_recordings (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        thread_id TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        task_path TEXT NOT NULL,
        call_index INTEGER NOT NULL,
        node TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT,
        data TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (thread_id, task_path, call_index)
      );
      CREATE INDEX IF NOT EXISTS loopgraph_recordings_thread ON loopgraph_recordings (thread_id, id);
      CREATE TABLE IF NOT EXISTS loopgraph_snapshots (
        thread_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        checkpoint_ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        checkpoint_map TEXT NOT NULL,
        node TEXT NOT NULL,
        tool TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        tree_before TEXT NOT NULL,
        tree_after TEXT,
        paths TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (thread_id, seq)
      );`);
      // Columns the unversioned stores gained over time.
      addMissingColumns(db, "loopgraph_threads", { approval: "TEXT NOT NULL DEFAULT 'ask'", pause: "TEXT", graph_hash: "TEXT" });
    },
  },
  {
    version: 2,
    describe:
      "the owner of a running thread: its host, its start time (with the pid, one process), its heartbeat and its commands' process groups",
    up(db) {
      addMissingColumns(db, "loopgraph_threads", {
        owner_host: "TEXT",
        owner_start: "INTEGER",
        heartbeat_at: "TEXT",
        command_groups: "TEXT",
      });
    },
  },
  {
    version: 3,
    describe:
      "list channels store each item once, in an item log per channel (loopgraph_checkpoint_items); versions written before stay as they are and are still read",
    up(db) {
      createCheckpointTables(db);
    },
  },
  {
    version: 4,
    describe:
      "the checkpoint saver's tables are rowid tables again (version 3 created them WITHOUT ROWID: searches read whole rows); item log chunks may be stored compressed (codec)",
    up(db) {
      rebuildWithRowid(db);
      createCheckpointTables(db);
    },
  },
  {
    version: 5,
    describe:
      "recordings are unique by thread, root checkpoint, task path and call index (rows of a step sit " +
      "together, as steps come in order), with plain rowids (no AUTOINCREMENT counter) and no second " +
      "thread index: a record costs two index pages a step instead of four to six",
    up(db) {
      db.exec(`CREATE TABLE loopgraph_recordings_v5 (
        id INTEGER PRIMARY KEY,
        thread_id TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        task_path TEXT NOT NULL,
        call_index INTEGER NOT NULL,
        node TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT,
        data TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (thread_id, checkpoint_id, task_path, call_index)
      );
      INSERT INTO loopgraph_recordings_v5 (id, thread_id, checkpoint_id, task_path, call_index, node, kind, name, data, created_at)
        SELECT id, thread_id, checkpoint_id, task_path, call_index, node, kind, name, data, created_at FROM loopgraph_recordings;
      DROP TABLE loopgraph_recordings;
      ALTER TABLE loopgraph_recordings_v5 RENAME TO loopgraph_recordings;`);
    },
  },
  {
    version: 6,
    describe: "threads record the Coder mode of their run (--mode ask|plan|agent)",
    up(db) {
      addMissingColumns(db, "loopgraph_threads", { mode: "TEXT" });
    },
  },
  {
    version: 7,
    describe: "evals (`loopgraph eval`) and their trials, each trial a thread of its own",
    up(db) {
      db.exec(`CREATE TABLE loopgraph_evals (
        eval_id TEXT PRIMARY KEY,
        suite_file TEXT NOT NULL,
        suite_name TEXT NOT NULL,
        suite_hash TEXT NOT NULL,
        variants TEXT NOT NULL,
        tasks TEXT NOT NULL,
        repeat INTEGER NOT NULL,
        concurrency INTEGER NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE loopgraph_eval_trials (
        eval_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        task TEXT NOT NULL,
        variant TEXT NOT NULL,
        repetition INTEGER NOT NULL,
        thread_id TEXT NOT NULL UNIQUE,
        result TEXT,
        PRIMARY KEY (eval_id, seq),
        UNIQUE (eval_id, task, variant, repetition)
      );`);
    },
  },
];

/** The schema version this loopgraph writes and understands. */
export const STORE_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

function addMissingColumns(db: Database.Database, table: string, columns: Record<string, string>): void {
  const existing = new Set((db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name));
  for (const [column, definition] of Object.entries(columns)) {
    if (!existing.has(column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${definition}`);
  }
}

export function schemaVersion(db: Database.Database): number {
  return db.pragma("user_version", { simple: true }) as number;
}

/** Runs the migrations above the database's version, each followed by its version, in order. Call in a transaction. */
export function migrate(db: Database.Database): void {
  const from = schemaVersion(db);
  for (const migration of MIGRATIONS) {
    if (migration.version <= from) continue;
    migration.up(db);
    db.pragma(`user_version = ${migration.version}`);
  }
}

/** What the database holds: loopgraph's tables, and whether it has others (another program's). */
export function schemaObjects(db: Database.Database): { ours: number; others: string[] } {
  const names = (
    db.prepare(`SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'`).all() as {
      name: string;
    }[]
  ).map((row) => row.name);
  const ours = names.filter((name) => name.startsWith("loopgraph_"));
  return { ours: ours.length, others: names.filter((name) => !name.startsWith("loopgraph_")) };
}

/** The columns that tell loopgraph's tables from another program's of the same name: `thread_id` for any not named here. */
const KNOWN_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  // Those every release's `loopgraph_threads` has (version 1's first ones).
  loopgraph_threads: ["thread_id", "graph_file", "graph_name", "task", "workspace", "status", "created_at", "updated_at"],
  loopgraph_evals: ["eval_id", "suite_file", "suite_hash", "variants", "status"],
};

/**
 * A table named as loopgraph's that is not: another program's `loopgraph_threads` (or other
 * `loopgraph_` table) without loopgraph's columns. Undefined when every such table is loopgraph's.
 */
export function foreignNamedTable(db: Database.Database): string | undefined {
  const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'loopgraph\\_%' ESCAPE '\\'`).all() as {
    name: string;
  }[];
  return tables
    .map((table) => table.name)
    .find((name) => {
      const columns = new Set(
        (db.prepare(`SELECT name FROM pragma_table_info(?)`).all(name) as { name: string }[]).map((column) => column.name),
      );
      const needed = KNOWN_COLUMNS[name] ?? ["thread_id"];
      return needed.some((column) => !columns.has(column));
    });
}
