import type Database from "better-sqlite3";
import type { ApprovalMode } from "../state/thread.js";
import type { RunStatus } from "../state/thread.js";

/** A run's own record, beside its checkpoints: what it ran, with which settings, and how it ended. */
export interface ThreadRecord {
  threadId: string;
  graphFile: string;
  graphName: string;
  /** Fingerprint of the graph's files when the run started (see graphFingerprint). */
  graphHash?: string;
  task: string;
  /** Run-level model spec (never a key); undefined when every node names its own. */
  model?: string;
  /** Approval mode of the run (`--approval`). */
  approval: ApprovalMode;
  workspace: string;
  status: RunStatus | "running";
  /** Process running it while status is "running". */
  pid?: number;
  /** Set by `asSeen`: the thread was marked running by this process, which is gone. */
  goneOwner?: number;
  error?: string;
  /** Why a paused run waits: the breakpoint or the pending question. */
  pause?: { reason: string; node?: string; when?: string; value?: unknown };
  createdAt: string;
  updatedAt: string;
}

interface ThreadRow {
  thread_id: string;
  graph_file: string;
  graph_name: string;
  graph_hash: string | null;
  task: string;
  model: string | null;
  approval: ApprovalMode;
  workspace: string;
  status: ThreadRecord["status"];
  pid: number | null;
  error: string | null;
  pause: string | null;
  created_at: string;
  updated_at: string;
}

export class ThreadRegistry {
  private readonly insertStatement;
  private readonly updateStatement;
  private readonly getStatement;
  private readonly listStatement;

  constructor(db: Database.Database) {
    this.insertStatement = db.prepare(
      `INSERT INTO loopgraph_threads (thread_id, graph_file, graph_hash, graph_name, task, model, approval, workspace, status, pid, created_at, updated_at)
       VALUES (@thread_id, @graph_file, @graph_hash, @graph_name, @task, @model, @approval, @workspace, 'running', @pid, @now, @now)`,
    );
    this.updateStatement = db.prepare(
      `UPDATE loopgraph_threads SET status = @status, pid = @pid, error = @error, pause = @pause, model = COALESCE(@model, model), approval = COALESCE(@approval, approval), updated_at = @now
       WHERE thread_id = @thread_id`,
    );
    this.getStatement = db.prepare(`SELECT * FROM loopgraph_threads WHERE thread_id = ?`);
    this.listStatement = db.prepare(`SELECT * FROM loopgraph_threads ORDER BY created_at DESC, thread_id`);
  }

  create(record: Pick<ThreadRecord, "threadId" | "graphFile" | "graphHash" | "graphName" | "task" | "model" | "approval" | "workspace">): void {
    this.insertStatement.run({
      thread_id: record.threadId,
      graph_file: record.graphFile,
      graph_hash: record.graphHash ?? null,
      graph_name: record.graphName,
      task: record.task,
      model: record.model ?? null,
      approval: record.approval,
      workspace: record.workspace,
      pid: process.pid,
      now: new Date().toISOString(),
    });
  }

  /** Marks the thread as running in this process (a resume), with the settings it now runs with. */
  markRunning(threadId: string, settings: { model?: string; approval: ApprovalMode }): void {
    this.update(threadId, { status: "running", pid: process.pid, ...settings });
  }

  markEnded(threadId: string, status: RunStatus, error?: string, pause?: ThreadRecord["pause"]): void {
    this.update(threadId, { status, error, pause });
  }

  get(threadId: string): ThreadRecord | undefined {
    const row = this.getStatement.get(threadId) as ThreadRow | undefined;
    return row && fromRow(row);
  }

  list(): ThreadRecord[] {
    return (this.listStatement.all() as ThreadRow[]).map(fromRow);
  }

  private update(
    threadId: string,
    change: {
      status: ThreadRecord["status"];
      pid?: number;
      error?: string;
      model?: string;
      approval?: ApprovalMode;
      pause?: ThreadRecord["pause"];
    },
  ): void {
    this.updateStatement.run({
      thread_id: threadId,
      status: change.status,
      pid: change.pid ?? null,
      error: change.error ?? null,
      pause: change.pause ? JSON.stringify(change.pause) : null,
      model: change.model ?? null,
      approval: change.approval ?? null,
      now: new Date().toISOString(),
    });
  }
}

function fromRow(row: ThreadRow): ThreadRecord {
  return {
    threadId: row.thread_id,
    graphFile: row.graph_file,
    graphHash: row.graph_hash ?? undefined,
    graphName: row.graph_name,
    task: row.task,
    model: row.model ?? undefined,
    approval: row.approval,
    workspace: row.workspace,
    status: row.status,
    pid: row.pid ?? undefined,
    error: row.error ?? undefined,
    pause: row.pause ? (JSON.parse(row.pause) as ThreadRecord["pause"]) : undefined,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** True when a thread marked running is really running in a live process (not one killed mid-run). */
export function isRunningElsewhere(record: ThreadRecord): boolean {
  return record.status === "running" && record.pid !== undefined && record.pid !== process.pid && isAlive(record.pid);
}

/** The process a thread marked running was running in, when that process is gone (killed, crashed). */
export function goneOwner(record: ThreadRecord): number | undefined {
  if (record.status !== "running" || record.pid === undefined || record.pid === process.pid) return undefined;
  return isAlive(record.pid) ? undefined : record.pid;
}

/**
 * The record as a reader in another process should see it (`inspect`, `status`, `send`): a thread
 * marked running whose process is gone is interrupted, and says so.
 */
export function asSeen(record: ThreadRecord): ThreadRecord {
  const gone = goneOwner(record);
  return gone === undefined ? record : { ...record, status: "interrupted", error: `process ${gone}, which ran it, is gone`, goneOwner: gone };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
