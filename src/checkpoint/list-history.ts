import { sameEncoding, type EncodedItem } from "./item-framing.js";

/**
 * How each version of a list channel is stored.
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

const ROLLUP_INTERVAL = 32;

/** What the writer knows about a stored version of a list channel, to diff the next one against. */
export interface StoredList {
  readonly version: string;
  readonly encoded: readonly EncodedItem[];
  readonly deltasSinceAnchor: number;
  readonly anchorVersion: string;
  /** How many leading items this version is known to share with the anchor's. */
  readonly sharedWithAnchor: number;
}

export interface EncodedList {
  readonly encoded: readonly EncodedItem[];
  /** Leading items equal to the previous version's. */
  readonly sharedPrefix: number;
}

/** Encodes a list channel's new value and counts the leading items it shares with `previous`. */
export async function encodeList(
  values: readonly unknown[],
  previous: StoredList | undefined,
  encode: (value: unknown) => EncodedItem | Promise<EncodedItem>,
): Promise<EncodedList> {
  const encoded = await Promise.all(values.map(encode));
  const comparable = Math.min(encoded.length, previous?.encoded.length ?? 0);
  let sharedPrefix = 0;
  while (sharedPrefix < comparable && sameEncoding(encoded[sharedPrefix]!, previous!.encoded[sharedPrefix]!)) {
    sharedPrefix += 1;
  }
  return { encoded, sharedPrefix };
}

export interface ListWrite {
  readonly record: ListRow;
  readonly stored: StoredList;
}

/** State after writing an anchor (a snapshot or rollup): the next deltas chain from it. */
function anchorState(version: string, list: EncodedList): StoredList {
  return {
    version,
    encoded: list.encoded,
    deltasSinceAnchor: 0,
    anchorVersion: version,
    sharedWithAnchor: list.encoded.length,
  };
}

export function snapshotWrite(version: string, list: EncodedList): ListWrite {
  return { record: { kind: "snapshot", items: list.encoded }, stored: anchorState(version, list) };
}

/** The smallest row for `list` given the previous version written; that base must still exist. */
export function chooseListWrite(previous: StoredList | undefined, version: string, list: EncodedList): ListWrite {
  if (!previous || list.sharedPrefix === 0) return snapshotWrite(version, list);
  if (previous.deltasSinceAnchor + 1 >= ROLLUP_INTERVAL) {
    const keep = Math.min(previous.sharedWithAnchor, list.sharedPrefix);
    if (keep === 0) return snapshotWrite(version, list);
    return {
      record: { kind: "rollup", baseVersion: previous.anchorVersion, keep, items: list.encoded.slice(keep) },
      stored: anchorState(version, list),
    };
  }
  return {
    record: {
      kind: "delta",
      baseVersion: previous.version,
      keep: list.sharedPrefix,
      items: list.encoded.slice(list.sharedPrefix),
    },
    stored: {
      version,
      encoded: list.encoded,
      deltasSinceAnchor: previous.deltasSinceAnchor + 1,
      anchorVersion: previous.anchorVersion,
      sharedWithAnchor: Math.min(previous.sharedWithAnchor, list.sharedPrefix),
    },
  };
}

/** A stored list version, as read back along a base chain. */
export interface ChainLink {
  readonly version: string;
  readonly record: ListRow;
}

export function isListRow(record: { readonly kind: string }): record is ListRow {
  return record.kind === "snapshot" || record.kind === "delta" || record.kind === "rollup";
}

/**
 * Rebuilds a version's items from its chain (the version's row first, then its base, and so on
 * down to a snapshot), and what the writer needs to diff the next version against it.
 */
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
  let deltasSinceAnchor = 0;
  let sharedWithAnchor = items.length;
  for (const link of chain) {
    if (link.record.kind !== "delta") break;
    deltasSinceAnchor += 1;
    sharedWithAnchor = Math.min(sharedWithAnchor, link.record.keep);
  }
  return {
    version: target.version,
    encoded: items,
    deltasSinceAnchor,
    anchorVersion: chain[deltasSinceAnchor]!.version,
    sharedWithAnchor,
  };
}
