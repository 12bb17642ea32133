import type Database from "better-sqlite3";

/**
 * Tables of the checkpoint saver:
 * - checkpoints: the checkpoint without its channel values, its channel versions as JSON;
 * - blobs: each channel value once per version (lists as snapshots, deltas and rollups, see
 *   list-history.ts);
 * - items: the item logs of list channels, in chunks (store version 3; see list-history.ts);
 * - writes: the tasks' pending writes.
 *
 * They are rowid tables, their keys in an index beside them. Store version 3 created them
 * WITHOUT ROWID, which stores the key once but keeps whole rows in the key's b-tree: a search
 * or range scan then reads every row it passes whole, overflow pages included (a scan of 11
 * chunks of an item log took 0.25 ms instead of 8 µs), and rows of a few KB fill its pages
 * poorly (the file came out larger). Store version 4 rebuilds those tables (`rebuildWithRowid`).
 */
const TABLES: Readonly<Record<string, string>> = {
  loopgraph_checkpoints: `(
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  parent_checkpoint_id TEXT,
  checkpoint_type TEXT NOT NULL,
  checkpoint BLOB NOT NULL,
  channel_versions TEXT NOT NULL,
  metadata_type TEXT NOT NULL,
  metadata BLOB NOT NULL,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
)`,
  loopgraph_checkpoint_blobs: `(
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  channel TEXT NOT NULL,
  version TEXT NOT NULL,
  kind TEXT NOT NULL,
  type TEXT,
  data BLOB,
  base_version TEXT,
  keep INTEGER,
  PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
)`,
  loopgraph_checkpoint_items: `(
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  channel TEXT NOT NULL,
  start_seq INTEGER NOT NULL,
  end_seq INTEGER NOT NULL,
  data BLOB NOT NULL,
  ends BLOB NOT NULL,
  types TEXT,
  codec TEXT,
  PRIMARY KEY (thread_id, checkpoint_ns, channel, start_seq)
)`,
  loopgraph_checkpoint_writes: `(
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  task_path TEXT NOT NULL DEFAULT '',
  idx INTEGER NOT NULL,
  channel TEXT NOT NULL,
  type TEXT NOT NULL,
  value BLOB NOT NULL,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
)`,
};

/** How long a statement waits for another connection's lock before it fails with SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5000;

/**
 * The busy timeout in use: BUSY_TIMEOUT_MS, or LOOPGRAPH_BUSY_TIMEOUT_MS (milliseconds, a whole
 * number) when set, so that a test of a lock held beyond the timeout need not wait 5 s.
 */
export function busyTimeoutMs(env: NodeJS.ProcessEnv): number {
  const value = env.LOOPGRAPH_BUSY_TIMEOUT_MS;
  return value !== undefined && /^\d+$/.test(value.trim()) ? Number(value) : BUSY_TIMEOUT_MS;
}

/** Creates the saver's tables where they are missing (the run store's first migration runs this). */
export function createCheckpointTables(db: Database.Database): void {
  for (const [table, columns] of Object.entries(TABLES)) db.exec(`CREATE TABLE IF NOT EXISTS ${table} ${columns}`);
  // The item log of a version-3 store has no codec column (its chunks are all stored raw).
  const itemColumns = db.prepare("PRAGMA table_info(loopgraph_checkpoint_items)").all() as { name: string }[];
  if (!itemColumns.some((column) => column.name === "codec")) db.exec("ALTER TABLE loopgraph_checkpoint_items ADD COLUMN codec TEXT");
}

/** Rebuilds the saver's tables created WITHOUT ROWID (by store version 3) as rowid tables, rows unchanged. Call in a transaction. */
export function rebuildWithRowid(db: Database.Database): void {
  for (const [table, columns] of Object.entries(TABLES)) {
    const row = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) as { sql: string } | undefined;
    if (!row || !/WITHOUT\s+ROWID/i.test(row.sql)) continue;
    const names = (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((column) => column.name).join(", ");
    db.exec(`ALTER TABLE ${table} RENAME TO ${table}_without_rowid`);
    db.exec(`CREATE TABLE ${table} ${columns}`);
    db.exec(`INSERT INTO ${table} (${names}) SELECT ${names} FROM ${table}_without_rowid`);
    db.exec(`DROP TABLE ${table}_without_rowid`);
  }
}

/** WAL lets an `inspect` read while a run writes; the busy timeout lets two writers take turns. */
export function prepareDatabase(db: Database.Database, env: NodeJS.ProcessEnv = {}): void {
  db.pragma(`busy_timeout = ${busyTimeoutMs(env)}`);
  db.pragma("journal_mode = WAL");
  // Durable across a crash of the process; a power cut may roll back the last commits (see docs/architecture.md).
  db.pragma("synchronous = NORMAL");
  createCheckpointTables(db);
}
