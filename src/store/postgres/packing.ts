/**
 * Values, items, pending writes, checkpoint headers and metadata of the PostgreSQL saver are
 * stored compressed (raw DEFLATE) when that saves at least an eighth: their type then carries
 * the prefix `deflate:`. PostgreSQL
 * compresses a row's values only past about 2 KB (TOAST); a thread's messages, tool outputs and
 * state values are mostly text under that, which compresses two to four times.
 * The saver's own kinds of rows (list versions, references) are never compressed: SQL reads them.
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";

const DEFLATE = "deflate:";
/** Smaller data is stored as it is. */
const COMPRESS_FROM_BYTES = 128;
/** Compressed data is kept when it is at most this share of the raw data. */
const COMPRESSED_SHARE = 0.875;

/** `data` of `type` as stored: compressed when worth it. */
export function packed(type: string, data: Uint8Array): [type: string, data: Buffer] {
  if (data.length < COMPRESS_FROM_BYTES) return [type, asBuffer(data)];
  const compressed = deflateRawSync(data);
  return compressed.length <= data.length * COMPRESSED_SHARE ? [`${DEFLATE}${type}`, compressed] : [type, asBuffer(data)];
}

/** Bytes as a Buffer over the same memory (node-postgres sends Buffers as bytea). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Stored data of `type` as it was written. */
export function unpacked(type: string, data: Buffer): [type: string, data: Buffer] {
  return type.startsWith(DEFLATE) ? [type.slice(DEFLATE.length), inflateRawSync(data)] : [type, data];
}
