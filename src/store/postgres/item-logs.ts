/**
 * Items stored once for a pending write, the graph input and the list that takes them in, on
 * PostgreSQL (the SQLite saver does the same in its own tables).
 *
 * An array of objects a task writes to a channel (a node's new messages), and such an array in
 * the graph input (`__start__`), go to an item log of their own, `__writes__:<channel>`: the
 * write's row holds the array's spans there (LOG_REFS_TYPE), the input's row its other
 * properties and each array's spans (OBJECT_REFS_TYPE). A message given as input and written by
 * the start task is so stored once for both. When the list channel takes the message in, its
 * log holds a reference to the logged item and the bytes that differ (src/checkpoint/item-refs.ts:
 * the messages reducer gives a message without an id one on the way).
 */
import type pg from "pg";
import type { EncodedItem } from "../../checkpoint/item-framing.js";
import { applyItemRef, ITEM_REF_TYPE, parseItemRef } from "../../checkpoint/item-refs.js";
import type { ThreadNamespace } from "../../checkpoint/saver-common.js";
import { asBuffer, compressed, decompressed, packed, unpacked } from "./packing.js";

/** The prefix of the item logs of pending writes and inputs (LangGraph reserves names starting with "__": no channel has one). */
export const WRITES_LOG_PREFIX = "__writes__:";
/** A pending write's array, as the spans of its items (data: JSON `LogSpan[]`). */
export const LOG_REFS_TYPE = "loopgraph:log-refs";
/** A graph input whose arrays are stored as spans of item logs (data: JSON `ObjectRefs`). */
export const OBJECT_REFS_TYPE = "loopgraph:object-refs";

/** Items [start, end) of an item log of the thread namespace. */
export type LogSpan = [channel: string, start: number, end: number];

export interface ObjectRefs {
  /** The input without the properties in `props`, as JSON. */
  rest: string;
  props: Record<string, LogSpan[]>;
}

/** The first byte of an ObjectRefs row's data compressed (schema 4; JSON, stored as it is before, never starts with it). */
const COMPRESSED_REFS = 0;

/** An input's ObjectRefs as its row's data: the JSON, compressed (packing.ts) behind COMPRESSED_REFS when that is smaller. */
export function objectRefsBytes(refs: ObjectRefs): Buffer {
  const json = Buffer.from(JSON.stringify(refs), "utf8");
  const bytes = compressed(json);
  return bytes.length + 1 < json.length ? Buffer.concat([Buffer.from([COMPRESSED_REFS]), bytes]) : json;
}

/** The ObjectRefs of an input's row data (see `objectRefsBytes`). */
export function parseObjectRefs(data: Buffer): ObjectRefs {
  const json = data[0] === COMPRESSED_REFS ? decompressed(data.subarray(1)) : data;
  return JSON.parse(json.toString("utf8")) as ObjectRefs;
}

/** Appends `seq` of `channel` to `spans`, extending the last span when it follows on. */
export function pushSpan(spans: LogSpan[], channel: string, seq: number): void {
  const last = spans[spans.length - 1];
  if (last && last[0] === channel && last[2] === seq) last[2] = seq + 1;
  else spans.push([channel, seq, seq + 1]);
}

/**
 * SQL: joins each item row `i` that is a reference (ITEM_REF_TYPE) to the item it refers to, as
 * `t` (its channel and position are the JSON header before the reference's first newline).
 */
export const REF_TARGET_JOIN = `LEFT JOIN LATERAL (
  SELECT CASE WHEN i.type = '${ITEM_REF_TYPE}'
    THEN convert_from(substring(i.data FROM 1 FOR position('\\x0a'::bytea IN i.data) - 1), 'UTF8')::json END AS h
) ref ON true
LEFT JOIN loopgraph_checkpoint_items t
  ON ref.h IS NOT NULL AND t.thread_id = i.thread_id AND t.checkpoint_ns = i.checkpoint_ns
 AND t.channel = ref.h->>0 AND t.seq = (ref.h->>1)::integer`;

/** An item as read with REF_TARGET_JOIN (`t.type`, `t.data` as the target's): a reference put back together. */
export function resolvedItem(type: string, data: Buffer, targetType: string | null, targetData: Buffer | null): EncodedItem {
  if (type !== ITEM_REF_TYPE) return storedItem(type, data);
  const ref = parseItemRef(data);
  if (targetType === null || targetData === null) {
    throw new Error(`an item of the checkpoint store refers to item ${ref.seq} of log "${ref.channel}", which is gone`);
  }
  return applyItemRef(ref, storedItem(targetType, targetData));
}

