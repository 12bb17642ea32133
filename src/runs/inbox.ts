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
