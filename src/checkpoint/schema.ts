import type Database from "better-sqlite3";

/**
 * Tables of the checkpoint saver:
 * - checkpoints: the checkpoint without its channel values, its channel versions as JSON;
 * - blobs: each channel value once per version (lists as snapshots, deltas and rollups, see
 *   list-history.ts);
 * - items: the item logs of list channels, in chunks (store version 3; see list-history.ts);
 * - writes: the tasks' pending writes.
 *
 * Tables are created WITHOUT ROWID (since store version 3): their keys are stored once, not in
 * the table and again in its primary key's index. Tables created before keep their rowid; both
 * work the same.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS loopgraph_checkpoints (
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
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS loopgraph_checkpoint_blobs (
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
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS loopgraph_checkpoint_items (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  channel TEXT NOT NULL,
  start_seq INTEGER NOT NULL,
  end_seq INTEGER NOT NULL,
  data BLOB NOT NULL,
  ends BLOB NOT NULL,
  types TEXT,
  PRIMARY KEY (thread_id, checkpoint_ns, channel, start_seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS loopgraph_checkpoint_writes (
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
) WITHOUT ROWID;
`;

/** How long a statement waits for another connection's lock before it fails with SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5000;

/**
 * The busy timeout in use: BUSY_TIMEOUT_MS, or LOOPGRAPH_BUSY_TIMEOUT_MS (milliseconds, a whole
 * number) when set, so that a test of a lock held beyond the timeout need not wait 5 s.
 */
export function busyTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const value = env.LOOPGRAPH_BUSY_TIMEOUT_MS;
  return value !== undefined && /^\d+$/.test(value.trim()) ? Number(value) : BUSY_TIMEOUT_MS;
}

/** Creates the saver's tables where they are missing (the run store's first migration runs this). */
export function createCheckpointTables(db: Database.Database): void {
  db.exec(SCHEMA);
}

/** WAL lets an `inspect` read while a run writes; the busy timeout lets two writers take turns. */
export function prepareDatabase(db: Database.Database): void {
  db.pragma(`busy_timeout = ${busyTimeoutMs()}`);
  db.pragma("journal_mode = WAL");
  createCheckpointTables(db);
}
