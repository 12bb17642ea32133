import type Database from "better-sqlite3";
import type { RunStatus } from "../../state/thread.js";
import {
  changedGroups,
  claimFrom,
  claimParams,
  endParams,
  fromRow,
  Heartbeats,
  isRunningElsewhere,
  newThreadParams,
  releaseParams,
  requeueParams,
  THIS_PROCESS,
  THREAD_DATA_TABLES,
  type Claim,
  type ClaimSettings,
  type NewThread,
  type ThreadRecord,
  type ThreadRow,
  type ThreadTable,
} from "../../runs/thread-registry.js";

/** The thread table of a SQLite store. */
export class ThreadRegistry implements ThreadTable {
  private readonly db: Database.Database;
  private readonly insertStatement;
  private readonly updateStatement;
  private readonly claimStatement;
  private readonly releaseStatement;
  private readonly requeueStatement;
  private readonly heartbeatStatement;
  private readonly groupsStatement;
  private readonly getStatement;
  private readonly listStatement;
  private readonly heartbeats: Heartbeats;

  constructor(db: Database.Database) {
    this.db = db;
    this.insertStatement = db.prepare(
      `INSERT INTO loopgraph_threads (thread_id, graph_file, graph_hash, graph_name, task, model, approval, mode, workspace, status, pid, owner_host, owner_start, heartbeat_at, created_at, updated_at)
       VALUES (@thread_id, @graph_file, @graph_hash, @graph_name, @task, @model, @approval, @mode, @workspace, @status, @pid, @host, @start, @heartbeat, @now, @now)`,
    );
    this.updateStatement = db.prepare(
      `UPDATE loopgraph_threads SET status = @status, error = @error, pause = @pause, updated_at = @now
       WHERE thread_id = @thread_id`,
    );
    this.claimStatement = db.prepare(
      `UPDATE loopgraph_threads SET status = 'running', pid = @pid, owner_host = @host, owner_start = @start, heartbeat_at = @now, error = NULL, pause = NULL,
       model = COALESCE(@model, model), approval = COALESCE(@approval, approval), mode = COALESCE(@mode, mode), updated_at = @now
       WHERE thread_id = @thread_id`,
    );
    this.releaseStatement = db.prepare(
      `UPDATE loopgraph_threads SET status = @status, error = @error, pause = @pause, updated_at = @now
       WHERE thread_id = @thread_id AND status = 'running' AND pid = @pid AND owner_host = @host`,
    );
    this.requeueStatement = db.prepare(
      `UPDATE loopgraph_threads SET status = 'queued', error = NULL, pause = NULL, updated_at = @now
       WHERE thread_id = @thread_id AND status <> 'queued' AND pid = @pid AND (owner_host IS NULL OR owner_host = @host)
         AND (owner_start IS NULL OR @start IS NULL OR owner_start = @start)`,
    );
    this.heartbeatStatement = db.prepare(
      `UPDATE loopgraph_threads SET heartbeat_at = @now WHERE thread_id = @thread_id AND status = 'running' AND pid = @pid AND owner_host = @host`,
    );
    this.groupsStatement = db.prepare(`UPDATE loopgraph_threads SET command_groups = @groups WHERE thread_id = @thread_id`);
    this.getStatement = db.prepare(`SELECT * FROM loopgraph_threads WHERE thread_id = ?`);
    this.listStatement = db.prepare(`SELECT * FROM loopgraph_threads ORDER BY created_at DESC, thread_id`);
    this.heartbeats = new Heartbeats(
      async (threadId, now) =>
        this.heartbeatStatement.run({ thread_id: threadId, pid: THIS_PROCESS.pid, host: THIS_PROCESS.host, now }).changes > 0,
    );
  }

  async create(record: NewThread, options: { queued?: boolean } = {}): Promise<ThreadRecord | undefined> {
    const existing = this.db
      .transaction(() => {
        const taken = this.read(record.threadId);
        if (taken) return taken;
        this.insertStatement.run(newThreadParams(record, options.queued));
        return undefined;
      })
      .immediate();
    if (!existing && !options.queued) this.heartbeats.start(record.threadId);
    return existing;
  }

  async claim(threadId: string, settings: ClaimSettings = {}): Promise<Claim | undefined> {
    const claim = this.db
      .transaction((): Claim | undefined => {
        const before = this.read(threadId);
        if (!before) return undefined;
        const taking = claimFrom(before);
        if (!taking) return { claimed: false, holder: before };
        if (taking.takeover) this.groupsStatement.run({ thread_id: threadId, groups: null });
        this.claimStatement.run(claimParams(threadId, settings));
        return { claimed: true, before, killed: taking.killed };
      })
      .immediate();
    if (claim?.claimed) this.heartbeats.start(threadId);
    return claim;
  }

  async commandStarted(threadId: string, pgid: number): Promise<void> {
    this.changeGroups(threadId, pgid, true);
  }

  async commandEnded(threadId: string, pgid: number): Promise<void> {
    this.changeGroups(threadId, pgid, false);
  }

  private changeGroups(threadId: string, pgid: number, started: boolean): void {
    this.db
      .transaction(() => {
        const groups = changedGroups(this.read(threadId)?.commandGroups ?? [], pgid, started);
        this.groupsStatement.run({ thread_id: threadId, groups: groups.length > 0 ? JSON.stringify(groups) : null });
      })
      .immediate();
  }

  async release(threadId: string, before: ThreadRecord): Promise<void> {
    this.heartbeats.stop(threadId);
    this.releaseStatement.run(releaseParams(threadId, before));
  }

  markRunning(threadId: string, settings: ClaimSettings): Promise<Claim | undefined> {
    return this.claim(threadId, settings);
  }

  async markEnded(threadId: string, status: RunStatus | "queued", error?: string, pause?: ThreadRecord["pause"]): Promise<void> {
    this.heartbeats.stop(threadId);
    this.updateStatement.run(endParams(threadId, status, error, pause));
  }

  async requeueOwned(threadId: string): Promise<boolean> {
    this.heartbeats.stop(threadId);
    return this.requeueStatement.run(requeueParams(threadId)).changes > 0;
  }

  async get(threadId: string): Promise<ThreadRecord | undefined> {
    return this.read(threadId);
  }

  async list(): Promise<ThreadRecord[]> {
    return (this.listStatement.all() as ThreadRow[]).map(fromRow);
  }

  async delete(threadId: string): Promise<{ deleted: true; record: ThreadRecord } | { deleted: false; holder: ThreadRecord } | undefined> {
    return this.db
      .transaction(() => {
        const record = this.read(threadId);
        if (!record) return undefined;
        if (isRunningElsewhere(record)) return { deleted: false as const, holder: record };
        const existing = new Set(
          (this.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[]).map((row) => row.name),
        );
        for (const table of THREAD_DATA_TABLES)
          if (existing.has(table)) this.db.prepare(`DELETE FROM ${table} WHERE thread_id = ?`).run(threadId);
        return { deleted: true as const, record };
      })
      .immediate();
  }

  close(): void {
    this.heartbeats.stopAll();
  }

  private read(threadId: string): ThreadRecord | undefined {
    const row = this.getStatement.get(threadId) as ThreadRow | undefined;
    return row && fromRow(row);
  }
}
