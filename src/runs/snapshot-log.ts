/**
 * Where a tool step started: the checkpoint it ran from (its namespace and id) and the
 * checkpoints its enclosing graphs ran from (LangGraph's `checkpoint_map`: namespace → id,
 * the root graph under "").
 */
export interface StepCheckpoint {
  ns: string;
  id: string;
  map: Record<string, string>;
}

/** One file-changing tool step and the workspace around it, as git trees of the shadow repository. */
export interface SnapshotRecord {
  threadId: string;
  /** 1, 2, 3 … in the order the steps ran in this thread. */
  seq: number;
  checkpoint: StepCheckpoint;
  node: string;
  tool: string;
  toolCallId: string;
  treeBefore: string;
  /** Undefined while the step runs, and for ever if its process died in the middle of it. */
  treeAfter?: string;
  /** Workspace paths that differ between the two trees: what the step changed. */
  paths?: string[];
  createdAt: string;
}

export interface SnapshotRow {
  thread_id: string;
  seq: number;
  checkpoint_ns: string;
  checkpoint_id: string;
  checkpoint_map: string;
  node: string;
  tool: string;
  tool_call_id: string;
  tree_before: string;
  tree_after: string | null;
  paths: string | null;
  created_at: string;
}

/** The workspace snapshots taken around file-changing tool steps, in the run store (SQLite: SnapshotLog; PostgreSQL: PostgresSnapshotLog). */
export interface SnapshotTable {
  /** Records a step starting, with the tree before it; returns its number in the thread. */
  open(step: Pick<SnapshotRecord, "threadId" | "checkpoint" | "node" | "tool" | "toolCallId" | "treeBefore">): Promise<number>;
  /** Records the tree after the step and the paths it changed. */
  close(threadId: string, seq: number, treeAfter: string, paths: string[]): Promise<void>;
  /** A thread's snapshots, in the order the steps ran. */
  list(threadId: string): Promise<SnapshotRecord[]>;
}

/** The named parameters of a step's opening row (both stores' statements take them). */
export function openParams(step: Pick<SnapshotRecord, "threadId" | "checkpoint" | "node" | "tool" | "toolCallId" | "treeBefore">) {
  return {
    thread_id: step.threadId,
    checkpoint_ns: step.checkpoint.ns,
    checkpoint_id: step.checkpoint.id,
    checkpoint_map: JSON.stringify(step.checkpoint.map),
    node: step.node,
    tool: step.tool,
    tool_call_id: step.toolCallId,
    tree_before: step.treeBefore,
    now: new Date().toISOString(),
  };
}

/** A snapshot from its row (the columns are the same in both stores). */
export function snapshotOf(row: SnapshotRow): SnapshotRecord {
  return {
    threadId: row.thread_id,
    seq: Number(row.seq),
    checkpoint: { ns: row.checkpoint_ns, id: row.checkpoint_id, map: JSON.parse(row.checkpoint_map) as Record<string, string> },
    node: row.node,
    tool: row.tool,
    toolCallId: row.tool_call_id,
    treeBefore: row.tree_before,
    ...(row.tree_after !== null ? { treeAfter: row.tree_after } : {}),
    ...(row.paths !== null ? { paths: JSON.parse(row.paths) as string[] } : {}),
    createdAt: row.created_at,
  };
}
