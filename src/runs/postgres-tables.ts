import type pg from "pg";
import type { PostgresWriteHook } from "../checkpoint/postgres-saver.js";
import { CHECKPOINT_MIGRATIONS, inTransaction, migrate, schemaVersions, type Migration } from "../checkpoint/postgres-schema.js";
import { ConfigError } from "../errors.js";
import type { LooperCommand } from "../state/looper.js";
import type { RunStatus } from "../state/thread.js";
import type { CheckpointAddress, CheckpointQueries } from "./checkpoint-ids.js";
import type { StoreAccess, StoreTables } from "./tables.js";
import { entryOf, MESSAGE, type InboxEntry, type InboxMessage, type InboxRow, type InboxTable } from "./inbox.js";
import { openPostgresPool, postgresError } from "./postgres-connection.js";
import {
  RecordQueue,
  recordingOf,
  type QueuedRecord,
  type RecordData,
  type RecordingRow,
  type RecordingTable,
  type Recording,
  type RecordKey,
} from "./recordings.js";
import type { RepoResult, RepoSource, RepoWorkspaceRecord, RepoWorkspaceTable } from "./repo-workspaces.js";
import { openParams, snapshotOf, type SnapshotRecord, type SnapshotRow, type SnapshotTable } from "./snapshot-log.js";
import {
  changedGroups,
  claimFrom,
  isRunningElsewhere,
  THREAD_DATA_TABLES,
  claimParams,
  endParams,
  fromRow,
  Heartbeats,
  newThreadParams,
  releaseParams,
  THIS_PROCESS,
  type Claim,
  type ClaimSettings,
  type NewThread,
  type ThreadRecord,
  type ThreadRow,
  type ThreadTable,
} from "./thread-registry.js";
import { withoutPassword } from "./url-password.js";

/**
 * The run tables on PostgreSQL, beside the checkpoint saver's (postgres-schema.ts): the same
 * columns as a SQLite store's, so one row mapping serves both. Times are ISO text, as there.
 */
export const RUN_MIGRATIONS: readonly Migration[] = [
  [
    `CREATE TABLE loopgraph_threads (
      thread_id text COLLATE "C" PRIMARY KEY,
      graph_file text NOT NULL,
      graph_hash text,
      graph_name text NOT NULL,
      task text NOT NULL,
      model text,
      approval text NOT NULL,
      workspace text NOT NULL,
      status text NOT NULL,
      pid integer,
      owner_host text,
      owner_start bigint,
      heartbeat_at text,
      command_groups text,
      error text,
      pause text,
      created_at text NOT NULL,
      updated_at text NOT NULL
    )`,
    `CREATE TABLE loopgraph_inbox (
      id bigserial PRIMARY KEY,
      thread_id text COLLATE "C" NOT NULL,
      text text NOT NULL,
      command text NOT NULL,
      created_at text NOT NULL
    )`,
    `CREATE INDEX loopgraph_inbox_thread ON loopgraph_inbox (thread_id, id)`,
    `CREATE TABLE loopgraph_recordings (
      id bigserial PRIMARY KEY,
      thread_id text COLLATE "C" NOT NULL,
      checkpoint_id text COLLATE "C" NOT NULL,
      task_path text COLLATE "C" NOT NULL,
      call_index integer NOT NULL,
      node text NOT NULL,
      kind text NOT NULL,
      name text,
      data text NOT NULL,
      created_at text NOT NULL,
      UNIQUE (thread_id, task_path, call_index)
    )`,
    `CREATE INDEX loopgraph_recordings_thread ON loopgraph_recordings (thread_id, id)`,
    `CREATE TABLE loopgraph_snapshots (
      thread_id text COLLATE "C" NOT NULL,
      seq integer NOT NULL,
      checkpoint_ns text COLLATE "C" NOT NULL,
      checkpoint_id text COLLATE "C" NOT NULL,
      checkpoint_map text NOT NULL,
      node text NOT NULL,
      tool text NOT NULL,
      tool_call_id text NOT NULL,
      tree_before text NOT NULL,
      tree_after text,
      paths text,
      created_at text NOT NULL,
      PRIMARY KEY (thread_id, seq)
    )`,
  ],
  [
    `CREATE TABLE loopgraph_repo_workspaces (
      thread_id text COLLATE "C" PRIMARY KEY,
      repo text NOT NULL,
      ref text NOT NULL,
      commit text NOT NULL,
      base_tree text,
      tree text,
      patch bytea,
      result text,
      updated_at text NOT NULL
    )`,
  ],
  [`ALTER TABLE loopgraph_threads ADD COLUMN mode text`],
];

/** A PostgreSQL store's tables, and the pool they (and the store's saver) use. */
export interface PostgresTables extends StoreTables {
  kind: "postgres";
  pool: pg.Pool;
}

/**
 * Connects to the database a `postgres://` URL names and opens its run tables: a writer creates
 * or upgrades the schema (under the migrations' lock, safe from several processes at once); a
 * reader needs a store there already. Errors are one line (exit 2), the URL shown without its password.
 */
