import { deflateRawSync, inflateRawSync } from "node:zlib";
import type Database from "better-sqlite3";
import { frameItems, unframeItems, type EncodedItem } from "../../checkpoint/item-framing.js";
import { decodeRanges, encodeRanges, pushSeq, type ListRow, type SeqRange } from "../../checkpoint/list-history.js";
import { LruMap } from "../../checkpoint/lru-map.js";
import type { CheckpointColumns } from "../../checkpoint/history-reader.js";
import type { ThreadNamespace } from "../../checkpoint/saver-common.js";
import { applyItemRef, ITEM_REF_TYPE, parseItemRef } from "../../checkpoint/item-refs.js";
import { LogItems, type LogChunk } from "./log-items.js";

export interface CheckpointRow extends CheckpointColumns {
  thread_id: string;
  checkpoint_ns: string;
}

export type BlobRecord =
  | { readonly kind: "value"; readonly type: string; readonly data: Uint8Array }
  /** The channel had a new version but no value (it was cleared). */
  | { readonly kind: "empty" }
  /** A list version in the item log's format: where its items are in the log. */
  | { readonly kind: "items"; readonly ranges: readonly SeqRange[] }
  | ListRow;

export interface BlobWrite {
  readonly channel: string;
  readonly version: string;
  readonly record: BlobRecord;
  /** Stored instead of `record` when its base version is gone (its thread was deleted meanwhile). */
  readonly fallback?: BlobRecord;
}

export interface WriteRow {
  task_id: string;
  task_path: string;
  idx: number;
  channel: string;
  type: string;
  value: Uint8Array;
}

export interface ListQuery {
  threadId?: string;
  ns?: string;
  checkpointId?: string;
  /** Only checkpoints with a smaller id. */
  beforeId?: string;
  limit: number;
}

/** Position after the last row of a page, in the list order (id, thread, namespace, descending). */
export type ListCursor = Pick<CheckpointRow, "checkpoint_id" | "thread_id" | "checkpoint_ns">;

export interface ChunkColumns {
  start: number;
  end: number;
  data: Uint8Array;
  ends: Uint8Array;
  types: string | null;
}

const COMMA = Buffer.from(",");

/** Whether each chunk read holds any reference to another log's item (see item-refs.ts), found once. */
const refsHeld = new WeakMap<LogChunk, boolean>();

function holdsRefs(chunk: LogChunk): boolean {
  let holds = refsHeld.get(chunk);
  if (holds === undefined) {
    holds = chunk.types !== null && (JSON.parse(chunk.types) as string[]).includes(ITEM_REF_TYPE);
    refsHeld.set(chunk, holds);
  }
  return holds;
}

/** A new chunk of `items`, the first at `start`. */
function newChunk(start: number, items: readonly EncodedItem[]): LogChunk {
  const parts: Uint8Array[] = [];
  const ends = Buffer.alloc(4 * items.length);
  let offset = 0;
  items.forEach((item, i) => {
    if (i > 0) {
      parts.push(COMMA);
      offset += 1;
    }
    parts.push(item.bytes);
    offset += item.bytes.length;
    ends.writeUInt32LE(offset, 4 * i);
  });
  const allJson = items.every((item) => item.type === "json");
  return {
    start_seq: start,
    end_seq: start + items.length,
    data: Buffer.concat(parts),
    ends,
    types: allJson ? null : JSON.stringify(items.map((item) => item.type)),
  };
}

/** Two neighbouring chunks as one. */
function mergeChunks(first: LogChunk, second: LogChunk): LogChunk {
  const shift = first.data.length + 1;
  const secondEnds = Buffer.from(second.ends.buffer, second.ends.byteOffset, second.ends.byteLength);
  const ends = Buffer.alloc(first.ends.length + secondEnds.length);
  ends.set(first.ends, 0);
  for (let i = 0; i < secondEnds.length; i += 4) ends.writeUInt32LE(secondEnds.readUInt32LE(i) + shift, first.ends.length + i);
  const typesOf = (chunk: LogChunk): string[] =>
    chunk.types === null ? new Array<string>(chunk.end_seq - chunk.start_seq).fill("json") : (JSON.parse(chunk.types) as string[]);
  return {
    start_seq: first.start_seq,
    end_seq: second.end_seq,
    data: Buffer.concat([first.data, COMMA, second.data]),
    ends,
    types: first.types === null && second.types === null ? null : JSON.stringify([...typesOf(first), ...typesOf(second)]),
  };
}

/** A chunk's columns as written: its data compressed when that pays (see `packChunk`). */
function packed(chunk: LogChunk): ChunkColumns & { codec: string | null } {
  return packChunk({ start: chunk.start_seq, end: chunk.end_seq, data: chunk.data, ends: chunk.ends, types: chunk.types });
}

