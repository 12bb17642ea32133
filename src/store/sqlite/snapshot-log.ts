import type Database from "better-sqlite3";
import { openParams, snapshotOf, type SnapshotRecord, type SnapshotRow, type SnapshotTable } from "../../runs/snapshot-log.js";

/** The snapshot log of a SQLite store. */
export class SnapshotLog implements SnapshotTable {
  private readonly openStatement;
  private readonly closeStatement;
  private readonly listStatement;

  constructor(db: Database.Database) {
    // One statement, so two steps running at once in one thread never take the same number.
    this.openStatement = db.prepare(
      `INSERT INTO loopgraph_snapshots (thread_id, seq, checkpoint_ns, checkpoint_id, checkpoint_map, node, tool, tool_call_id, tree_before, created_at)
       SELECT @thread_id, COALESCE(MAX(seq), 0) + 1, @checkpoint_ns, @checkpoint_id, @checkpoint_map, @node, @tool, @tool_call_id, @tree_before, @now
       FROM loopgraph_snapshots WHERE thread_id = @thread_id
       RETURNING seq`,
    );
    this.closeStatement = db.prepare(`UPDATE loopgraph_snapshots SET tree_after = ?, paths = ? WHERE thread_id = ? AND seq = ?`);
    this.listStatement = db.prepare(`SELECT * FROM loopgraph_snapshots WHERE thread_id = ? ORDER BY seq`);
  }

  async open(step: Pick<SnapshotRecord, "threadId" | "checkpoint" | "node" | "tool" | "toolCallId" | "treeBefore">): Promise<number> {
    return (this.openStatement.get(openParams(step)) as { seq: number }).seq;
  }

  async close(threadId: string, seq: number, treeAfter: string, paths: string[]): Promise<void> {
    this.closeStatement.run(treeAfter, JSON.stringify(paths), threadId, seq);
  }

  async list(threadId: string): Promise<SnapshotRecord[]> {
    return (this.listStatement.all(threadId) as SnapshotRow[]).map(snapshotOf);
  }
}