export async function openPostgresTables(url: string, access: StoreAccess, env: NodeJS.ProcessEnv): Promise<PostgresTables> {
  const path = withoutPassword(url);
  const pool = await openPostgresPool(url, env);
  try {
    const versions = await schemaVersions(pool);
    if (access !== "create" && !versions.has("runs")) {
      throw new ConfigError(`no loopgraph store in ${path}: run a graph with --db pointing at it first`);
    }
    // A database at this loopgraph's versions is used as it is; another is migrated (or refused when newer) under the lock.
    if (versions.get("checkpoints") !== CHECKPOINT_MIGRATIONS.length) await migrate(pool, "checkpoints", CHECKPOINT_MIGRATIONS);
    if (versions.get("runs") !== RUN_MIGRATIONS.length) await migrate(pool, "runs", RUN_MIGRATIONS);
    const threads = new PostgresThreadRegistry(pool);
    return {
      kind: "postgres",
      path,
      pool,
      threads,
      inbox: new PostgresInbox(pool),
      repoWorkspaces: new PostgresRepoWorkspaces(pool),
      checkpoints: new PostgresCheckpointQueries(pool),
      close: async () => {
        threads.close();
        await pool.end();
      },
    };
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw postgresError(url, error);
  }
}

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

/**
 * The recordings of a PostgreSQL store: queued, and written by the saver's write hook in the
 * transaction of the step's next checkpoint write (see `write`), as in a SQLite store.
 */
export class PostgresRecordings implements RecordingTable, PostgresWriteHook {
  private readonly queue = new RecordQueue();

  constructor(private readonly pool: pg.Pool) {}

  put(key: RecordKey, data: RecordData, secrets: readonly string[] = []): void {
    this.queue.put(key, data, secrets);
  }

  /** Whether records wait to be written (this table is the saver's write hook, see PostgresWriteHook). */
  pending(): boolean {
    return this.queue.size > 0;
  }

  /** Writes the queued records on `client` (in its transaction), in the order they were made. */
  async write(client: pg.ClientBase): Promise<void> {
    await this.queue.write((batch) => writeRecords(client, batch));
  }

  /** Writes the queued records in a transaction of their own (the store closes, or a list reads them). */
  async flush(): Promise<void> {
    if (this.pending()) await inTransaction(this.pool, (client) => this.write(client));
  }

  async list(threadId: string): Promise<Recording[]> {
    await this.flush();
    const { rows } = await this.pool.query<RecordingRow>(`SELECT * FROM loopgraph_recordings WHERE thread_id = $1 ORDER BY id`, [threadId]);
    return rows.map(recordingOf);
  }
}

async function writeRecords(client: pg.ClientBase, batch: readonly QueuedRecord[]): Promise<void> {
  for (const { key, row } of batch) {
    if (key.callIndex === 0)
      await client.query(`DELETE FROM loopgraph_recordings WHERE thread_id = $1 AND task_path = $2`, [key.threadId, key.taskPath]);
    await client.query(
      `INSERT INTO loopgraph_recordings (thread_id, checkpoint_id, task_path, call_index, node, kind, name, data, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (thread_id, task_path, call_index) DO UPDATE SET
         checkpoint_id = EXCLUDED.checkpoint_id, node = EXCLUDED.node, kind = EXCLUDED.kind, name = EXCLUDED.name, data = EXCLUDED.data, created_at = EXCLUDED.created_at`,
      [row.thread_id, row.checkpoint_id, row.task_path, row.call_index, row.node, row.kind, row.name, row.data, row.created_at],
    );
  }
}

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

/** The repositories of queued runs, and their workspaces' state (see repo-workspaces.ts). */
export class PostgresRepoWorkspaces implements RepoWorkspaceTable {
  constructor(private readonly pool: pg.Pool) {}

  async create(threadId: string, source: RepoSource): Promise<void> {
    await this.pool.query(`INSERT INTO loopgraph_repo_workspaces (thread_id, repo, ref, commit, updated_at) VALUES ($1, $2, $3, $4, $5)`, [
      threadId,
      source.repo,
      source.ref,
      source.commit,
      new Date().toISOString(),
    ]);
  }

  async get(threadId: string): Promise<RepoWorkspaceRecord | undefined> {
    const { rows } = await this.pool.query<{
      repo: string;
      ref: string;
      commit: string;
      base_tree: string | null;
      tree: string | null;
      patch: Buffer | null;
      result: string | null;
    }>(`SELECT repo, ref, commit, base_tree, tree, patch, result FROM loopgraph_repo_workspaces WHERE thread_id = $1`, [threadId]);
    const row = rows[0];
    if (!row) return undefined;
    return {
      threadId,
      repo: row.repo,
      ref: row.ref,
      commit: row.commit,
      ...(row.base_tree ? { baseTree: row.base_tree } : {}),
      ...(row.tree ? { tree: row.tree } : {}),
      ...(row.patch ? { patch: row.patch } : {}),
      ...(row.result ? { result: JSON.parse(row.result) as RepoResult } : {}),
    };
  }

