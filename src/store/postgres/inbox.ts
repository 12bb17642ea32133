import type pg from "pg";
import { entryOf, MESSAGE, type InboxEntry, type InboxMessage, type InboxRow, type InboxTable } from "../../runs/inbox.js";
import type { LooperCommand } from "../../state/looper.js";

/** The inbox of a PostgreSQL store. */
export class PostgresInbox implements InboxTable {
  constructor(private readonly pool: pg.Pool) {}

  post(threadId: string, text: string, command: LooperCommand): Promise<number> {
    return this.insert(threadId, text, JSON.stringify(command));
  }

  async remove(id: number): Promise<void> {
    await this.pool.query(`DELETE FROM loopgraph_inbox WHERE id = $1`, [id]);
  }

  postMessage(threadId: string, text: string): Promise<number> {
    return this.insert(threadId, text, MESSAGE);
  }

  async messagesAfter(threadId: string, cursor: number): Promise<InboxMessage[]> {
    const { rows } = await this.pool.query<{ id: string; text: string }>(
      `SELECT id, text FROM loopgraph_inbox WHERE thread_id = $1 AND id > $2 AND command = $3 ORDER BY id`,
      [threadId, cursor, MESSAGE],
    );
    return rows.map((row) => ({ id: Number(row.id), text: row.text }));
  }

  async after(threadId: string, cursor: number): Promise<InboxEntry[]> {
    const { rows } = await this.pool.query<InboxRow>(
      `SELECT * FROM loopgraph_inbox WHERE thread_id = $1 AND id > $2 AND command != $3 ORDER BY id`,
      [threadId, cursor, MESSAGE],
    );
    return rows.map(entryOf);
  }

  private async insert(threadId: string, text: string, command: string): Promise<number> {
    const { rows } = await this.pool.query<{ id: string }>(
      `INSERT INTO loopgraph_inbox (thread_id, text, command, created_at) VALUES ($1, $2, $3, $4) RETURNING id`,
      [threadId, text, command, new Date().toISOString()],
    );
    return Number(rows[0]!.id);
  }
}
