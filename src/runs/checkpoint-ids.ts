import type Database from "better-sqlite3";

/**
 * Ids and parent links of a thread's checkpoints in every namespace (root graph and
 * subgraphs), read from the checkpoint saver's table without decoding any checkpoint.
 */

export interface CheckpointAddress {
  ns: string;
  id: string;
}

/** The thread's checkpoints whose id starts with `prefix`, in any namespace. */
export function checkpointsWithPrefix(db: Database.Database, threadId: string, prefix: string): CheckpointAddress[] {
  const rows = db
    .prepare(
      `SELECT checkpoint_ns AS ns, checkpoint_id AS id FROM loopgraph_checkpoints
       WHERE thread_id = ? AND substr(checkpoint_id, 1, ?) = ? ORDER BY checkpoint_id`,
    )
    .all(threadId, prefix.length, prefix) as CheckpointAddress[];
  return rows;
}

/** Every checkpoint id of the thread, any namespace. */
export function allCheckpointIds(db: Database.Database, threadId: string): string[] {
  return (db.prepare(`SELECT checkpoint_id AS id FROM loopgraph_checkpoints WHERE thread_id = ?`).all(threadId) as { id: string }[]).map(
    (row) => row.id,
  );
}

/** Checkpoint id → its parent's id (undefined for the first) in one namespace of the thread. */
export function parentLinks(db: Database.Database, threadId: string, ns: string): Map<string, string | undefined> {
  const rows = db
    .prepare(`SELECT checkpoint_id AS id, parent_checkpoint_id AS parent FROM loopgraph_checkpoints WHERE thread_id = ? AND checkpoint_ns = ?`)
    .all(threadId, ns) as { id: string; parent: string | null }[];
  return new Map(rows.map((row) => [row.id, row.parent ?? undefined]));
}
