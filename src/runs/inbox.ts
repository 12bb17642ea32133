import type Database from "better-sqlite3";
import type { LooperCommand } from "../state/looper.js";

/** A command sent to a thread from any process (`loopgraph send/stop`), waiting for its loop. */
export interface InboxEntry {
  id: number;
  threadId: string;
  /** What the user typed. */
  text: string;
  command: LooperCommand;
  createdAt: string;
}

interface InboxRow {
  id: number;
  thread_id: string;
  text: string;
  command: string;
  created_at: string;
}

/**
 * The inbox of commands sent to threads, in the run store. Ids grow monotonically; a thread's
 * graph state records the last id it consumed (`inboxCursor`) in the same checkpoint as the
 * command's effect, so each command is applied exactly once and in order, across crashes.
 */
export class Inbox {
  private readonly insertStatement;
  private readonly afterStatement;

  constructor(db: Database.Database) {
    this.insertStatement = db.prepare(
      `INSERT INTO loopgraph_inbox (thread_id, text, command, created_at) VALUES (?, ?, ?, ?)`,
    );
    this.afterStatement = db.prepare(`SELECT * FROM loopgraph_inbox WHERE thread_id = ? AND id > ? ORDER BY id`);
  }

  post(threadId: string, text: string, command: LooperCommand): number {
    const result = this.insertStatement.run(threadId, text, JSON.stringify(command), new Date().toISOString());
    return Number(result.lastInsertRowid);
  }

  /** Commands of a thread after `cursor` (the last consumed id), oldest first. */
  after(threadId: string, cursor: number): InboxEntry[] {
    return (this.afterStatement.all(threadId, cursor) as InboxRow[]).map((row) => ({
      id: row.id,
      threadId: row.thread_id,
      text: row.text,
      command: JSON.parse(row.command) as LooperCommand,
      createdAt: row.created_at,
    }));
  }
}
