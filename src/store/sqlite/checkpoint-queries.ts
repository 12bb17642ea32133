import type Database from "better-sqlite3";
import type { CheckpointAddress, CheckpointQueries } from "../../runs/checkpoint-ids.js";
import { CheckpointStore } from "./checkpoint-store.js";
import { latestCheckpointId, plainChannels } from "./plain-channels.js";

/**
 * The ids starting with `prefix` lie in a range of ids: from the prefix up to the prefix followed
 * by U+FFFF (ids are ASCII uuids; every character they hold sorts below it). The range lets SQLite
 * seek in the primary key; `substr` keeps the match exact.
 */
const PREFIX_RANGE = "checkpoint_id >= @prefix AND checkpoint_id < @upTo AND substr(checkpoint_id, 1, length(@prefix)) = @prefix";
const prefixRange = (prefix: string) => ({ prefix, upTo: `${prefix}\uffff` });

/**
 * The checkpoint queries of a SQLite store. Statements are prepared on first use, once (a
 * CheckpointStore prepares some thirty: about a millisecond, which `status` or a run's
 * bookkeeping would otherwise pay on every read).
 */
export class SqliteCheckpointQueries implements CheckpointQueries {
  private checkpointStore: CheckpointStore | undefined;
  private readonly statements = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {}

  private get store(): CheckpointStore {
    this.checkpointStore ??= new CheckpointStore(this.db);
    return this.checkpointStore;
  }

  /** The statement of `sql`, prepared on its first use. */
  private statement(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  async latestCheckpointId(threadId: string): Promise<string | undefined> {
    return latestCheckpointId(this.store, threadId);
  }

  async plainChannels(threadId: string, channels: readonly string[], checkpointId?: string): Promise<Record<string, unknown>> {
    return plainChannels(this.store, threadId, channels, checkpointId);
  }

  async checkpointsWithPrefix(threadId: string, prefix: string): Promise<CheckpointAddress[]> {
    return this.statement(
      `SELECT checkpoint_ns AS ns, checkpoint_id AS id FROM loopgraph_checkpoints WHERE thread_id = @threadId AND ${PREFIX_RANGE} ORDER BY checkpoint_id`,
    ).all({ threadId, ...prefixRange(prefix) }) as CheckpointAddress[];
  }

  /** Up to `limit` ids of the thread's root checkpoints that start with `prefix`, in order: a seek in the key, nothing decoded. */
  async rootCheckpointIdsWithPrefix(threadId: string, prefix: string, limit: number): Promise<string[]> {
    const rows = this.statement(
      `SELECT checkpoint_id AS id FROM loopgraph_checkpoints WHERE thread_id = @threadId AND checkpoint_ns = '' AND ${PREFIX_RANGE} ORDER BY checkpoint_id LIMIT @limit`,
    ).all({ threadId, limit, ...prefixRange(prefix) }) as { id: string }[];
    return rows.map((row) => row.id);
  }

  /** How many root checkpoints each thread has, in one query (threads without any are absent). */
  async rootCheckpointCounts(): Promise<Map<string, number>> {
    const rows = this.statement(
      `SELECT thread_id AS threadId, COUNT(*) AS n FROM loopgraph_checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id`,
    ).all() as { threadId: string; n: number }[];
    return new Map(rows.map((row) => [row.threadId, row.n]));
  }

  async allCheckpointIds(threadId: string): Promise<string[]> {
    const rows = this.statement(`SELECT checkpoint_id AS id FROM loopgraph_checkpoints WHERE thread_id = ?`).all(threadId) as {
      id: string;
    }[];
    return rows.map((row) => row.id);
  }

  async parentLinks(threadId: string, ns: string): Promise<Map<string, string | undefined>> {
    const rows = this.statement(
      `SELECT checkpoint_id AS id, parent_checkpoint_id AS parent FROM loopgraph_checkpoints WHERE thread_id = ? AND checkpoint_ns = ?`,
    ).all(threadId, ns) as { id: string; parent: string | null }[];
    return new Map(rows.map((row) => [row.id, row.parent ?? undefined]));
  }
}
