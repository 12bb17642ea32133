import type pg from "pg";
import {
  RecordQueue,
  recordingOf,
  type QueuedRecord,
  type RecordData,
  type Recording,
  type RecordingRow,
  type RecordingTable,
  type RecordKey,
} from "../../runs/recordings.js";
import type { PostgresWriteHook } from "./saver.js";
import { inTransaction } from "./schema.js";

/**
 * The recordings of a PostgreSQL store: queued, and written by the saver's write hook in the
 * transaction of the step's next checkpoint write (see `write`), as in a SQLite store.
 */
export class PostgresRecordings implements RecordingTable, PostgresWriteHook {
  private readonly queue = new RecordQueue();

  constructor(private readonly pool: pg.Pool) {}

  put(key: RecordKey, data: RecordData, secrets: readonly string[] = []): void {
    this.queue.put(key, data, secrets);
  }

  /** Whether records wait to be written (this table is the saver's write hook, see PostgresWriteHook). */
  pending(): boolean {
    return this.queue.size > 0;
  }

  /** Writes the queued records on `client` (in its transaction), in the order they were made. */
  async write(client: pg.ClientBase): Promise<void> {
    await this.queue.write((batch) => writeRecords(client, batch));
  }

  /** Writes the queued records in a transaction of their own (the store closes, or a list reads them). */
  async flush(): Promise<void> {
    if (this.pending()) await inTransaction(this.pool, (client) => this.write(client));
  }

  async list(threadId: string): Promise<Recording[]> {
    await this.flush();
    const { rows } = await this.pool.query<RecordingRow>(`SELECT * FROM loopgraph_recordings WHERE thread_id = $1 ORDER BY id`, [threadId]);
    return rows.map(recordingOf);
  }
}

async function writeRecords(client: pg.ClientBase, batch: readonly QueuedRecord[]): Promise<void> {
  for (const { key, row } of batch) {
    if (key.callIndex === 0)
      await client.query(`DELETE FROM loopgraph_recordings WHERE thread_id = $1 AND task_path = $2`, [key.threadId, key.taskPath]);
    await client.query(
      `INSERT INTO loopgraph_recordings (thread_id, checkpoint_id, task_path, call_index, node, kind, name, data, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (thread_id, task_path, call_index) DO UPDATE SET
         checkpoint_id = EXCLUDED.checkpoint_id, node = EXCLUDED.node, kind = EXCLUDED.kind, name = EXCLUDED.name, data = EXCLUDED.data, created_at = EXCLUDED.created_at`,
      [row.thread_id, row.checkpoint_id, row.task_path, row.call_index, row.node, row.kind, row.name, row.data, row.created_at],
    );
  }
}
