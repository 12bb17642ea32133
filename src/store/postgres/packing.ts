/**
 * Values, items, pending writes, checkpoint headers and metadata of the PostgreSQL saver are
 * stored compressed when that saves at least an eighth: raw DEFLATE primed with DICTIONARY, the
 * JSON LangGraph and LangChain write around every checkpoint, message and write (a short
 * header or message envelope then takes a few bytes instead of its length); their type then
 * carries the prefix `z:`. Rows written before (schema 3) carry `deflate:`, plain raw DEFLATE,
 * and read alike. PostgreSQL compresses a row's values only past about 2 KB (TOAST); a
 * thread's messages, tool outputs and state values are mostly text under that, which
 * compresses two to four times.
 * The saver's own kinds of rows (list versions, references) are never compressed: SQL reads them.
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";

/** Raw DEFLATE without a dictionary (rows of schema 3). */
const DEFLATE = "deflate:";
/** Raw DEFLATE primed with DICTIONARY. */
const DICTIONARY_DEFLATE = "z:";
/** Smaller data is stored as it is. */
const COMPRESS_FROM_BYTES = 24;
/** Compressed data is kept when it is at most this share of the raw data. */
const COMPRESSED_SHARE = 0.875;

/**
 * Text that stored data is compressed against, the most common last (nearest, cheapest to
 * refer to). Stored data depends on it byte for byte: it never changes (a new one takes a new
 * type prefix); tests/checkpoint.postgres.test.ts pins its digest.
 */
export const DICTIONARY = Buffer.from(
  [
    '"type":"tool_call"',
    '"usage_metadata":{"input_tokens":',
    ',"output_tokens":',
    ',"total_tokens":',
    '"input_token_details":{"cache_read":',
    '"tool_call_chunks":[]',
    '{"lc":1,"type":"constructor","id":["langchain_core","messages","SystemMessage"],"kwargs":{"content":"',
    '{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"content":"',
    '","tool_call_id":"call_',
    '","name":"',
    '"status":"error"',
    '{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"',
    '"tool_calls":[{"name":"',
    '","args":{',
    '"invalid_tool_calls":[]',
    '"tool_calls":[]',
    '{"lc":1,"type":"constructor","id":["langchain_core","messages","HumanMessage"],"kwargs":{"content":"',
    '","id":"',
    '"additional_kwargs":{},"response_metadata":{}}}',
    'json[[0,"messages"],[1,"branch:to:',
    'loopgraph:log-refs[["__writes__:messages",',
    '{"source":"update","step":',
    '{"source":"input","step":',
    '{"source":"loop","step":',
    ',"parents":{}}',
    '"__pregel_tasks"',
    '{"rest":"{}","props":{"messages":[["__writes__:messages",',
    '"__interrupt__"',
    '"versions_seen":{"__input__":{},"__start__":{"__start__":',
    '"branch:to:',
    '{"v":4,"ts":"20',
  ].join(""),
  "utf8",
);

/** `data` compressed against DICTIONARY. */
export function compressed(data: Uint8Array): Buffer {
  return deflateRawSync(data, { dictionary: DICTIONARY });
}

/** Data `compressed` gave, as it was. */
export function decompressed(data: Uint8Array): Buffer {
  return inflateRawSync(data, { dictionary: DICTIONARY });
}

/** `data` of `type` as stored: compressed when worth it. */
export function packed(type: string, data: Uint8Array): [type: string, data: Buffer] {
  if (data.length < COMPRESS_FROM_BYTES) return [type, asBuffer(data)];
  const bytes = compressed(data);
  return bytes.length <= data.length * COMPRESSED_SHARE ? [`${DICTIONARY_DEFLATE}${type}`, bytes] : [type, asBuffer(data)];
}

/** Bytes as a Buffer over the same memory (node-postgres sends Buffers as bytea). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Stored data of `type` as it was written. */
export function unpacked(type: string, data: Buffer): [type: string, data: Buffer] {
  if (type.startsWith(DICTIONARY_DEFLATE)) return [type.slice(DICTIONARY_DEFLATE.length), decompressed(data)];
  return type.startsWith(DEFLATE) ? [type.slice(DEFLATE.length), inflateRawSync(data)] : [type, data];
}
