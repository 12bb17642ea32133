/**
 * The values a checkpoint stores at one version, in one row of `loopgraph_checkpoint_blobs`.
 * LangGraph gives every channel a step updates the same new version, so the row's key
 * (thread, namespace, version, channel) finds a step's rows together. A row costs its key in the
 * table and again in its index, more than a small value (`branch:to:X = null`, a counter) holds;
 * values compressed together also take less than each on its own. So the values of a version go
 * in the `data` of its list row (a list version's row has no data of its own), else in one row of
 * type VALUES_TYPE keyed by the first of them; a value alone at its version keeps a row of its
 * own. A reader takes every row at the versions it wants and finds each channel's value in them
 * (`resolvedRows`).
 */
import { inflateRawSync } from "node:zlib";
import { frameItems, unframeItems } from "../../checkpoint/item-framing.js";
import { asBuffer, compressed, decompressed } from "./packing.js";

/** The type of a row holding the values of several channels at its version (data: see `batchBytes`). */
export const VALUES_TYPE = "lg:values";
/** VALUES_TYPE as rows of schema 3 and before name it. */
const LEGACY_VALUES_TYPE = "loopgraph:values";
/** Whether a row's type is VALUES_TYPE (of any schema). */
const isValues = (type: string): boolean => type === VALUES_TYPE || type === LEGACY_VALUES_TYPE;
/** The type of a list version's row: its items are in the item log, at `ranges`. */
export const ITEMS_TYPE = "lg:items";

/** A channel version's row: a value (`data`), or a list version (`ranges` of the item log). */
export interface BlobRow {
  channel: string;
  version: string;
  type: string;
  data: Buffer | null;
  ranges: string | null;
}

/** A value to store, as the serde wrote it. */
export interface ChannelValue {
  readonly channel: string;
  readonly type: string;
  readonly data: Uint8Array;
}

const RAW = 0;
/** Raw DEFLATE (rows of schema 3). */
const DEFLATED = 1;
/** Raw DEFLATE primed with the dictionary of packing.ts. */
const DICTIONARY_DEFLATED = 2;

/** The key of a channel version in the map `resolvedRows` gives. */
export const blobKey = (channel: string, version: string): string => `${channel}\u0000${version}`;

/**
 * Several values as one row's data: a byte saying whether the rest is compressed (see
 * packing.ts; kept when smaller), then the framed channel names (JSON) and values.
 */
export function batchBytes(values: readonly ChannelValue[]): Buffer {
  const names = { type: "json", bytes: Buffer.from(JSON.stringify(values.map((value) => value.channel)), "utf8") };
  const framed = frameItems([names, ...values.map((value) => ({ type: value.type, bytes: value.data }))]);
  const packedBytes = compressed(framed);
  const [flag, body] = packedBytes.length < framed.length ? [DICTIONARY_DEFLATED, packedBytes] : [RAW, asBuffer(framed)];
  return Buffer.concat([Buffer.from([flag]), body]);
}

/** The values of a row's batch, as rows of their own at its version. */
function unbatched(version: string, data: Buffer): BlobRow[] {
  const body = data.subarray(1);
  const framed = data[0] === DICTIONARY_DEFLATED ? decompressed(body) : data[0] === DEFLATED ? inflateRawSync(body) : body;
  const [names, ...values] = unframeItems(framed);
  const channels = JSON.parse(Buffer.from(names!.bytes).toString("utf8")) as string[];
  return channels.map((channel, i) => ({ channel, version, type: values[i]!.type, data: asBuffer(values[i]!.bytes), ranges: null }));
}

/** Each channel version the rows hold (a list row's batch and a VALUES_TYPE row unpacked), by `blobKey`. */
export function resolvedRows(rows: Iterable<BlobRow>): Map<string, BlobRow> {
  const own = new Map<string, BlobRow>();
  const batched = new Map<string, BlobRow>();
  for (const row of rows) {
    const batch = isValues(row.type) || row.type === ITEMS_TYPE ? row.data : null;
    if (!isValues(row.type)) own.set(blobKey(row.channel, row.version), batch ? { ...row, data: null } : row);
    if (batch) for (const value of unbatched(row.version, batch)) batched.set(blobKey(value.channel, value.version), value);
  }
  // A row of the channel's own comes first: it was there when the batch was written (see saver.ts).
  for (const [key, row] of own) batched.set(key, row);
  return batched;
}
