import type pg from "pg";
import type { CheckpointAddress, CheckpointQueries } from "../../runs/checkpoint-ids.js";
import { unpacked } from "./packing.js";
import { blobKey, resolvedRows, type BlobRow } from "./value-batch.js";
import { CHANNEL_VERSIONS_CTE, versionsChain } from "./versions.js";

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
    // One statement: the checkpoint's versions of the channels (part 0), and the rows at those versions (part 1).
    const { rows } = await this.pool.query<BlobRow & { part: number }>(
      `WITH cp AS (
         SELECT ${versionsChain("c", "$1", "''")} AS version_chain FROM (
           SELECT * FROM loopgraph_checkpoints
           WHERE thread_id = $1 AND checkpoint_ns = '' AND ($2::text IS NULL OR checkpoint_id = $2)
           ORDER BY checkpoint_id DESC LIMIT 1
         ) c
       ), ${CHANNEL_VERSIONS_CTE}, wanted AS (SELECT channel, version FROM cv WHERE channel = ANY($3::text[]))
       SELECT 0 AS part, channel, version, NULL AS type, NULL::bytea AS data, NULL AS ranges FROM wanted
       UNION ALL
       SELECT 1, b.channel, b.version, b.type, b.data, b.ranges FROM loopgraph_checkpoint_blobs b
       WHERE b.thread_id = $1 AND b.checkpoint_ns = '' AND b.version IN (SELECT version FROM wanted)`,
      [threadId, checkpointId ?? null, [...channels]],
    );
    const stored = resolvedRows(rows.filter((row) => row.part === 1));
    const values: Record<string, unknown> = {};
    for (const { channel, version } of rows.filter((row) => row.part === 0)) {
      const row = stored.get(blobKey(channel, version));
      if (!row) continue;
      const [type, data] = row.data === null ? [row.type, null] : unpacked(row.type, row.data);
      if (type !== "json" || data === null) {
        throw new Error(
          `channel "${row.channel}" of thread "${threadId}" is not stored as a plain JSON value (${type}): read it through the saver`,
        );
      }
      values[row.channel] = JSON.parse(data.toString("utf8"));
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