/** An item as stored (see packing.ts), as it was written. */
function storedItem(type: string, data: Buffer): EncodedItem {
  const [itemType, bytes] = unpacked(type, data);
  return { type: itemType, bytes };
}

/** The items of `spans`, in order, read in one statement. */
export async function spanItems(pool: pg.Pool, at: ThreadNamespace, spans: readonly LogSpan[]): Promise<EncodedItem[]> {
  if (spans.length === 0) return [];
  const { rows } = await pool.query<{ type: string; data: Buffer }>(
    `SELECT i.type, i.data
     FROM json_array_elements($3::json) WITH ORDINALITY AS r(span, ord)
     JOIN loopgraph_checkpoint_items i
       ON i.thread_id = $1 AND i.checkpoint_ns = $2 AND i.channel = r.span->>0
      AND i.seq >= (r.span->>1)::integer AND i.seq < (r.span->>2)::integer
     ORDER BY r.ord, i.seq`,
    [at.threadId, at.ns, JSON.stringify(spans)],
  );
  const expected = spans.reduce((sum, [, start, end]) => sum + end - start, 0);
  if (rows.length !== expected) throw new Error(`a pending write or input of thread "${at.threadId}" refers to logged items that are gone`);
  return rows.map((row) => storedItem(row.type, row.data));
}

/** The JSON array of JSON items: what the serde writes for the array they are the items of. */
export function jsonArrayOf(items: readonly EncodedItem[]): Buffer {
  const parts: Buffer[] = [Buffer.from("[")];
  items.forEach((item, i) => {
    if (i > 0) parts.push(Buffer.from(","));
    parts.push(Buffer.from(item.bytes.buffer, item.bytes.byteOffset, item.bytes.byteLength));
  });
  parts.push(Buffer.from("]"));
  return Buffer.concat(parts);
}

/** Items to append to item logs in a write statement, column by column (for `unnest`; see `insertItemsSql`). */
export class ItemRows {
  readonly channels: string[] = [];
  readonly seqs: number[] = [];
  readonly types: string[] = [];
  readonly data: Buffer[] = [];
  readonly refChannels: (string | null)[] = [];
  readonly refSeqs: (number | null)[] = [];
  readonly wholes: (Buffer | null)[] = [];

  /**
   * An item at `seq` of `channel`'s log: `stored` is a reference to the item at `target` when
   * given, stored whole (`item`, JSON) instead where that item is gone.
   */
  push(
    channel: string,
    seq: number,
    item: EncodedItem,
    reference?: { stored: EncodedItem; target: { channel: string; seq: number } },
  ): void {
    // A reference is not compressed: SQL reads its header.
    const [type, data] = reference ? [reference.stored.type, asBuffer(reference.stored.bytes)] : packed(item.type, item.bytes);
    this.channels.push(channel);
    this.seqs.push(seq);
    this.types.push(type);
    this.data.push(data);
    this.refChannels.push(reference?.target.channel ?? null);
    this.refSeqs.push(reference?.target.seq ?? null);
    this.wholes.push(reference ? asBuffer(item.bytes) : null);
  }

  /** The parameters `insertItemsSql(first)` reads, from `$first` on. */
  params(): unknown[] {
    return [this.channels, this.seqs, this.types, this.data, this.refChannels, this.refSeqs, this.wholes];
  }
}

/**
 * SQL: the CTE `items` that appends the items of an ItemRows (parameters `$first` to `$first+6`;
 * `$1`, `$2` the thread and namespace). A reference whose target is gone (another process deleted
 * the thread) is stored as the whole item.
 */
export function insertItemsSql(first: number): string {
  const p = (offset: number) => `$${first + offset}`;
  return `items AS (
    INSERT INTO loopgraph_checkpoint_items (thread_id, checkpoint_ns, channel, seq, type, data)
    SELECT $1, $2, n.channel, n.seq,
           CASE WHEN n.ref_channel IS NULL OR t.seq IS NOT NULL THEN n.type ELSE 'json' END,
           CASE WHEN n.ref_channel IS NULL OR t.seq IS NOT NULL THEN n.data ELSE n.whole END
    FROM unnest(${p(0)}::text[], ${p(1)}::integer[], ${p(2)}::text[], ${p(3)}::bytea[], ${p(4)}::text[], ${p(5)}::integer[], ${p(6)}::bytea[])
      AS n(channel, seq, type, data, ref_channel, ref_seq, whole)
    LEFT JOIN loopgraph_checkpoint_items t
      ON t.thread_id = $1 AND t.checkpoint_ns = $2 AND t.channel = n.ref_channel AND t.seq = n.ref_seq
  )`;
}
