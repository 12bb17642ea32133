import type { EncodedItem } from "./item-framing.js";

/**
 * A list item stored as a reference to an item of another log of its thread namespace (a
 * pending write's, see the saver's `__writes__:` logs), with the bytes that differ: a message a
 * node wrote is logged once as written, and the list that takes it in (LangGraph's messages
 * reducer gives it an id on the way) stores only the difference.
 *
 * Its bytes: the JSON header `[channel, seq, prefix, suffix]`, a newline, then the inserted
 * bytes. The item is the target's first `prefix` bytes, the inserted bytes, and the target's last
 * `suffix` bytes. Only JSON items are referred to (their text never holds a raw newline).
 */
export const ITEM_REF_TYPE = "lg:ref";

/** A reference's bytes past its header stay under this share of the item's: else the item is stored whole. */
const MAX_INSERTED_SHARE = 0.5;

export interface ItemRef {
  readonly channel: string;
  readonly seq: number;
  readonly prefix: number;
  readonly suffix: number;
  readonly inserted: Uint8Array;
}

/** `item` as a reference to `target` (the item at `seq` of log `channel`), or undefined when it is not worth one. */
export function makeItemRef(channel: string, seq: number, target: EncodedItem, item: EncodedItem): EncodedItem | undefined {
  if (target.type !== "json" || item.type !== "json") return undefined;
  const a = target.bytes;
  const b = item.bytes;
  let prefix = 0;
  const most = Math.min(a.length, b.length);
  while (prefix < most && a[prefix] === b[prefix]) prefix += 1;
  let suffix = 0;
  while (suffix < most - prefix && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix += 1;
  const inserted = b.subarray(prefix, b.length - suffix);
  if (inserted.length > b.length * MAX_INSERTED_SHARE) return undefined;
  const header = Buffer.from(`${JSON.stringify([channel, seq, prefix, suffix])}\n`, "utf8");
  return { type: ITEM_REF_TYPE, bytes: Buffer.concat([header, inserted]) };
}

export function parseItemRef(bytes: Uint8Array): ItemRef {
  const newline = bytes.indexOf(0x0a);
  const [channel, seq, prefix, suffix] = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, newline).toString("utf8")) as [
    string,
    number,
    number,
    number,
  ];
  return { channel, seq, prefix, suffix, inserted: bytes.subarray(newline + 1) };
}

/** The item a reference stands for, given its target's bytes. */
export function applyItemRef(ref: ItemRef, target: EncodedItem): EncodedItem {
  const bytes = target.bytes;
  return {
    type: target.type,
    bytes: Buffer.concat([bytes.subarray(0, ref.prefix), ref.inserted, bytes.subarray(bytes.length - ref.suffix)]),
  };
}
