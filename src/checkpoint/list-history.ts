import { sameEncoding, type EncodedItem } from "./item-framing.js";

/**
 * How each version of a list channel is stored.
 *
 * Since store version 3: every item once, in the channel's item log (a sequence of items, stored
 * in chunks that are merged as they accumulate, so a read fetches few rows); a version row holds
 * the log ranges of its items (`ListPlan`, `SeqRange`). An item replaced or removed ends a range;
 * items added are appended to the log (or referenced where the saver stored them already, as a
 * pending write). The row kinds below are those of earlier stores, still read:
 *
 * - `snapshot`: all items.
 * - `delta`: the first `keep` items of the previous version written, then `items`.
 * - `rollup`: the first `keep` items of the previous snapshot or rollup (the "anchor"), then
 *   everything since. Written instead of a delta once ROLLUP_INTERVAL versions chain since
 *   the anchor, so a read walks at most that many deltas, then one rollup per interval.
 *
 * Keeping fewer items than the base had is how items replaced (a message with the same id) or
 * removed are stored; a version sharing no prefix with its base is a new snapshot.
 *
 * Each item lands in about two rows (its delta and one rollup), so storage grows linearly
 * with history. Periodic full snapshots would not: they copy the whole list every K
 * versions, which is quadratic.
 */
export type ListRow =
  | { readonly kind: "snapshot"; readonly items: readonly EncodedItem[] }
  | {
      readonly kind: "delta" | "rollup";
      readonly baseVersion: string;
      readonly keep: number;
      readonly items: readonly EncodedItem[];
    };

/** A half-open range [start, end) of sequence numbers in a list channel's item log. */
export type SeqRange = readonly [start: number, end: number];

/** What the saver knows about a stored version of a list channel, to diff the next one against. */
export interface StoredList {
  readonly version: string;
  readonly encoded: readonly EncodedItem[];
  /** The values written (when this saver wrote the version): compared by identity before any encoding. */
  readonly values?: readonly unknown[];
  /** Where the items are in the channel's item log; absent for versions of the earlier formats. */
  readonly ranges?: readonly SeqRange[];
}

/** Where a new item of a list write comes from: an item already in the log, or appended now. */
export type TailItem =
  | { readonly seq: number; readonly encoded: EncodedItem }
  /** An item to append: as `stored` when given (a reference to the item at `target`, see item-refs.ts), else as `encoded`. */
  | {
      readonly seq?: undefined;
      readonly encoded: EncodedItem;
      readonly stored?: EncodedItem;
      readonly target?: { readonly channel: string; readonly seq: number };
    };

/**
 * A list version to write in the item log's format: the first `keep` items of `base` (by their
 * log ranges), then `tail`. Every item is stored once, in the log; a version row holds ranges.
 */
export interface ListPlan {
  readonly version: string;
  readonly encoded: readonly EncodedItem[];
  readonly values: readonly unknown[];
  /** The base version the kept items are taken from, when `keep` > 0. */
  readonly baseVersion?: string;
  readonly keepRanges: readonly SeqRange[];
  readonly tail: readonly TailItem[];
}

/** How many items `ranges` cover. */
export function rangesLength(ranges: readonly SeqRange[]): number {
  let length = 0;
  for (const [start, end] of ranges) length += end - start;
  return length;
}

/** The ranges of the first `keep` items. */
export function truncateRanges(ranges: readonly SeqRange[], keep: number): SeqRange[] {
  const kept: SeqRange[] = [];
  let left = keep;
  for (const [start, end] of ranges) {
    if (left <= 0) break;
    const take = Math.min(left, end - start);
    kept.push([start, start + take]);
    left -= take;
  }
  return kept;
}

/** The ranges of the items after the first `skip`. */
export function dropRanges(ranges: readonly SeqRange[], skip: number): SeqRange[] {
  const rest: SeqRange[] = [];
  let left = skip;
  for (const [start, end] of ranges) {
    if (left >= end - start) {
      left -= end - start;
      continue;
    }
    rest.push([start + left, end]);
    left = 0;
  }
  return rest;
}

