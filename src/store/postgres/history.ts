/**
 * The reads of a history walk on PostgreSQL (see HistoryReader): a page of a thread's checkpoints
 * without their values, the rows of the channel versions a page brings, in one statement, the
 * items those list versions add, in one more, and the items of a list version's ranges.
 */
import { ERROR } from "@langchain/langgraph-checkpoint";
import type pg from "pg";
import type { HistoryRow } from "../../checkpoint/history-reader.js";
import type { EncodedItem } from "../../checkpoint/item-framing.js";
import { pushSeq, type SeqRange } from "../../checkpoint/list-history.js";
import type { ThreadNamespace } from "../../checkpoint/saver-common.js";
import { readVersions, versionsChain } from "./versions.js";
import { REF_TARGET_JOIN, resolvedItem } from "./item-logs.js";
import { unpacked } from "./packing.js";
import { blobKey, resolvedRows, type BlobRow } from "./value-batch.js";

/** Up to `limit` of the thread's checkpoints in its namespace after `after` (an id; "" for the first), oldest first. */
export async function historyPage(pool: pg.Pool, at: ThreadNamespace, after: string, limit: number): Promise<HistoryRow[]> {
  const { rows } = await pool.query<HistoryRow & { failed: boolean; version_chain: string }>(
    `SELECT c.checkpoint_id, c.parent_checkpoint_id, c.checkpoint_type, c.checkpoint, c.channel_versions, c.metadata_type, c.metadata,
            ${versionsChain("c", "$1", "$2")} AS version_chain,
            EXISTS (SELECT 1 FROM loopgraph_checkpoint_writes w
                    WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns
                      AND w.checkpoint_id = c.checkpoint_id AND w.channel = $4) AS failed
     FROM loopgraph_checkpoints c
     WHERE c.thread_id = $1 AND c.checkpoint_ns = $2 AND c.checkpoint_id > $3 ORDER BY c.checkpoint_id LIMIT $5`,
    [at.threadId, at.ns, after, ERROR, limit],
  );
  return rows.map(({ version_chain, ...row }) => {
    const [checkpointType, checkpoint] = unpacked(row.checkpoint_type, Buffer.from(row.checkpoint));
    const [metadataType, metadata] = unpacked(row.metadata_type, Buffer.from(row.metadata));
    return {
      ...row,
      checkpoint_type: checkpointType,
      checkpoint,
      metadata_type: metadataType,
      metadata,
      channel_versions: JSON.stringify(readVersions(version_chain)),
    };
  });
}

/**
 * The channel versions `pairs` names that hold a value, by `blobKey`: the rows at their versions,
 * one statement, each channel's value found in them (see value-batch.ts).
 */
export async function blobRows(pool: pg.Pool, at: ThreadNamespace, pairs: readonly [string, string][]): Promise<Map<string, BlobRow>> {
  if (pairs.length === 0) return new Map();
  const { rows } = await pool.query<BlobRow>(
    `SELECT channel, version, type, data, ranges FROM loopgraph_checkpoint_blobs
     WHERE thread_id = $1 AND checkpoint_ns = $2 AND version = ANY($3::text[])`,
    [at.threadId, at.ns, [...new Set(pairs.map(([, version]) => version))]],
  );
  const resolved = resolvedRows(rows);
  const wanted = new Map<string, BlobRow>();
  for (const [channel, version] of pairs) {
    const row = resolved.get(blobKey(channel, version));
    if (row) wanted.set(blobKey(channel, version), row);
  }
  return wanted;
}

/** An item as read, with the item it refers to when it is a reference (see item-logs.ts). */
interface ItemRow {
  type: string;
  data: Buffer;
  target_type: string | null;
  target_data: Buffer | null;
}

/** The items at `ranges` of the channel's item log, in order. */
export async function logItems(pool: pg.Pool, at: ThreadNamespace, channel: string, ranges: readonly SeqRange[]): Promise<EncodedItem[]> {
  if (ranges.length === 0) return [];
  const { rows } = await pool.query<ItemRow>(
    `SELECT i.type, i.data, t.type AS target_type, t.data AS target_data
     FROM json_array_elements($4::json) WITH ORDINALITY AS r(span, ord)
     JOIN loopgraph_checkpoint_items i
       ON i.thread_id = $1 AND i.checkpoint_ns = $2 AND i.channel = $3
      AND i.seq >= (r.span->>0)::integer AND i.seq < (r.span->>1)::integer
     ${REF_TARGET_JOIN}
     ORDER BY r.ord, i.seq`,
    [at.threadId, at.ns, channel, JSON.stringify(ranges)],
  );
  return rows.map((row) => resolvedItem(row.type, row.data, row.target_type, row.target_data));
}

/** Items of item logs already read in a history walk, per channel, by position. */
export type KnownItems = Map<string, Map<number, EncodedItem>>;

/**
 * Reads, in one statement, the items of the list versions in `rows` that `known` does not hold
 * yet, and adds them to it: a page's list versions then cost no statement each.
 */
export async function prefetchItems(
  pool: pg.Pool,
  at: ThreadNamespace,
  rows: Iterable<BlobRow>,
  listType: string,
  known: KnownItems,
): Promise<void> {
  const needed = new Map<string, Set<number>>();
  for (const row of rows) {
    if (row.type !== listType || row.ranges === null) continue;
    const have = known.get(row.channel);
    let seqs = needed.get(row.channel);
    for (const [start, end] of JSON.parse(row.ranges) as SeqRange[]) {
      for (let seq = start; seq < end; seq++) {
        if (have?.has(seq)) continue;
        if (!seqs) needed.set(row.channel, (seqs = new Set()));
        seqs.add(seq);
      }
    }
  }
  const missing = [...needed].flatMap(([channel, seqs]) =>
    intervalsOf([...seqs].sort((a, b) => a - b)).map(([lo, hi]) => ({ channel, lo, hi })),
  );
  if (missing.length === 0) return;
  const { rows: items } = await pool.query<ItemRow & { channel: string; seq: number }>(
    `SELECT i.channel, i.seq, i.type, i.data, t.type AS target_type, t.data AS target_data
     FROM json_to_recordset($3::json) AS r(channel text, lo integer, hi integer)
     JOIN loopgraph_checkpoint_items i
       ON i.thread_id = $1 AND i.checkpoint_ns = $2 AND i.channel = r.channel AND i.seq >= r.lo AND i.seq < r.hi
     ${REF_TARGET_JOIN}`,
    [at.threadId, at.ns, JSON.stringify(missing)],
  );
  for (const item of items) {
    let byChannel = known.get(item.channel);
    if (!byChannel) known.set(item.channel, (byChannel = new Map()));
    byChannel.set(item.seq, resolvedItem(item.type, item.data, item.target_type, item.target_data));
  }
}

/** The items at `ranges` of the channel, when `known` holds every one of them. */
export function knownItems(known: KnownItems | undefined, channel: string, ranges: readonly SeqRange[]): EncodedItem[] | undefined {
  const have = known?.get(channel);
  if (!have) return undefined;
  const items: EncodedItem[] = [];
  for (const [start, end] of ranges) {
    for (let seq = start; seq < end; seq++) {
      const item = have.get(seq);
      if (!item) return undefined;
      items.push(item);
    }
  }
  return items;
}

/** Sorted positions as [start, end) intervals. */
function intervalsOf(sorted: readonly number[]): SeqRange[] {
  const intervals: SeqRange[] = [];
  for (const seq of sorted) pushSeq(intervals, seq);
  return intervals;
}