  async saveProgress(threadId: string, state: { baseTree: string; tree: string; patch: Buffer }): Promise<void> {
    await this.pool.query(
      `UPDATE loopgraph_repo_workspaces SET base_tree = $2, tree = $3, patch = $4, result = NULL, updated_at = $5 WHERE thread_id = $1`,
      [threadId, state.baseTree, state.tree, state.patch, new Date().toISOString()],
    );
  }

  async saveResult(threadId: string, result: RepoResult): Promise<void> {
    await this.pool.query(`UPDATE loopgraph_repo_workspaces SET result = $2, updated_at = $3 WHERE thread_id = $1`, [
      threadId,
      JSON.stringify(result),
      new Date().toISOString(),
    ]);
  }
}

/** The ids starting with `prefix`: a range of the key (ids are ASCII; U+FFFF sorts above them), then an exact match. */
const PREFIX_RANGE =
  "checkpoint_id >= $2::text AND checkpoint_id < ($2::text || chr(65535)) AND left(checkpoint_id, length($2::text)) = $2::text";

/** Narrow reads of a PostgreSQL store's checkpoints (see CheckpointQueries), on the saver's tables. */
export class PostgresCheckpointQueries implements CheckpointQueries {
  constructor(private readonly pool: pg.Pool) {}

  async latestCheckpointId(threadId: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ id: string }>(
      `SELECT checkpoint_id AS id FROM loopgraph_checkpoints WHERE thread_id = $1 AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1`,
      [threadId],
    );
    return rows[0]?.id;
  }

  async plainChannels(threadId: string, channels: readonly string[], checkpointId?: string): Promise<Record<string, unknown>> {
    // One statement: the checkpoint's versions of the channels, and their rows.
    const { rows } = await this.pool.query<{ channel: string; type: string | null; data: Buffer | null; ranges: string | null }>(
      `WITH cp AS (
         SELECT channel_versions FROM loopgraph_checkpoints
         WHERE thread_id = $1 AND checkpoint_ns = '' AND ($2::text IS NULL OR checkpoint_id = $2)
         ORDER BY checkpoint_id DESC LIMIT 1
       )
       SELECT cv.channel, b.type, b.data, b.ranges
       FROM cp CROSS JOIN LATERAL json_each_text(cp.channel_versions::json) AS cv(channel, version)
       LEFT JOIN loopgraph_checkpoint_blobs b ON b.thread_id = $1 AND b.checkpoint_ns = '' AND b.channel = cv.channel AND b.version = cv.version
       WHERE cv.channel = ANY($3::text[])`,
      [threadId, checkpointId ?? null, [...channels]],
    );
    const values: Record<string, unknown> = {};
    for (const row of rows) {
      if (row.type === null) continue;
      if (row.type !== "json" || row.data === null) {
        throw new Error(
          `channel "${row.channel}" of thread "${threadId}" is not stored as a plain JSON value (${row.type}): read it through the saver`,
        );
      }
      values[row.channel] = JSON.parse(row.data.toString("utf8"));
    }
    return values;
  }

  async checkpointsWithPrefix(threadId: string, prefix: string): Promise<CheckpointAddress[]> {
    const { rows } = await this.pool.query<CheckpointAddress>(
      `SELECT checkpoint_ns AS ns, checkpoint_id AS id FROM loopgraph_checkpoints WHERE thread_id = $1 AND ${PREFIX_RANGE} ORDER BY checkpoint_id`,
      [threadId, prefix],
    );
    return rows;
  }

  async rootCheckpointIdsWithPrefix(threadId: string, prefix: string, limit: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      `SELECT checkpoint_id AS id FROM loopgraph_checkpoints WHERE thread_id = $1 AND checkpoint_ns = '' AND ${PREFIX_RANGE} ORDER BY checkpoint_id LIMIT $3`,
      [threadId, prefix, limit],
    );
    return rows.map((row) => row.id);
  }

  async rootCheckpointCounts(): Promise<Map<string, number>> {
    const { rows } = await this.pool.query<{ thread_id: string; n: string }>(
      `SELECT thread_id, COUNT(*) AS n FROM loopgraph_checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id`,
    );
    return new Map(rows.map((row) => [row.thread_id, Number(row.n)]));
  }

  async allCheckpointIds(threadId: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(`SELECT checkpoint_id AS id FROM loopgraph_checkpoints WHERE thread_id = $1`, [
      threadId,
    ]);
    return rows.map((row) => row.id);
  }

  async parentLinks(threadId: string, ns: string): Promise<Map<string, string | undefined>> {
    const { rows } = await this.pool.query<{ id: string; parent: string | null }>(
      `SELECT checkpoint_id AS id, parent_checkpoint_id AS parent FROM loopgraph_checkpoints WHERE thread_id = $1 AND checkpoint_ns = $2`,
      [threadId, ns],
    );
    return new Map(rows.map((row) => [row.id, row.parent ?? undefined]));
  }
}