interface LogKey {
  threadId: string;
  ns: string;
  channel: string;
}

interface BlobKey {
  threadId: string;
  ns: string;
  channel: string;
  version: string;
}

interface BlobColumns {
  version: string;
  kind: string;
  type: string | null;
  data: Uint8Array | null;
  base_version: string | null;
  keep: number | null;
}

/** The bounds and stored size of a chunk, from its row's header. */
interface ChunkBefore {
  start_seq: number;
  end_seq: number;
  stored_bytes: number;
}

/** A chunk's row: its data compressed when `codec` says so (see `packChunk`). */
export type StoredChunk = LogChunk & { codec: string | null };

/** The one codec of chunk data: raw DEFLATE (zlib). */
const DEFLATE = "deflate";
/** Chunks smaller than this are stored as they are. */
const COMPRESS_FROM_BYTES = 256;
/** A compressed chunk is kept when it is at most this share of the raw one. */
const COMPRESSED_SHARE = 0.875;

/**
 * A chunk's data as stored: compressed (raw DEFLATE) when that saves at least an eighth. Item
 * logs hold a thread's messages and tool outputs (source, logs, diffs), text that compresses
 * two to four times; PostgreSQL compresses such values by itself (TOAST), SQLite does not.
 */
export function packChunk(columns: ChunkColumns): ChunkColumns & { codec: string | null } {
  if (columns.data.length < COMPRESS_FROM_BYTES) return { ...columns, codec: null };
  const compressed = deflateRawSync(columns.data);
  return compressed.length <= columns.data.length * COMPRESSED_SHARE
    ? { ...columns, data: compressed, codec: DEFLATE }
    : { ...columns, codec: null };
}

/** A chunk as read, its data raw. */
export function unpackChunk({ codec, ...chunk }: StoredChunk): LogChunk {
  if (codec === null) return chunk;
  if (codec !== DEFLATE) throw new Error(`An item log chunk is stored with codec "${codec}", which this loopgraph cannot read`);
  return { ...chunk, data: inflateRawSync(chunk.data) };
}

/** Bytes of item log chunks kept in memory for reads (see CheckpointStore.chunkCache). */
const CHUNK_CACHE_BYTES = 16 * 1024 * 1024;

/** A chunk holding references read in part is resolved in blocks of this many items (from its start), each kept (see logChunks). */
const RESOLVE_BLOCK = 64;

/** The cache key of items [from, to) of a log (`prefix`: its thread, namespace and channel) with their references resolved. */
const resolvedKey = (prefix: string, from: number, to: number): string => `${prefix}${from}-${to}\u0000resolved`;

/** Whether `chunks` (in log order) hold every item of [start, end) without a gap. */
function coversSpan(chunks: readonly LogChunk[], start: number, end: number): boolean {
  if (chunks.length === 0 || start < chunks[0]!.start_seq || end > chunks.at(-1)!.end_seq) return false;
  return chunks.every((chunk, i) => i === 0 || chunk.start_seq === chunks[i - 1]!.end_seq);
}

/** Chunks of the item log are merged up to this size (a merge rewrites them; bigger would rewrite more per step). */
const MAX_CHUNK_BYTES = 256 * 1024;

const CHECKPOINT_COLUMNS =
  "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type, checkpoint, channel_versions, metadata_type, metadata";

/** Synchronous SQL access for the saver; statements are prepared once. */
export class CheckpointStore {
  private readonly insertCheckpointStatement;
  private readonly latestCheckpointStatement;
  private readonly checkpointByIdStatement;
  private readonly insertBlobStatement;
  private readonly blobExistsStatement;
  private readonly blobChainStatement;
  private readonly blobStatement;
  private readonly keepWriteStatement;
  private readonly replaceWriteStatement;
  private readonly writesStatement;
  private readonly channelWritesStatement;
  private readonly pageWritesStatement;
  private readonly deleteStatements;
  private readonly historyPageStatement;
  private readonly blobsStatement;
  private readonly logEndStatement;
  private readonly insertChunkStatement;
  private readonly chunkBeforeStatement;
  private readonly chunkDataStatement;
  private readonly deleteChunkStatement;
  private readonly extendChunkStatement;
  private readonly chunksStatement;
  private readonly chunkBoundsStatement;
  /**
   * Chunks read or written lately, by thread, namespace, channel and range. A chunk never changes
   * once written: a merge writes another range (and a deleted thread's are forgotten, see deleteThread).
   */
  private readonly chunkCache = new LruMap<string, LogChunk>(CHUNK_CACHE_BYTES, {
    // A chunk of JSON items read whole keeps its text too (see LogItems.jsonArrayText), about as big as its data.
    weigh: (chunk) => chunk.data.length * (chunk.types === null ? 2 : 1) + chunk.ends.length,
    maxEntryWeight: CHUNK_CACHE_BYTES / 4,
  });
  private readonly listStatements = new Map<string, Database.Statement<unknown[], CheckpointRow>>();
  /** The chunks each item log's last read returned (see logChunks), by thread, namespace and channel. */
  private readonly lastLogReads = new LruMap<string, LogChunk[]>(CHUNK_CACHE_BYTES / 4, {
    weigh: (chunks) => chunks.reduce((bytes, chunk) => bytes + chunk.data.length + chunk.ends.length, 0),
    maxEntryWeight: CHUNK_CACHE_BYTES / 4,
  });

