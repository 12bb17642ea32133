import type pg from "pg";
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
import { inTransaction } from "./schema.js";

const THREAD_COLUMNS =
  "thread_id, graph_file, graph_hash, graph_name, task, model, approval, mode, workspace, status, pid, owner_host, owner_start, heartbeat_at, command_groups, error, pause, created_at, updated_at";

/** The thread table of a PostgreSQL store; a claim locks the thread's row (`FOR UPDATE`) for its check. */
export class PostgresThreadRegistry implements ThreadTable {
  private readonly heartbeats: Heartbeats;

  constructor(private readonly pool: pg.Pool) {
    this.heartbeats = new Heartbeats(async (threadId, now) => {
      const { rowCount } = await this.pool.query(
        `UPDATE loopgraph_threads SET heartbeat_at = $2 WHERE thread_id = $1 AND status = 'running' AND pid = $3 AND owner_host = $4`,
        [threadId, now, THIS_PROCESS.pid, THIS_PROCESS.host],
      );
      return (rowCount ?? 0) > 0;
    });
  }

  async create(record: NewThread, options: { queued?: boolean } = {}): Promise<ThreadRecord | undefined> {
    const p = newThreadParams(record, options.queued);
    const { rowCount } = await this.pool.query(
      `INSERT INTO loopgraph_threads (thread_id, graph_file, graph_hash, graph_name, task, model, approval, workspace, status, pid, owner_host, owner_start, heartbeat_at, created_at, updated_at, mode)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14, $15)
       ON CONFLICT (thread_id) DO NOTHING`,
      [
        p.thread_id,
        p.graph_file,
        p.graph_hash,
        p.graph_name,
        p.task,
        p.model,
        p.approval,
        p.workspace,
        p.status,
        p.pid,
        p.host,
        p.start,
        p.heartbeat,
        p.now,
        p.mode,
      ],
    );
    if ((rowCount ?? 0) === 0) return (await this.get(record.threadId)) ?? this.create(record, options);
    if (!options.queued) this.heartbeats.start(record.threadId);
    return undefined;
  }

  async claim(threadId: string, settings: ClaimSettings = {}): Promise<Claim | undefined> {
    const claim = await inTransaction(this.pool, async (client): Promise<Claim | undefined> => {
      const row = (
        await client.query<ThreadRow>(`SELECT ${THREAD_COLUMNS} FROM loopgraph_threads WHERE thread_id = $1 FOR UPDATE`, [threadId])
      ).rows[0];
      if (!row) return undefined;
      const before = fromRow(row);
      const taking = claimFrom(before);
      if (!taking) return { claimed: false, holder: before };
      const p = claimParams(threadId, settings);
      await client.query(
        `UPDATE loopgraph_threads SET status = 'running', pid = $2, owner_host = $3, owner_start = $4, heartbeat_at = $5, error = NULL, pause = NULL,
         model = COALESCE($6, model), approval = COALESCE($7, approval), mode = COALESCE($8, mode), updated_at = $5${taking.takeover ? ", command_groups = NULL" : ""}
         WHERE thread_id = $1`,
        [threadId, p.pid, p.host, p.start, p.now, p.model, p.approval, p.mode],
      );
      return { claimed: true, before, killed: taking.killed };
    });
    if (claim?.claimed) this.heartbeats.start(threadId);
    return claim;
  }

  async delete(threadId: string): Promise<{ deleted: true; record: ThreadRecord } | { deleted: false; holder: ThreadRecord } | undefined> {
    return inTransaction(this.pool, async (client) => {
      const row = (
        await client.query<ThreadRow>(`SELECT ${THREAD_COLUMNS} FROM loopgraph_threads WHERE thread_id = $1 FOR UPDATE`, [threadId])
      ).rows[0];
      if (!row) return undefined;
      const record = fromRow(row);
      if (isRunningElsewhere(record)) return { deleted: false as const, holder: record };
      for (const table of THREAD_DATA_TABLES) await client.query(`DELETE FROM ${table} WHERE thread_id = $1`, [threadId]);
      return { deleted: true as const, record };
    });
  }

  markRunning(threadId: string, settings: ClaimSettings): Promise<Claim | undefined> {
    return this.claim(threadId, settings);
  }

  commandStarted(threadId: string, pgid: number): Promise<void> {
    return this.changeGroups(threadId, pgid, true);
  }

  commandEnded(threadId: string, pgid: number): Promise<void> {
    return this.changeGroups(threadId, pgid, false);
  }

  private async changeGroups(threadId: string, pgid: number, started: boolean): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      const row = (
        await client.query<{ command_groups: string | null }>(
          `SELECT command_groups FROM loopgraph_threads WHERE thread_id = $1 FOR UPDATE`,
          [threadId],
        )
      ).rows[0];
      if (!row) return;
      const groups = changedGroups(row.command_groups ? (JSON.parse(row.command_groups) as []) : [], pgid, started);
      await client.query(`UPDATE loopgraph_threads SET command_groups = $2 WHERE thread_id = $1`, [
        threadId,
        groups.length > 0 ? JSON.stringify(groups) : null,
      ]);
    });
  }

  async release(threadId: string, before: ThreadRecord): Promise<void> {
    this.heartbeats.stop(threadId);
    const p = releaseParams(threadId, before);
    await this.pool.query(
      `UPDATE loopgraph_threads SET status = $2, error = $3, pause = $4, updated_at = $5
       WHERE thread_id = $1 AND status = 'running' AND pid = $6 AND owner_host = $7`,
      [threadId, p.status, p.error, p.pause, p.now, p.pid, p.host],
    );
  }

  async markEnded(threadId: string, status: RunStatus | "queued", error?: string, pause?: ThreadRecord["pause"]): Promise<void> {
    this.heartbeats.stop(threadId);
    const p = endParams(threadId, status, error, pause);
    await this.pool.query(`UPDATE loopgraph_threads SET status = $2, error = $3, pause = $4, updated_at = $5 WHERE thread_id = $1`, [
      threadId,
      p.status,
      p.error,
      p.pause,
      p.now,
    ]);
  }

  async requeueOwned(threadId: string): Promise<boolean> {
    this.heartbeats.stop(threadId);
    const p = requeueParams(threadId);
    const { rowCount } = await this.pool.query(
      `UPDATE loopgraph_threads SET status = 'queued', error = NULL, pause = NULL, updated_at = $5
       WHERE thread_id = $1 AND status <> 'queued' AND pid = $2 AND (owner_host IS NULL OR owner_host = $3)
         AND (owner_start IS NULL OR $4::bigint IS NULL OR owner_start = $4)`,
      [threadId, p.pid, p.host, p.start, p.now],
    );
    return (rowCount ?? 0) > 0;
  }

  async get(threadId: string): Promise<ThreadRecord | undefined> {
    const row = (await this.pool.query<ThreadRow>(`SELECT ${THREAD_COLUMNS} FROM loopgraph_threads WHERE thread_id = $1`, [threadId]))
      .rows[0];
    return row && fromRow(row);
  }

  async list(): Promise<ThreadRecord[]> {
    return (
      await this.pool.query<ThreadRow>(`SELECT ${THREAD_COLUMNS} FROM loopgraph_threads ORDER BY created_at DESC, thread_id`)
    ).rows.map(fromRow);
  }

  close(): void {
    this.heartbeats.stopAll();
  }
}
