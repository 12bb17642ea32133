import type pg from "pg";
import { openParams, snapshotOf, type SnapshotRecord, type SnapshotRow, type SnapshotTable } from "../../runs/snapshot-log.js";

/** The snapshot log of a PostgreSQL store. */
export class PostgresSnapshotLog implements SnapshotTable {
  constructor(private readonly pool: pg.Pool) {}

  async open(step: Pick<SnapshotRecord, "threadId" | "checkpoint" | "node" | "tool" | "toolCallId" | "treeBefore">): Promise<number> {
    const p = openParams(step);
    // Two steps of a thread opening at once may compute the same number: the key refuses the second, which tries again.
    for (;;) {
      try {
        const { rows } = await this.pool.query<{ seq: number }>(
          `INSERT INTO loopgraph_snapshots (thread_id, seq, checkpoint_ns, checkpoint_id, checkpoint_map, node, tool, tool_call_id, tree_before, created_at)
           SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4, $5, $6, $7, $8, $9 FROM loopgraph_snapshots WHERE thread_id = $1
           RETURNING seq`,
          [p.thread_id, p.checkpoint_ns, p.checkpoint_id, p.checkpoint_map, p.node, p.tool, p.tool_call_id, p.tree_before, p.now],
        );
        return rows[0]!.seq;
      } catch (error) {
        if ((error as { code?: string }).code !== "23505") throw error;
      }
    }
  }

  async close(threadId: string, seq: number, treeAfter: string, paths: string[]): Promise<void> {
    await this.pool.query(`UPDATE loopgraph_snapshots SET tree_after = $1, paths = $2 WHERE thread_id = $3 AND seq = $4`, [
      treeAfter,
      JSON.stringify(paths),
      threadId,
      seq,
    ]);
  }

  async list(threadId: string): Promise<SnapshotRecord[]> {
    return (await this.pool.query<SnapshotRow>(`SELECT * FROM loopgraph_snapshots WHERE thread_id = $1 ORDER BY seq`, [threadId])).rows.map(
      snapshotOf,
    );
  }
}
