import type Database from "better-sqlite3";
import type { LooperCommand } from "../../state/looper.js";
import { entryOf, MESSAGE, type InboxEntry, type InboxMessage, type InboxRow, type InboxTable } from "../../runs/inbox.js";

/** The inbox of a SQLite store. */
export class Inbox implements InboxTable {
  private readonly insertStatement;
  private readonly afterStatement;
  private readonly messagesStatement;
  private readonly removeStatement;

  constructor(db: Database.Database) {
    this.insertStatement = db.prepare(`INSERT INTO loopgraph_inbox (thread_id, text, command, created_at) VALUES (?, ?, ?, ?)`);
    this.afterStatement = db.prepare(`SELECT * FROM loopgraph_inbox WHERE thread_id = ? AND id > ? AND command != ? ORDER BY id`);
    this.removeStatement = db.prepare(`DELETE FROM loopgraph_inbox WHERE id = ?`);
    this.messagesStatement = db.prepare(`SELECT id, text FROM loopgraph_inbox WHERE thread_id = ? AND id > ? AND command = ? ORDER BY id`);
  }

  async post(threadId: string, text: string, command: LooperCommand): Promise<number> {
    const result = this.insertStatement.run(threadId, text, JSON.stringify(command), new Date().toISOString());
    return Number(result.lastInsertRowid);
  }

  async remove(id: number): Promise<void> {
    this.removeStatement.run(id);
  }

  async postMessage(threadId: string, text: string): Promise<number> {
    return Number(this.insertStatement.run(threadId, text, MESSAGE, new Date().toISOString()).lastInsertRowid);
  }

  async messagesAfter(threadId: string, cursor: number): Promise<InboxMessage[]> {
    return this.messagesStatement.all(threadId, cursor, MESSAGE) as InboxMessage[];
  }

  async after(threadId: string, cursor: number): Promise<InboxEntry[]> {
    return (this.afterStatement.all(threadId, cursor, MESSAGE) as InboxRow[]).map(entryOf);
  }
}
