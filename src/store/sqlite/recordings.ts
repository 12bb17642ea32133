import type Database from "better-sqlite3";
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

/** The recordings of a SQLite store. */
export class Recordings implements RecordingTable {
  private readonly deleteTaskStatement;
  private readonly insertStatement;
  private readonly listStatement;
  private readonly writeInTransaction;
  private readonly queue = new RecordQueue();

  constructor(private readonly db: Database.Database) {
    // A task path names the root checkpoint its step started from (LangGraph derives task ids from
    // it), so (checkpoint, task path) finds the same rows as the task path alone, through the index.
    this.deleteTaskStatement = db.prepare(`DELETE FROM loopgraph_recordings WHERE thread_id = ? AND checkpoint_id = ? AND task_path = ?`);
    this.insertStatement = db.prepare(
      `INSERT OR REPLACE INTO loopgraph_recordings (thread_id, checkpoint_id, task_path, call_index, node, kind, name, data, created_at)
       VALUES (@thread_id, @checkpoint_id, @task_path, @call_index, @node, @kind, @name, @data, @created_at)`,
    );
    this.listStatement = db.prepare(`SELECT * FROM loopgraph_recordings WHERE thread_id = ? ORDER BY id`);
    this.writeInTransaction = db.transaction((batch: readonly QueuedRecord[]) => this.writeBatch(batch));
  }

  private writeBatch(batch: readonly QueuedRecord[]): void {
    for (const { key, row } of batch) {
      if (key.callIndex === 0) this.deleteTaskStatement.run(key.threadId, key.checkpointId, key.taskPath);
      this.insertStatement.run(row);
    }
  }

  put(key: RecordKey, data: RecordData, secrets: readonly string[] = []): void {
    this.queue.put(key, data, secrets);
  }

  /**
   * Writes the queued records, in the order they were made: in the transaction open on the
   * database (a checkpoint write's: they commit or roll back with it), or else in one of their own.
   */
  flush(): void {
    this.queue.write((batch) => (this.db.inTransaction ? this.writeBatch(batch) : this.writeInTransaction(batch)));
  }

  async list(threadId: string): Promise<Recording[]> {
    this.flush();
    return (this.listStatement.all(threadId) as RecordingRow[]).map(recordingOf);
  }
}