/** How many leading items two lists of log positions have at the same positions. */
export function sharedSeqPrefix(a: readonly SeqRange[], b: readonly SeqRange[]): number {
  let shared = 0;
  for (let i = 0; i < a.length && i < b.length; i++) {
    const [startA, endA] = a[i]!;
    const [startB, endB] = b[i]!;
    if (startA !== startB) break;
    shared += Math.min(endA, endB) - startA;
    if (endA !== endB) break;
  }
  return shared;
}

/** Appends one item's sequence number, extending the last range when it follows on. */
export function pushSeq(ranges: SeqRange[], seq: number): void {
  const last = ranges[ranges.length - 1];
  if (last && last[1] === seq) ranges[ranges.length - 1] = [last[0], seq + 1];
  else ranges.push([seq, seq + 1]);
}

/** Ranges as stored in a version row: JSON `[[start, end], ...]`. */
export function encodeRanges(ranges: readonly SeqRange[]): Uint8Array {
  return Buffer.from(JSON.stringify(ranges), "utf8");
}

export function decodeRanges(data: Uint8Array): SeqRange[] {
  return JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("utf8")) as SeqRange[];
}

/**
 * How many leading items `values` holds of the values last written as `previous` (strings and
 * numbers by value, objects by identity): those need no encoding to be compared.
 */
export function identicalPrefix(values: readonly unknown[], previous: StoredList | undefined): number {
  const previousValues = previous?.values;
  if (!previousValues) return 0;
  const comparable = Math.min(values.length, previousValues.length, previous.encoded.length);
  let identical = 0;
  while (identical < comparable && previousValues[identical] === values[identical]) identical += 1;
  return identical;
}

/**
 * Counts the leading items `values` shares with `previous`: the first `identical` (see
 * `identicalPrefix`) as they are, the next by identity where the previous values are known,
 * by their encoding otherwise (`encode` is called only for items from `identical` on).
 */
export function sharedPrefix(
  values: readonly unknown[],
  previous: StoredList | undefined,
  encode: (value: unknown) => EncodedItem,
  identical = identicalPrefix(values, previous),
): { shared: number; encoded: EncodedItem[] } {
  if (!previous) return { shared: 0, encoded: [] };
  const encoded = previous.encoded.slice(0, identical);
  const comparable = Math.min(values.length, previous.encoded.length);
  const previousValues = previous.values;
  let shared = identical;
  while (shared < comparable) {
    const value = values[shared];
    const before = previous.encoded[shared]!;
    if (previousValues && previousValues[shared] === value) {
      encoded.push(before);
    } else {
      const current = encode(value);
      if (!sameEncoding(current, before)) break;
      encoded.push(before);
    }
    shared += 1;
  }
  return { shared, encoded };
}

/** A stored list version, as read back along a base chain. */
export interface ChainLink {
  readonly version: string;
  readonly record: ListRow;
}

export function isListRow(record: { readonly kind: string }): record is ListRow {
  return record.kind === "snapshot" || record.kind === "delta" || record.kind === "rollup";
}

/** Rebuilds a version's items from its chain (the version's row first, then its base, and so on down to a snapshot). */
export function materializeList(chain: readonly ChainLink[]): StoredList {
  const target = chain[0];
  const root = chain[chain.length - 1];
  if (!target || root?.record.kind !== "snapshot") {
    throw new Error(`List history for version ${target?.version ?? "?"} is broken: its chain does not reach a snapshot`);
  }
  let items: readonly EncodedItem[] = root.record.items;
  for (let i = chain.length - 2; i >= 0; i -= 1) {
    const record = chain[i]!.record;
    items = record.kind === "snapshot" ? record.items : items.slice(0, record.keep).concat(record.items);
  }
  return { version: target.version, encoded: items };
}
