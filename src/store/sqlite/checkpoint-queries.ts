import type Database from "better-sqlite3";
import type { CheckpointAddress, CheckpointQueries } from "../../runs/checkpoint-ids.js";
import { latestCheckpointId, plainChannels } from "./plain-channels.js";

/**
 * The ids starting with `prefix` lie in a range of ids: from the prefix up to the prefix followed
 * by U+FFFF (ids are ASCII uuids; every character they hold sorts below it). The range lets SQLite
 * seek in the primary key; `substr` keeps the match exact.
 */
const PREFIX_RANGE = "checkpoint_id >= @prefix AND checkpoint_id < @upTo AND substr(checkpoint_id, 1, length(@prefix)) = @prefix";
const prefixRange = (prefix: string) => ({ prefix, upTo: `${prefix}\uffff` });

/** The checkpoint queries of a SQLite store. */
export class SqliteCheckpointQueries implements CheckpointQueries {
  constructor(private readonly db: Database.Database) {}

  async latestCheckpointId(threadId: string): Promise<string | undefined> {
    return latestCheckpointId(this.db, threadId);
  }

  async plainChannels(threadId: string, channels: readonly string[], checkpointId?: string): Promise<Record<string, unknown>> {
    return plainChannels(this.db, threadId, channels, checkpointId);
  }

  async checkpointsWithPrefix(threadId: string, prefix: string): Promise<CheckpointAddress[]> {
    return checkpointsWithPrefix(this.db, threadId, prefix);
  }

  async rootCheckpointIdsWithPrefix(threadId: string, prefix: string, limit: number): Promise<string[]> {
    return rootCheckpointIdsWithPrefix(this.db, threadId, prefix, limit);
  }

  async rootCheckpointCounts(): Promise<Map<string, number>> {
    return rootCheckpointCounts(this.db);
  }

  async allCheckpointIds(threadId: string): Promise<string[]> {
    return allCheckpointIds(this.db, threadId);
  }

  async parentLinks(threadId: string, ns: string): Promise<Map<string, string | undefined>> {
    return parentLinks(this.db, threadId, ns);
  }
}

function checkpointsWithPrefix(db: Database.Database, threadId: string, prefix: string): CheckpointAddress[] {
  return db
    .prepare(
      `SELECT checkpoint_ns AS ns, checkpoint_id AS id FROM loopgraph_checkpoints WHERE thread_id = @threadId AND ${PREFIX_RANGE} ORDER BY checkpoint_id`,
    )
    .all({ threadId, ...prefixRange(prefix) }) as CheckpointAddress[];
}

/** Up to `limit` ids of the thread's root checkpoints that start with `prefix`, in order: a seek in the key, nothing decoded. */
function rootCheckpointIdsWithPrefix(db: Database.Database, threadId: string, prefix: string, limit: number): string[] {
  return db
    .prepare(
      `SELECT checkpoint_id FROM loopgraph_checkpoints WHERE thread_id = @threadId AND checkpoint_ns = '' AND ${PREFIX_RANGE} ORDER BY checkpoint_id LIMIT @limit`,
    )
    .pluck()
    .all({ threadId, limit, ...prefixRange(prefix) }) as string[];
}

/** How many root checkpoints each thread has, in one query (threads without any are absent). */
function rootCheckpointCounts(db: Database.Database): Map<string, number> {
  const rows = db
    .prepare(`SELECT thread_id AS threadId, COUNT(*) AS n FROM loopgraph_checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id`)
    .all() as {
    threadId: string;
    n: number;
  }[];
  return new Map(rows.map((row) => [row.threadId, row.n]));
}

/** Every checkpoint id of the thread, any namespace. */
function allCheckpointIds(db: Database.Database, threadId: string): string[] {
  return (db.prepare(`SELECT checkpoint_id AS id FROM loopgraph_checkpoints WHERE thread_id = ?`).all(threadId) as { id: string }[]).map(
    (row) => row.id,
  );
}

/** Checkpoint id → its parent's id (undefined for the first) in one namespace of the thread. */
function parentLinks(db: Database.Database, threadId: string, ns: string): Map<string, string | undefined> {
  const rows = db
    .prepare(
      `SELECT checkpoint_id AS id, parent_checkpoint_id AS parent FROM loopgraph_checkpoints WHERE thread_id = ? AND checkpoint_ns = ?`,
    )
    .all(threadId, ns) as { id: string; parent: string | null }[];
  return new Map(rows.map((row) => [row.id, row.parent ?? undefined]));
}
