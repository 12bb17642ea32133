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

/** Free text sent to a Mediator (chat) thread from another process, waiting for the chat to answer it. */
export interface InboxMessage {
  id: number;
  text: string;
}

/** How a message for a Mediator is stored in the inbox's `command` column (Looper commands never read so). */
export const MESSAGE = JSON.stringify({ command: "message" });

export interface InboxRow {
  id: number;
  thread_id: string;
  text: string;
  command: string;
  created_at: string;
}

/**
 * The inbox of commands sent to threads, in the run store (SQLite: Inbox; PostgreSQL: PostgresInbox). Ids grow monotonically; a thread's
 * graph state records the last id it consumed (`inboxCursor`) in the same checkpoint as the
 * command's effect, so each command is applied exactly once and in order, across crashes.
 */
export interface InboxTable {
  post(threadId: string, text: string, command: LooperCommand): Promise<number>;
  /** Takes a command out before any thread consumed it (a chat's loop starts on the task it carries). */
  remove(id: number): Promise<void>;
  /** Posts free text for a Mediator thread (`loopgraph send <chat> "hello"`); the chat answers it (see `messagesAfter`). */
  postMessage(threadId: string, text: string): Promise<number>;
  /** Messages for a Mediator thread after `cursor` (the last one answered), oldest first. */
  messagesAfter(threadId: string, cursor: number): Promise<InboxMessage[]>;
  /** Commands of a thread after `cursor` (the last consumed id), oldest first; messages for a Mediator are not commands. */
  after(threadId: string, cursor: number): Promise<InboxEntry[]>;
}

/** An inbox entry from its row (the columns are the same in both stores). */
export function entryOf(row: InboxRow): InboxEntry {
  return {
    id: Number(row.id),
    threadId: row.thread_id,
    text: row.text,
    command: JSON.parse(row.command) as LooperCommand,
    createdAt: row.created_at,
  };
}

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