  constructor(private readonly db: Database.Database) {
    this.immediate = db.transaction((work: () => unknown) => {
      for (const hook of this.writeHooks) hook();
      return work();
    }).immediate;
    this.deferred = db.transaction((work: () => unknown) => work()).deferred;
    this.insertCheckpointStatement = db.prepare<CheckpointRow>(
      `INSERT OR REPLACE INTO loopgraph_checkpoints (${CHECKPOINT_COLUMNS})
       VALUES (@thread_id, @checkpoint_ns, @checkpoint_id, @parent_checkpoint_id, @checkpoint_type, @checkpoint,
               @channel_versions, @metadata_type, @metadata)`,
    );
    this.latestCheckpointStatement = db.prepare<[string, string], CheckpointRow>(
      `SELECT ${CHECKPOINT_COLUMNS} FROM loopgraph_checkpoints
       WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1`,
    );
    this.checkpointByIdStatement = db.prepare<[string, string, string], CheckpointRow>(
      `SELECT ${CHECKPOINT_COLUMNS} FROM loopgraph_checkpoints
       WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?`,
    );
    this.insertBlobStatement = db.prepare<[string, string, string, string, ...BlobColumnValues]>(
      `INSERT OR IGNORE INTO loopgraph_checkpoint_blobs
       (thread_id, checkpoint_ns, channel, version, kind, type, data, base_version, keep)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.blobExistsStatement = db
      .prepare<[string, string, string, string], number>(
        `SELECT 1 FROM loopgraph_checkpoint_blobs
         WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?`,
      )
      .pluck();
    // One statement walks a list version's base chain down to its snapshot. The walk carries keys
    // only (carrying the data would copy every blob into SQLite's queue); rows are fetched after.
    this.blobStatement = db.prepare<[BlobKey], BlobColumns>(
      `SELECT version, kind, type, data, base_version, keep FROM loopgraph_checkpoint_blobs
       WHERE thread_id = @threadId AND checkpoint_ns = @ns AND channel = @channel AND version = @version`,
    );
    this.blobChainStatement = db.prepare<[BlobKey], BlobColumns & { hop: number }>(
      `WITH RECURSIVE chain(hop, version, base_version) AS (
         SELECT 0, version, base_version FROM loopgraph_checkpoint_blobs
         WHERE thread_id = @threadId AND checkpoint_ns = @ns AND channel = @channel AND version = @version
         UNION ALL
         SELECT chain.hop + 1, b.version, b.base_version
         FROM chain CROSS JOIN loopgraph_checkpoint_blobs AS b
           ON b.thread_id = @threadId AND b.checkpoint_ns = @ns AND b.channel = @channel
          AND b.version = chain.base_version
       )
       SELECT chain.hop, b.version, b.kind, b.type, b.data, b.base_version, b.keep
       FROM chain CROSS JOIN loopgraph_checkpoint_blobs AS b
         ON b.thread_id = @threadId AND b.checkpoint_ns = @ns AND b.channel = @channel AND b.version = chain.version`,
    );
    const writeColumns = `(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value)
       VALUES (@thread_id, @checkpoint_ns, @checkpoint_id, @task_id, @task_path, @idx, @channel, @type, @value)`;
    this.keepWriteStatement = db.prepare<StoredWrite>(`INSERT OR IGNORE INTO loopgraph_checkpoint_writes ${writeColumns}`);
    this.replaceWriteStatement = db.prepare<StoredWrite>(`INSERT OR REPLACE INTO loopgraph_checkpoint_writes ${writeColumns}`);
    // BINARY collation compares UTF-8 bytes, i.e. code points: the order `compareWritesSortKeys` defines.
    this.writesStatement = db.prepare<[string, string, string], WriteRow>(
      `SELECT task_id, task_path, idx, channel, type, value FROM loopgraph_checkpoint_writes
       WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY task_path, task_id, idx`,
    );
    this.channelWritesStatement = db.prepare<[string, string, string, string], WriteRow>(
      `SELECT task_id, task_path, idx, channel, type, value FROM loopgraph_checkpoint_writes
       WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND channel = ? ORDER BY task_path, task_id, idx`,
    );
    this.pageWritesStatement = db.prepare<[{ threadId: string; ns: string; ids: string }], WriteRow & { checkpoint_id: string }>(
      `SELECT checkpoint_id, task_id, task_path, idx, channel, type, value FROM loopgraph_checkpoint_writes
       WHERE thread_id = @threadId AND checkpoint_ns = @ns AND checkpoint_id IN (SELECT value FROM json_each(@ids))
       ORDER BY checkpoint_id, task_path, task_id, idx`,
    );
    // Many versions' own rows in one statement: the pairs come as JSON, each found by the key.
    this.blobsStatement = db.prepare<[{ threadId: string; ns: string; pairs: string }], BlobColumns & { channel: string }>(
      `SELECT b.channel, b.version, b.kind, b.type, b.data, b.base_version, b.keep
       FROM json_each(@pairs) AS j CROSS JOIN loopgraph_checkpoint_blobs AS b
         ON b.thread_id = @threadId AND b.checkpoint_ns = @ns
        AND b.channel = json_extract(j.value, '$[0]') AND b.version = json_extract(j.value, '$[1]')`,
    );
    this.historyPageStatement = db.prepare<[string, string, string, number], HistoryRow>(
      `SELECT c.checkpoint_id, c.parent_checkpoint_id, c.checkpoint_type, c.checkpoint, c.channel_versions,
              c.metadata_type, c.metadata,
              EXISTS (SELECT 1 FROM loopgraph_checkpoint_writes AS w
                      WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns
                        AND w.checkpoint_id = c.checkpoint_id AND w.channel = '${ERROR_CHANNEL}') AS failed
       FROM loopgraph_checkpoints AS c
       WHERE c.thread_id = ? AND c.checkpoint_ns = ? AND c.checkpoint_id > ? ORDER BY c.checkpoint_id LIMIT ?`,
    );
    const logKey = "thread_id = @threadId AND checkpoint_ns = @ns AND channel = @channel";
    this.logEndStatement = db
      .prepare<[LogKey], number>(`SELECT end_seq FROM loopgraph_checkpoint_items WHERE ${logKey} ORDER BY start_seq DESC LIMIT 1`)
      .pluck();
    this.insertChunkStatement = db.prepare<[LogKey & ChunkColumns & { codec: string | null }]>(
      `INSERT INTO loopgraph_checkpoint_items (thread_id, checkpoint_ns, channel, start_seq, end_seq, data, ends, types, codec)
       VALUES (@threadId, @ns, @channel, @start, @end, @data, @ends, @types, @codec)`,
    );
    // The chunk ending where a chunk starts, if any: its bounds and stored size, read from the row's
    // header (its data and item ends, which may run over many pages, are not read).
    this.chunkBeforeStatement = db.prepare<[LogKey & { start: number }], ChunkBefore>(
      `SELECT start_seq, end_seq, length(data) AS stored_bytes FROM loopgraph_checkpoint_items
       WHERE ${logKey} AND start_seq < @start ORDER BY start_seq DESC LIMIT 1`,
    );
    this.chunkDataStatement = db.prepare<[LogKey & { start: number }], StoredChunk>(
      `SELECT start_seq, end_seq, data, ends, types, codec FROM loopgraph_checkpoint_items WHERE ${logKey} AND start_seq = @start`,
    );
    this.deleteChunkStatement = db.prepare<[LogKey & { start: number }]>(
      `DELETE FROM loopgraph_checkpoint_items WHERE ${logKey} AND start_seq = @start`,
    );
    this.extendChunkStatement = db.prepare<[LogKey & ChunkColumns & { codec: string | null }]>(
      `UPDATE loopgraph_checkpoint_items SET end_seq = @end, data = @data, ends = @ends, types = @types, codec = @codec WHERE ${logKey} AND start_seq = @start`,
    );
    // The chunks of a log never overlap (each is appended at the log's end, a merge joins two
    // neighbours): those holding items in [start, end) begin at the last chunk starting at or
    // before `start`. Searching the key's index from there reads those chunks only, not every
    // chunk before them (a history walk reads the newest items of a long log, again and again).
    const overlapping = `${logKey} AND start_seq < @end AND end_seq > @start
       AND start_seq >= coalesce((SELECT start_seq FROM loopgraph_checkpoint_items WHERE ${logKey} AND start_seq <= @start ORDER BY start_seq DESC LIMIT 1), @start)`;
    this.chunkBoundsStatement = db.prepare<[LogKey & { start: number; end: number }], { start_seq: number; end_seq: number }>(
      `SELECT start_seq, end_seq FROM loopgraph_checkpoint_items WHERE ${overlapping} ORDER BY start_seq`,
    );
    this.chunksStatement = db.prepare<[LogKey & { start: number; end: number }], StoredChunk>(
      `SELECT start_seq, end_seq, data, ends, types, codec FROM loopgraph_checkpoint_items WHERE ${overlapping} ORDER BY start_seq`,
    );
    this.deleteStatements = [
      "loopgraph_checkpoints",
      "loopgraph_checkpoint_blobs",
      "loopgraph_checkpoint_items",
      "loopgraph_checkpoint_writes",
    ].map((table) => db.prepare<[string]>(`DELETE FROM ${table} WHERE thread_id = ?`));
  }

  /** Run first in every write transaction (see SqliteCheckpointSaver.addWriteHook). */
  readonly writeHooks: (() => void)[] = [];

  /**
   * The two transactions, built once: better-sqlite3 builds four wrapped functions for each
   * `transaction()` call, which cost about as much as a step's inserts.
   */
  private readonly immediate: (work: () => unknown) => unknown;
  private readonly deferred: (work: () => unknown) => unknown;

  /** Runs `work` in a write transaction taken up front, so it waits for other writers instead of failing. */
  writeTransaction<T>(work: () => T): T {
    return this.immediate(work) as T;
  }

  /** Runs `work` on one consistent snapshot of the database. */
  readTransaction<T>(work: () => T): T {
    return this.deferred(work) as T;
  }

  insertCheckpoint(row: CheckpointRow): void {
    this.insertCheckpointStatement.run(row);
  }

  checkpoint(at: ThreadNamespace, checkpointId?: string): CheckpointRow | undefined {
    return checkpointId
      ? this.checkpointByIdStatement.get(at.threadId, at.ns, checkpointId)
      : this.latestCheckpointStatement.get(at.threadId, at.ns);
  }

  /** Checkpoints newest first, `limit` at a time from `after` (exclusive). */
  listCheckpoints(query: ListQuery, after?: ListCursor): CheckpointRow[] {
    const conditions: string[] = [];
    const params: unknown[] = [];
    if (query.threadId !== undefined) {
      conditions.push("thread_id = ?");
      params.push(query.threadId);
    }
    if (query.ns !== undefined) {
      conditions.push("checkpoint_ns = ?");
      params.push(query.ns);
    }
    if (query.checkpointId !== undefined) {
      conditions.push("checkpoint_id = ?");
      params.push(query.checkpointId);
    }
    if (query.beforeId !== undefined) {
      conditions.push("checkpoint_id < ?");
      params.push(query.beforeId);
    }
    if (after) {
      conditions.push("(checkpoint_id, thread_id, checkpoint_ns) < (?, ?, ?)");
      params.push(after.checkpoint_id, after.thread_id, after.checkpoint_ns);
    }
    params.push(query.limit);
    const where = conditions.length > 0 ? `WHERE ${conditions.join(" AND ")}` : "";
    const sql = `SELECT ${CHECKPOINT_COLUMNS} FROM loopgraph_checkpoints ${where}
       ORDER BY checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC LIMIT ?`;
    let statement = this.listStatements.get(sql);
    if (!statement) {
      statement = this.db.prepare<unknown[], CheckpointRow>(sql);
      this.listStatements.set(sql, statement);
    }
    return statement.all(...params);
  }

  /** Inserts the blob unless that channel version is already stored; returns what was stored, if anything. */
  insertBlob(at: ThreadNamespace, blob: BlobWrite): BlobRecord | undefined {
    let record = blob.record;
    if ("baseVersion" in record && !this.blobExistsStatement.get(at.threadId, at.ns, blob.channel, record.baseVersion)) {
      if (!blob.fallback) throw new Error(`Base version ${record.baseVersion} of channel ${blob.channel} is missing`);
      record = blob.fallback;
    }
    const result = this.insertBlobStatement.run(at.threadId, at.ns, blob.channel, blob.version, ...blobColumnValues(record));
    return result.changes > 0 ? record : undefined;
  }

  /** The channel version's row, then its base's, down to a snapshot (a single row for non-list values). */
  blobChain(at: ThreadNamespace, channel: string, version: string): BlobLink[] {
    // Rows of the current formats stand alone; only deltas and rollups of earlier stores chain.
    const row = this.blobStatement.get({ threadId: at.threadId, ns: at.ns, channel, version });
    if (!row) return [];
    if (row.base_version === null) return [toBlobLink(row)];
    const rows = this.blobChainStatement.all({ threadId: at.threadId, ns: at.ns, channel, version });
    return rows.sort((a, b) => a.hop - b.hop).map(toBlobLink);
  }

  /** Whether that channel version is stored. */
  hasBlob(at: ThreadNamespace, channel: string, version: string): boolean {
    return this.blobExistsStatement.get(at.threadId, at.ns, channel, version) !== undefined;
  }

  /** The sequence number the next item appended to the channel's item log gets. */
  logEnd(at: ThreadNamespace, channel: string): number {
    return this.logEndStatement.get({ threadId: at.threadId, ns: at.ns, channel }) ?? 0;
  }

  /**
   * Appends framed items [start, end) to the channel's item log as a new chunk, merged (before it
   * is written) with the last chunks while the one before is no bigger than it (a binary counter:
   * a log of N items has about log2(N) chunks, and each item is rewritten about log2(N) times
   * over its life), up to MAX_CHUNK_BYTES. One row is written, compressed once: the new chunk,
   * or the first chunk it took in (the others it took in are deleted); a chunk taken in is read
   * whole only when the sizes in its row's header do not rule the merge out.
   */
  appendToLog(at: ThreadNamespace, channel: string, start: number, items: readonly EncodedItem[]): void {
    const key = { threadId: at.threadId, ns: at.ns, channel };
    let chunk = newChunk(start, items);
    const takenIn: number[] = [];
    for (;;) {
      const before = this.chunkBeforeStatement.get({ ...key, start: chunk.start_seq });
      if (!before || before.end_seq !== chunk.start_seq) break;
      // Stored data is never bigger than its raw data, and is the raw data when not compressed.
      const size = chunk.data.length;
      if (before.stored_bytes > size || before.stored_bytes + size > MAX_CHUNK_BYTES) break;
      const stored = unpackChunk(this.chunkDataStatement.get({ ...key, start: before.start_seq })!);
      if (stored.data.length > size || stored.data.length + size > MAX_CHUNK_BYTES) break;
      chunk = mergeChunks(stored, chunk);
      takenIn.push(before.start_seq);
    }
    const first = takenIn.pop();
    for (const taken of takenIn) this.deleteChunkStatement.run({ ...key, start: taken });
    if (first === undefined) this.insertChunkStatement.run({ ...key, ...packed(chunk) });
    else this.extendChunkStatement.run({ ...key, ...packed(chunk) });
  }

  /**
   * The chunks of the channel's item log holding any item in [start, end), in order, each
   * reference (see item-refs.ts) replaced by the item it stands for. A chunk read whole is
   * resolved whole and kept so (a `list` page or `getTuple` reads a list's every item, version
   * after version). Of a chunk read in part (a history walk reads each version's new items), the
   * blocks of RESOLVE_BLOCK items holding that part are resolved, each once, and kept: no item is
   * resolved twice, and a read of a few items of a huge chunk resolves a block, not the chunk.
   * A read within the span the log's last read returned takes those chunks again, without a
   * statement: an item never changes once logged (a merge only joins chunks).
   */
  logChunks(at: ThreadNamespace, channel: string, start: number, end: number): LogChunk[] {
    const prefix = `${at.threadId}\u0000${at.ns}\u0000${channel}\u0000`;
    const last = this.lastLogReads.get(prefix);
    if (last && coversSpan(last, start, end)) return last.filter((chunk) => chunk.start_seq < end && chunk.end_seq > start);
    const key = { threadId: at.threadId, ns: at.ns, channel };
    const bounds = this.chunkBoundsStatement.all({ ...key, start, end });
    const resolved = bounds.map((bound) => this.chunkCache.get(resolvedKey(prefix, bound.start_seq, bound.end_seq)));
    const chunks = resolved.every((chunk) => chunk !== undefined)
      ? (resolved as LogChunk[])
      : this.storedChunks(at, channel, start, end, bounds).flatMap((chunk, i) => {
          if (resolved[i]) return [resolved[i]];
          if (!holdsRefs(chunk)) return [chunk];
          if (chunk.start_seq >= start && chunk.end_seq <= end)
            return [this.resolvedPart(at, channel, chunk, chunk.start_seq, chunk.end_seq)];
          const blocks: LogChunk[] = [];
          const first = chunk.start_seq + Math.floor((start - chunk.start_seq) / RESOLVE_BLOCK) * RESOLVE_BLOCK;
          for (let from = Math.max(first, chunk.start_seq); from < Math.min(end, chunk.end_seq); from += RESOLVE_BLOCK)
            blocks.push(this.resolvedPart(at, channel, chunk, from, Math.min(from + RESOLVE_BLOCK, chunk.end_seq)));
          return blocks;
        });
    this.lastLogReads.set(prefix, chunks);
    return chunks;
  }

  /** Items [from, to) of a chunk holding references, resolved (see resolveChunk), from the cache or else resolved and kept there. */
  private resolvedPart(at: ThreadNamespace, channel: string, chunk: LogChunk, from: number, to: number): LogChunk {
    const key = resolvedKey(`${at.threadId}\u0000${at.ns}\u0000${channel}\u0000`, from, to);
    let resolved = this.chunkCache.get(key);
    if (!resolved) {
      resolved = this.resolveChunk(at, channel, chunk, from, to);
      this.chunkCache.set(key, resolved);
    }
    return resolved;
  }

  /**
   * The chunks holding [start, end) as stored (`bounds`: where they are, when read already), from
   * the cache or else in one statement; those read are kept in the cache when `keep` says so.
   */
  private storedChunks(
    at: ThreadNamespace,
    channel: string,
    start: number,
    end: number,
    bounds: readonly { start_seq: number; end_seq: number }[] = this.chunkBoundsStatement.all({
      threadId: at.threadId,
      ns: at.ns,
      channel,
      start,
      end,
    }),
    keep = true,
  ): LogChunk[] {
    const key = { threadId: at.threadId, ns: at.ns, channel };
    const prefix = `${at.threadId}\u0000${at.ns}\u0000${channel}\u0000`;
    const cached = bounds.map((bound) => this.chunkCache.get(`${prefix}${bound.start_seq}-${bound.end_seq}`));
    if (cached.every((chunk) => chunk !== undefined)) return cached as LogChunk[];
    const chunks = (
      bounds.length === 1
        ? [this.chunkDataStatement.get({ ...key, start: bounds[0]!.start_seq })!]
        : this.chunksStatement.all({ ...key, start, end })
    ).map(unpackChunk);
    if (keep) for (const chunk of chunks) this.chunkCache.set(`${prefix}${chunk.start_seq}-${chunk.end_seq}`, chunk);
    return chunks;
  }

  /**
   * Items [from, to) of a chunk holding references, as a chunk of their own: each reference
   * replaced by its target, read from the target's log (one query a log). A target is never a
   * reference itself: a log holding one where a reference points is refused. The targets' chunks
   * are not kept for a chunk resolved whole, which is kept instead (their items twice otherwise).
   */
  private resolveChunk(at: ThreadNamespace, channel: string, chunk: LogChunk, from: number, to: number): LogChunk {
    const first = Math.max(from, chunk.start_seq);
    const items = LogItems.locate(channel, [chunk], [[first, Math.min(to, chunk.end_seq)]]).encoded();
    const refs = items.map((item) => (item.type === ITEM_REF_TYPE ? parseItemRef(item.bytes) : undefined));
    const seqsByLog = new Map<string, Set<number>>();
    for (const ref of refs) {
      if (!ref) continue;
      let seqs = seqsByLog.get(ref.channel);
      if (!seqs) seqsByLog.set(ref.channel, (seqs = new Set()));
      seqs.add(ref.seq);
    }
    const targets = new Map<string, EncodedItem>();
    for (const [log, seqSet] of seqsByLog) {
      const seqs = [...seqSet].sort((a, b) => a - b);
      const ranges: SeqRange[] = [];
      for (const seq of seqs) pushSeq(ranges, seq);
      const whole = from <= chunk.start_seq && to >= chunk.end_seq;
      const logChunks = this.storedChunks(at, log, seqs[0]!, seqs.at(-1)! + 1, undefined, !whole);
      const holding = logChunks.find(holdsRefs);
      if (holding) {
        throw new Error(
          `The item log of channel ${log} holds references at ${holding.start_seq}–${holding.end_seq}, which a reference points to`,
        );
      }
      LogItems.locate(log, logChunks, ranges)
        .encoded()
        .forEach((target, i) => targets.set(`${log}\u0000${seqs[i]}`, target));
    }
    const resolved = items.map((item, i) => {
      const ref = refs[i];
      return ref ? applyItemRef(ref, targets.get(`${ref.channel}\u0000${ref.seq}`)!) : item;
    });
    return newChunk(first, resolved);
  }

  insertWrites(rows: readonly StoredWrite[], replaceExisting: boolean): void {
    const statement = replaceExisting ? this.replaceWriteStatement : this.keepWriteStatement;
    for (const row of rows) statement.run(row);
  }

  /** A checkpoint's pending writes in `writesSortKey` order, optionally of one channel only. */
  writes(at: ThreadNamespace, checkpointId: string, channel?: string): WriteRow[] {
    return channel === undefined
      ? this.writesStatement.all(at.threadId, at.ns, checkpointId)
      : this.channelWritesStatement.all(at.threadId, at.ns, checkpointId, channel);
  }

  /** The pending writes of several checkpoints of the namespace, by checkpoint, each's in `writesSortKey` order. */
  writesOf(at: ThreadNamespace, checkpointIds: readonly string[]): Map<string, WriteRow[]> {
    const byCheckpoint = new Map<string, WriteRow[]>();
    if (checkpointIds.length === 1) {
      byCheckpoint.set(checkpointIds[0]!, this.writes(at, checkpointIds[0]!));
      return byCheckpoint;
    }
    if (checkpointIds.length === 0) return byCheckpoint;
    for (const { checkpoint_id, ...write } of this.pageWritesStatement.all({
      threadId: at.threadId,
      ns: at.ns,
      ids: JSON.stringify(checkpointIds),
    })) {
      const writes = byCheckpoint.get(checkpoint_id);
      if (writes) writes.push(write);
      else byCheckpoint.set(checkpoint_id, [write]);
    }
    return byCheckpoint;
  }

  /** One channel version's own row (not its base chain), if stored. */
  blob(at: ThreadNamespace, channel: string, version: string): BlobLink | undefined {
    const row = this.blobStatement.get({ threadId: at.threadId, ns: at.ns, channel, version });
    return row && toBlobLink(row);
  }

  /** The own rows of many channel versions (`[channel, version]` pairs), by `channel + "\0" + version`. */
  blobs(at: ThreadNamespace, pairs: readonly (readonly [string, string])[]): Map<string, BlobLink> {
    const links = new Map<string, BlobLink>();
    if (pairs.length === 0) return links;
    for (const row of this.blobsStatement.all({ threadId: at.threadId, ns: at.ns, pairs: JSON.stringify(pairs) })) {
      links.set(`${row.channel}\u0000${row.version}`, toBlobLink(row));
    }
    return links;
  }

  /** Up to `limit` checkpoints of the namespace after `afterId` (exclusive), oldest first, without their values. */
  historyPage(at: ThreadNamespace, afterId: string, limit: number): HistoryRow[] {
    return this.historyPageStatement.all(at.threadId, at.ns, afterId, limit);
  }

  deleteThread(threadId: string): void {
    for (const statement of this.deleteStatements) statement.run(threadId);
    this.chunkCache.deleteWhere((key) => key.startsWith(`${threadId}\u0000`));
    this.lastLogReads.deleteWhere((key) => key.startsWith(`${threadId}\u0000`));
  }
}

/** The pending-write channel LangGraph records a task's error in. */
const ERROR_CHANNEL = "__error__";

/** A checkpoint's row as a history walk reads it: no channel values, whether a task failed from it. */
export interface HistoryRow extends CheckpointColumns {
  /** 1 when a task that ran from this checkpoint recorded an error (an `__error__` pending write). */
  failed: number;
}

export interface StoredWrite extends WriteRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
}

export interface BlobLink {
  readonly version: string;
  readonly record: BlobRecord;
}

type BlobColumnValues = [kind: string, type: string | null, data: Uint8Array | null, base_version: string | null, keep: number | null];

function blobColumnValues(record: BlobRecord): BlobColumnValues {
  switch (record.kind) {
    case "value":
      return [record.kind, record.type, record.data, null, null];
    case "empty":
      return [record.kind, null, null, null, null];
    case "items":
      return [record.kind, null, encodeRanges(record.ranges), null, null];
    case "snapshot":
      return [record.kind, null, frameItems(record.items), null, null];
    case "delta":
    case "rollup":
      return [record.kind, null, frameItems(record.items), record.baseVersion, record.keep];
  }
}

function toBlobLink(columns: BlobColumns): BlobLink {
  const { version, kind, type, data, base_version, keep } = columns;
  switch (kind) {
    case "value":
      return { version, record: { kind, type: type ?? "json", data: data ?? new Uint8Array() } };
    case "empty":
      return { version, record: { kind } };
    case "items":
      return { version, record: { kind, ranges: decodeRanges(data ?? new Uint8Array()) } };
    case "snapshot":
      return { version, record: { kind, items: unframeItems(data ?? new Uint8Array()) } };
    case "delta":
    case "rollup":
      if (base_version === null || keep === null) throw new Error(`Corrupt ${kind} row for version ${version}`);
      return {
        version,
        record: { kind, baseVersion: base_version, keep, items: unframeItems(data ?? new Uint8Array()) },
      };
    default:
      throw new Error(`Unknown checkpoint blob kind "${kind}" for version ${version}`);
  }
}
