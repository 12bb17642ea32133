import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  getCheckpointId,
  writesSortKey,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type pg from "pg";
import { nextChannelVersion } from "../../checkpoint/channel-versions.js";
import { syncSerializerOf } from "../../checkpoint/fast-serde.js";
import { ItemCodec } from "../../checkpoint/item-codec.js";
import { decodeItems } from "../../checkpoint/fast-serde.js";
import { PlainJsonReader } from "../../checkpoint/plain-json.js";
import type { EncodedItem } from "../../checkpoint/item-framing.js";
import {
  everyChannel,
  walkHistory,
  type CheckpointHistoryEntry,
  type DecodedChannel,
  type HistoryReader,
  type HistorySpan,
  type KnownVersions,
  type StoredChannel,
} from "../../checkpoint/history-reader.js";
import { dropRanges, pushSeq, sharedSeqPrefix, truncateRanges, type SeqRange, type StoredList } from "../../checkpoint/list-history.js";
import { LruMap } from "../../checkpoint/lru-map.js";
import { blobRows, historyPage, type KnownItems, knownItems, logItems, prefetchItems } from "./history.js";
import { batchBytes, blobKey, ITEMS_TYPE, resolvedRows, VALUES_TYPE, type BlobRow, type ChannelValue } from "./value-batch.js";
import { CHECKPOINT_MIGRATIONS, inTransaction, migrate } from "./schema.js";
import { packed, unpacked } from "./packing.js";
import { isWritesBatch, unframeWrites, writeRows, type PlannedWrite } from "./write-batch.js";
import {
  CHANNEL_VERSIONS_CTE,
  readVersions,
  storedBase,
  storedVersions,
  versionsChain,
  versionsText,
  type VersionsBase,
} from "./versions.js";
import {
  insertItemsSql,
  ItemRows,
  jsonArrayOf,
  LOG_REFS_TYPE,
  OBJECT_REFS_TYPE,
  objectRefsBytes,
  parseObjectRefs,
  pushSpan,
  REF_TARGET_JOIN,
  resolvedItem,
  spanItems,
  WRITES_LOG_PREFIX,
  type LogSpan,
  type ObjectRefs,
} from "./item-logs.js";
import { makeItemRef } from "../../checkpoint/item-refs.js";
import { sameEncoding } from "../../checkpoint/item-framing.js";
import { isObject } from "../../checkpoint/item-codec.js";
import {
  assembleTuple,
  channelKey,
  metadataMatches,
  START,
  threadNamespaceOf,
  withoutId,
  type ThreadNamespace,
} from "../../checkpoint/saver-common.js";

/** Threads × namespaces × list channels whose last written version is kept for diffing. */
const REMEMBERED_LISTS = 256;
const LIST_PAGE_SIZE = 100;
/** PostgreSQL's code for a unique key violation. */
const UNIQUE_VIOLATION = "23505";

/** Work done in the transaction of a checkpoint write (see `addWriteHook`). */
export interface PostgresWriteHook {
  /** Whether there is work to do. */
  pending(): boolean;
  write(client: pg.ClientBase): Promise<void>;
}

/** One row of the tuple query: which part of the tuple it carries, in the columns that part uses. */
interface TupleRow {
  part: number;
  ord: string | null;
  channel: string | null;
  a: string | null;
  b: string | null;
  type: string | null;
  data: Buffer | null;
  extra: string | null;
  type2: string | null;
  data2: Buffer | null;
  n: number | null;
}

/**
 * A checkpoint with everything its tuple needs, in one statement (one snapshot, one round trip):
 * part 0 the checkpoint row (`channel`: its versions chain, see versions.ts), 1 the blob rows at
 * its channel versions (`a`: the version; a row may hold other channels' values, see
 * value-batch.ts), 2 the items of its list versions but those the saver holds
 * ($4, $5: channels and versions; a reference comes with the item it refers to, see
 * item-logs.ts), 3 its pending writes, 4 the sends pending on its parent (checkpoints of format
 * < 4 kept them there).
 */
const TUPLE_SQL = `
WITH cp AS (
  SELECT c.*, ${versionsChain("c", "$1", "$2")} AS version_chain FROM (
    SELECT * FROM loopgraph_checkpoints
    WHERE thread_id = $1 AND checkpoint_ns = $2 AND ($3::text IS NULL OR checkpoint_id = $3)
    ORDER BY checkpoint_id DESC LIMIT 1
  ) c
), ${CHANNEL_VERSIONS_CTE}, v AS (
  SELECT b.channel, b.version, b.type, b.data, b.ranges FROM loopgraph_checkpoint_blobs b
  WHERE b.thread_id = $1 AND b.checkpoint_ns = $2 AND b.version IN (SELECT version FROM cv)
)
SELECT 0 AS part, NULL::bigint AS ord, cp.version_chain AS channel, cp.checkpoint_id AS a, cp.parent_checkpoint_id AS b,
       cp.checkpoint_type AS type, cp.checkpoint AS data, cp.channel_versions AS extra, cp.metadata_type AS type2, cp.metadata AS data2, NULL::integer AS n
  FROM cp
UNION ALL
SELECT 1, NULL, v.channel, v.version, NULL, v.type, v.data, v.ranges, NULL, NULL, NULL FROM v
UNION ALL
SELECT 2, r.ord, v.channel, NULL, NULL, i.type, i.data, NULL, t.type, t.data, i.seq
  FROM v JOIN cv ON cv.channel = v.channel AND cv.version = v.version
  CROSS JOIN LATERAL json_array_elements(v.ranges::json) WITH ORDINALITY AS r(span, ord)
  JOIN loopgraph_checkpoint_items i
    ON i.thread_id = $1 AND i.checkpoint_ns = $2 AND i.channel = v.channel
   AND i.seq >= (r.span->>0)::integer AND i.seq < (r.span->>1)::integer
  ${REF_TARGET_JOIN}
  WHERE v.ranges IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM unnest($4::text[], $5::text[]) AS k(channel, version) WHERE k.channel = v.channel AND k.version = v.version)
UNION ALL
SELECT 3, NULL, w.channel, w.task_id, w.task_path, w.type, w.value, NULL, NULL, NULL, w.idx
  FROM cp JOIN loopgraph_checkpoint_writes w
    ON w.thread_id = cp.thread_id AND w.checkpoint_ns = cp.checkpoint_ns AND w.checkpoint_id = cp.checkpoint_id
UNION ALL
SELECT 4, NULL, w.channel, w.task_id, w.task_path, w.type, w.value, NULL, NULL, NULL, w.idx
  FROM cp JOIN loopgraph_checkpoint_writes w
    ON w.thread_id = cp.thread_id AND w.checkpoint_ns = cp.checkpoint_ns AND w.checkpoint_id = cp.parent_checkpoint_id AND w.channel = '${TASKS}'`;

/** A channel value as read: a single value, or a list version's items and where they are in the log. */
type ReadValue =
  | { readonly kind: "value"; readonly type: string; readonly data: Uint8Array }
  /** A graph input whose arrays are stored as spans of item logs, their items read. */
  | { readonly kind: "input"; readonly rest: Uint8Array; readonly props: readonly (readonly [string, readonly EncodedItem[]])[] }
  | { readonly kind: "list"; readonly version: string; readonly ranges: readonly SeqRange[]; readonly items: readonly EncodedItem[] };

interface ReadWrite {
  readonly taskId: string;
  readonly taskPath: string;
  readonly idx: number;
  readonly channel: string;
  readonly type: string;
  readonly value: Uint8Array;
}

/** A list version planned: its ranges in the log and the items to append there. */
interface PlannedList {
  readonly channel: string;
  readonly stored: StoredList & { readonly ranges: readonly SeqRange[] };
  readonly appended: readonly AppendedItem[];
}

/** An item a list version appends: stored as `reference` (to a logged item, see item-logs.ts) when given. */
interface AppendedItem {
  readonly seq: number;
  readonly encoded: EncodedItem;
  readonly reference?: { readonly stored: EncodedItem; readonly target: { readonly channel: string; readonly seq: number } };
}

/** The items of a planned array that were appended: their index in the array, their position in its log. */
type AppendedSeqs = readonly { readonly index: number; readonly seq: number }[];

/** Where an item this saver wrote sits in an item log of its thread namespace. */
interface LoggedItem {
  /** The saver's generation, thread and namespace: positions are valid while the thread was not deleted since. */
  readonly threadKey: string;
  readonly channel: string;
  readonly seq: number;
  readonly encoded: EncodedItem;
}

/** An array to store as spans of the item log `log`, each item's encoding made when it was written. */
interface PlannedArray {
  readonly log: string;
  readonly values: readonly unknown[];
  readonly encoded: readonly EncodedItem[];
}

/** A graph input with arrays of objects, planned for OBJECT_REFS_TYPE: its other properties as JSON, and its arrays. */
interface InputPlan {
  readonly rest: Uint8Array;
  readonly props: readonly (readonly [string, PlannedArray])[];
}

/** A value as stored (see packing.ts), as it was written. */
function storedValue(type: string, data: Buffer): { kind: "value"; type: string; data: Buffer } {
  const [valueType, bytes] = unpacked(type, data);
  return { kind: "value", type: valueType, data: bytes };
}

/**
 * Value rows of a checkpoint write, column by column (for `unnest`). A row with a `carrier` is
 * written only when the row of that channel at its version holding its value (see value-batch.ts)
 * is not: when that row was there already (the same version put again).
 */
interface BlobColumns {
  channels: string[];
  versions: string[];
  types: string[];
  data: (Buffer | null)[];
  ranges: (string | null)[];
  carriers: (string | null)[];
}

function pushBlob(
  columns: BlobColumns,
  channel: string,
  version: string,
  type: string,
  data: Buffer | null,
  ranges: string | null,
  carrier: string | null = null,
): void {
  columns.channels.push(channel);
  columns.versions.push(version);
  columns.types.push(type);
  columns.data.push(data);
  columns.ranges.push(ranges);
  columns.carriers.push(carrier);
}

/** Rows for the values of a version held by the row of `carrier`, each on its own, in case that row is not written. */
function pushSpilled(columns: BlobColumns, carrier: string, version: string, values: readonly ChannelValue[]): void {
  for (const value of values) pushBlob(columns, value.channel, version, ...packed(value.type, value.data), null, carrier);
}

/**
 * LangGraph checkpoint saver on PostgreSQL (node-postgres, a pool), in the store's delta format:
 * every channel value once per version; every item of a list channel (such as `messages`) once,
 * in the channel's item log, a list version being the ranges of its items there; a message
 * given as input or written by a task once for the input, the write and the list (item-logs.ts).
 * A thread's storage so grows with what it adds, not with its length times its steps. Rows are
 * kept few and small: a checkpoint's channel versions against a base (versions.ts), a task's
 * writes in one row (write-batch.ts), text compressed (packing.ts).
 *
 * Each write is one statement (atomic on its own, one round trip); reading a checkpoint with its
 * values, items and pending writes is one statement too. A thread is written by one process at a
 * time (its owner); a stale view of an item log (another process wrote the thread) fails the
 * write on the log's key and is planned again from the database.
 */
export class PostgresCheckpointSaver extends BaseCheckpointSaver implements HistoryReader {
  private readonly codec: ItemCodec;
  /** The list version last written or read per thread namespace and channel: the base of the next write. */
  private readonly lastLists = new LruMap<string, StoredList & { readonly ranges: readonly SeqRange[] }>(REMEMBERED_LISTS);
  /** The next free position of item logs this saver knows. */
  private readonly logEnds = new LruMap<string, number>(REMEMBERED_LISTS);
  /** The checkpoint each thread namespace's versions are stored against (see versions.ts). */
  private readonly versionBases = new LruMap<string, VersionsBase>(REMEMBERED_LISTS);
  private readonly writeHooks: PostgresWriteHook[] = [];
  /** Items this saver appended to an item log, so a later write or list version holding them again refers to them. */
  private readonly loggedItems = new WeakMap<object, LoggedItem>();
  /**
   * The writes in flight per thread namespace. LangGraph does not wait for one before the next:
   * a step's tasks start while its checkpoint is written, and the next checkpoint is put while
   * the last task's writes are. A write refers to the items of those before it (the start
   * task's write to the input's, the list to the writes') once they are done (see `tracked`).
   */
  private readonly inFlight = new Map<string, Set<Promise<unknown>>>();
  /** Counts deleteThread calls: log positions remembered before a deletion are not used after it. */
  private generation = 0;
  /** The rows of the channel versions the current page of `history` brings: what `readChannel` is asked for next. */
  private prefetched?: { at: ThreadNamespace; rows: ReadonlyMap<string, BlobRow>; items: KnownItems };
  /** Stored values decoded by `JSON.parse` where that gives what the serde gives (see plain-json.ts). */
  private readonly plainJson: PlainJsonReader;

  constructor(
    readonly pool: pg.Pool,
    serde?: SerializerProtocol,
  ) {
    super(serde);
    this.codec = new ItemCodec(this.serde, syncSerializerOf(this.serde));
    this.plainJson = new PlainJsonReader(this.serde, this.codec.sync);
  }

  /**
   * Adds work done in the transaction of every checkpoint write that finds it pending (a run's
   * records, written with the step they belong to): it commits or fails with the write.
   */
  addWriteHook(hook: PostgresWriteHook): void {
    this.writeHooks.push(hook);
  }

  /** One write statement: on its own, or in a transaction with the write hooks that have work pending. */
  private async execute<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params: unknown[]): Promise<R[]> {
    const hooks = this.writeHooks.filter((hook) => hook.pending());
    if (hooks.length === 0) return (await this.pool.query<R>(sql, params)).rows;
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<R>(sql, params);
      for (const hook of hooks) await hook.write(client);
      return rows;
    });
  }

  /** Creates or upgrades the saver's tables (safe to run from several processes at once). */
  async setup(): Promise<void> {
    await migrate(this.pool, "checkpoints", CHECKPOINT_MIGRATIONS);
  }

  override getNextVersion(current: number | undefined): number {
    return nextChannelVersion(current);
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const at = threadNamespaceOf(config);
    if (!at) return undefined;
    return this.readTuple(at, getCheckpointId(config) || undefined);
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { limit, before, filter } = options;
    const wanted = Object.entries(filter ?? {}).filter(([, value]) => value !== undefined);
    let remaining = limit ?? Number.POSITIVE_INFINITY;
    const pageSize = wanted.length === 0 && limit !== undefined ? limit : LIST_PAGE_SIZE;
    const conditions: string[] = [];
    const params: unknown[] = [];
    const where = (condition: string, value: unknown) => {
      params.push(value);
      conditions.push(condition.replace("?", `$${params.length}`));
    };
    const threadId = config.configurable?.thread_id as string | undefined;
    const ns = config.configurable?.checkpoint_ns as string | undefined;
    const checkpointId = getCheckpointId(config) || undefined;
    const beforeId = before?.configurable?.checkpoint_id as string | undefined;
    if (threadId !== undefined) where("thread_id = ?", String(threadId));
    if (ns !== undefined) where("checkpoint_ns = ?", ns);
    if (checkpointId !== undefined) where("checkpoint_id = ?", checkpointId);
    if (beforeId !== undefined) where("checkpoint_id < ?", beforeId);
    let cursor: [string, string, string] | undefined;
    while (remaining > 0) {
      const pageConditions = [...conditions];
      const pageParams = [...params];
      if (cursor) {
        pageParams.push(...cursor);
        const n = pageParams.length;
        pageConditions.push(`(checkpoint_id, thread_id, checkpoint_ns) < ($${n - 2}, $${n - 1}, $${n})`);
      }
      pageParams.push(pageSize);
      const { rows } = await this.pool.query<{
        thread_id: string;
        checkpoint_ns: string;
        checkpoint_id: string;
        metadata_type: string;
        metadata: Buffer;
      }>(
        `SELECT thread_id, checkpoint_ns, checkpoint_id, metadata_type, metadata FROM loopgraph_checkpoints
         ${pageConditions.length > 0 ? `WHERE ${pageConditions.join(" AND ")}` : ""}
         ORDER BY checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC LIMIT $${pageParams.length}`,
        pageParams,
      );
      for (const row of rows) {
        if (wanted.length > 0 && !(await metadataMatches(this.serde, ...unpacked(row.metadata_type, row.metadata), wanted))) continue;
        const tuple = await this.readTuple({ threadId: row.thread_id, ns: row.checkpoint_ns }, row.checkpoint_id);
        if (!tuple) continue;
        yield tuple;
        remaining -= 1;
        if (remaining <= 0) return;
      }
      if (rows.length < pageSize) return;
      const last = rows[rows.length - 1]!;
      cursor = [last.checkpoint_id, last.thread_id, last.checkpoint_ns];
    }
  }

  put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    return this.tracked(config, (earlier) => this.writeCheckpoint(config, checkpoint, metadata, newVersions, earlier));
  }

  /**
   * Runs `work` as a write of the config's thread namespace; `earlier` resolves once the writes
   * of the namespace started before it have settled (they never wait for later ones).
   */
  private tracked<T>(config: RunnableConfig, work: (earlier: () => Promise<void>) => Promise<T>): Promise<T> {
    const at = threadNamespaceOf(config);
    if (!at) return work(async () => undefined);
    const key = channelKey(at, "");
    let running = this.inFlight.get(key);
    if (!running) this.inFlight.set(key, (running = new Set()));
    const before = [...running];
    const settled = work(async () => {
      await Promise.allSettled(before);
    }).finally(() => {
      running.delete(settled);
      if (running.size === 0 && this.inFlight.get(key) === running) this.inFlight.delete(key);
    });
    running.add(settled);
    return settled;
  }

  private async writeCheckpoint(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
    earlier: () => Promise<void>,
  ): Promise<RunnableConfig> {
    if (!config.configurable) throw new Error("Empty configuration supplied.");
    const at = threadNamespaceOf(config);
    if (!at) throw new Error(`Missing "thread_id" field in passed "config.configurable".`);
    const parentId = getCheckpointId(config) || undefined;
    const { channel_values: values, channel_versions: versions, ...rest } = checkpoint;
    const [[checkpointType, checkpointBytes], [metadataType, metadataBytes]] = await Promise.all([
      this.serde.dumpsTyped(withoutId(rest)),
      this.serde.dumpsTyped(metadata),
    ]);
    const plain: (ChannelValue & { readonly version: string })[] = [];
    const listChannels: [string, string, unknown[]][] = [];
    const inputs: (InputPlan & { channel: string; version: string })[] = [];
    for (const [channel, newVersion] of Object.entries(newVersions)) {
      // A version with no value (a channel cleared or consumed) is stored as no row: read, it is absent either way.
      if (!Object.prototype.hasOwnProperty.call(values, channel)) continue;
      const value: unknown = values[channel];
      const input = channel === START ? await this.planInput(value) : undefined;
      if (input) {
        inputs.push({ channel, version: String(newVersion), ...input });
        continue;
      }
      if (Array.isArray(value)) {
        listChannels.push([channel, String(newVersion), value]);
        continue;
      }
      const [type, data] = await this.serde.dumpsTyped(value);
      plain.push({ channel, version: String(newVersion), type, data });
    }

    // Stored against the namespace's base when few versions changed (the base checked in the statement: else whole).
    const namespaceKey = channelKey(at, "");
    const base = this.versionBases.get(namespaceKey);
    const stored = storedVersions(versions, base);
    let whole = true;
    const write = async (): Promise<{ lists: PlannedList[]; logged: [PlannedArray, AppendedSeqs][] }> => {
      const lists = await this.planLists(at, parentId, listChannels);
      await this.readLogEnds(
        at,
        inputs.flatMap((input) => input.props.map(([, plan]) => plan.log)),
      );
      const all: BlobColumns = { channels: [], versions: [], types: [], data: [], ranges: [], carriers: [] };
      const items = new ItemRows();
      const logged: [PlannedArray, AppendedSeqs][] = [];
      for (const input of inputs) {
        const refs: ObjectRefs = { rest: Buffer.from(input.rest).toString("utf8"), props: {} };
        for (const [key, plan] of input.props) {
          // An input's items are appended: none is referred to, so none can be gone.
          const placed = this.placeArray(at, plan, items, false);
          refs.props[key] = placed.spans;
          logged.push([plan, placed.appended]);
        }
        pushBlob(all, input.channel, input.version, OBJECT_REFS_TYPE, objectRefsBytes(refs), null);
      }
      // The values of a version go in its first list row, else in one row when there are several (see value-batch.ts).
      const byVersion = new Map<string, ChannelValue[]>();
      for (const value of plain) byVersion.set(value.version, [...(byVersion.get(value.version) ?? []), value]);
      for (const list of lists) {
        const values = byVersion.get(list.stored.version);
        byVersion.delete(list.stored.version);
        pushBlob(
          all,
          list.channel,
          list.stored.version,
          ITEMS_TYPE,
          values ? batchBytes(values) : null,
          JSON.stringify(list.stored.ranges),
        );
        if (values) pushSpilled(all, list.channel, list.stored.version, values);
        for (const { seq, encoded, reference } of list.appended) items.push(list.channel, seq, encoded, reference);
      }
      for (const [version, values] of byVersion) {
        if (values.length > 1) {
          pushBlob(all, values[0]!.channel, version, VALUES_TYPE, batchBytes(values), null);
          pushSpilled(all, values[0]!.channel, version, values);
        } else pushBlob(all, values[0]!.channel, version, ...packed(values[0]!.type, values[0]!.data), null);
      }
      const [row] = await this.execute<{ whole: boolean }>(
        `WITH blobs AS (
           INSERT INTO loopgraph_checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, data, ranges)
           SELECT $1, $2, channel, version, type, data, ranges FROM unnest($3::text[], $4::text[], $5::text[], $6::bytea[], $7::text[], $24::text[])
             AS r(channel, version, type, data, ranges, carrier)
           WHERE carrier IS NULL
           ON CONFLICT DO NOTHING
           RETURNING channel, version
         ), spilled AS (
           INSERT INTO loopgraph_checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, data, ranges)
           SELECT $1, $2, channel, version, type, data, ranges FROM unnest($3::text[], $4::text[], $5::text[], $6::bytea[], $7::text[], $24::text[])
             AS r(channel, version, type, data, ranges, carrier)
           WHERE carrier IS NOT NULL AND NOT EXISTS (SELECT 1 FROM blobs WHERE blobs.channel = r.carrier AND blobs.version = r.version)
           ON CONFLICT DO NOTHING
         ), ${insertItemsSql(17)}
         INSERT INTO loopgraph_checkpoints
           (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type, checkpoint, channel_versions, versions_base, metadata_type, metadata)
         SELECT $1, $2, $8, $9, $10, $11, CASE WHEN base.found THEN $15 ELSE $12 END, CASE WHEN base.found THEN ${storedBase("$16", "$9::text")} END, $13, $14
         FROM (SELECT $16::text IS NOT NULL AND EXISTS (
           SELECT 1 FROM loopgraph_checkpoints WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $16
         ) AS found) base
         ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
           parent_checkpoint_id = EXCLUDED.parent_checkpoint_id, checkpoint_type = EXCLUDED.checkpoint_type, checkpoint = EXCLUDED.checkpoint,
           channel_versions = $12, versions_base = NULL, metadata_type = EXCLUDED.metadata_type, metadata = EXCLUDED.metadata
         RETURNING versions_base IS NULL AS whole`,
        [
          at.threadId,
          at.ns,
          all.channels,
          all.versions,
          all.types,
          all.data,
          all.ranges,
          checkpoint.id,
          parentId ?? null,
          ...packed(checkpointType, checkpointBytes),
          versionsText(versions),
          ...packed(metadataType, metadataBytes),
          stored.text,
          stored.base,
          ...items.params(),
          all.carriers,
        ],
      );
      whole = row?.whole ?? true;
      return { lists, logged };
    };

    // The items of the writes before it (a list may take them in) are known once they are done.
    if (listChannels.length > 0) await earlier();
    const { lists, logged } = await this.retryOnStaleLog(at, listChannels.length > 0 || inputs.length > 0, write);
    for (const [plan, appended] of logged) this.rememberLogged(at, plan, appended);
    const depth = whole || !base ? 0 : base.depth + 1;
    this.versionBases.set(namespaceKey, { checkpointId: checkpoint.id, versions: { ...versions }, depth });
    for (const list of lists) {
      this.lastLists.set(channelKey(at, list.channel), list.stored);
      const end = list.appended.at(-1);
      if (end) this.logEnds.set(channelKey(at, list.channel), end.seq + 1);
    }
    return { configurable: { thread_id: at.threadId, checkpoint_ns: at.ns, checkpoint_id: checkpoint.id } };
  }

  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    return this.tracked(config, (earlier) => this.writePending(config, writes, taskId, taskPath, earlier));
  }

  private async writePending(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath: string,
    earlier: () => Promise<void>,
  ): Promise<void> {
    if (!config.configurable) throw new Error("Empty configuration supplied.");
    const at = threadNamespaceOf(config);
    if (!at) throw new Error("Missing thread_id field in config.configurable.");
    const checkpointId = getCheckpointId(config);
    if (!checkpointId) throw new Error("Missing checkpoint_id field in config.configurable.");
    if (writes.length === 0) return;
    // Arrays of objects written to ordinary channels (new messages, say) go to an item log, where
    // the checkpoint that takes them in refers to them instead of storing a second copy.
    const planned = await Promise.all(
      writes.map(([channel, value]) => (channel.startsWith("__") ? undefined : this.planArray(channel, value))),
    );
    const serialized = await Promise.all(writes.map(([, value], index) => (planned[index] ? undefined : this.serde.dumpsTyped(value))));
    // The items of the writes before it (the input's, which an array may hold again) are known once they are done.
    if (planned.some(Boolean)) await earlier();
    // Special writes (errors, interrupts, ...) replace an earlier one of the same task; regular ones are written once.
    const replaceExisting = writes.every(([channel]) => channel in WRITES_IDX_MAP);
    const write = async (): Promise<{ logged: [PlannedArray, AppendedSeqs][] }> => {
      await this.readLogEnds(
        at,
        planned.flatMap((plan) => (plan ? [plan.log] : [])),
      );
      const items = new ItemRows();
      const logged: [PlannedArray, AppendedSeqs][] = [];
      const known: LogSpan[] = [];
      const rows = writeRows(
        writes.map(([channel], index): PlannedWrite => {
          const idx = WRITES_IDX_MAP[channel] ?? index;
          const plan = planned[index];
          if (!plan) {
            const [type, value] = serialized[index]!;
            return { idx, channel, type, value };
          }
          const placed = this.placeArray(at, plan, items, true);
          logged.push([plan, placed.appended]);
          known.push(...placed.known);
          return {
            idx,
            channel,
            type: LOG_REFS_TYPE,
            value: Buffer.from(JSON.stringify(placed.spans), "utf8"),
            // Stored whole instead when an item referred to is gone (another process deleted the thread).
            whole: { type: "json", value: jsonArrayOf(plan.encoded) },
          };
        }),
      );
      await this.execute(
        `WITH ${insertItemsSql(12)}, found AS (
           SELECT NOT EXISTS (
             SELECT 1 FROM json_array_elements($19::json) AS k(span)
             WHERE NOT EXISTS (
               SELECT 1 FROM loopgraph_checkpoint_items t
               WHERE t.thread_id = $1 AND t.checkpoint_ns = $2 AND t.channel = k.span->>0 AND t.seq = (k.span->>1)::integer
             )
           ) AS all_there
         )
         INSERT INTO loopgraph_checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value)
         SELECT $1, $2, $3, $4, $5, w.idx, w.channel,
                CASE WHEN found.all_there OR w.whole_type IS NULL THEN w.type ELSE w.whole_type END,
                CASE WHEN found.all_there OR w.whole_type IS NULL THEN w.value ELSE w.whole_value END
         FROM unnest($6::integer[], $7::text[], $8::text[], $9::bytea[], $10::text[], $11::bytea[]) AS w(idx, channel, type, value, whole_type, whole_value),
              found
         ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO ${
           replaceExisting ? "UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, value = EXCLUDED.value" : "NOTHING"
         }`,
        [
          at.threadId,
          at.ns,
          checkpointId,
          taskId,
          taskPath,
          rows.map((row) => row.idx),
          rows.map((row) => row.channel),
          rows.map((row) => row.type),
          rows.map((row) => row.value),
          rows.map((row) => row.wholeType),
          rows.map((row) => row.wholeValue),
          ...items.params(),
          // Each item referred to, as a span of one.
          JSON.stringify(known),
        ],
      );
      return { logged };
    };
    const { logged } = await this.retryOnStaleLog(at, planned.some(Boolean), write);
    for (const [plan, appended] of logged) this.rememberLogged(at, plan, appended);
  }

  /**
   * The thread's checkpoints (in `ns`), oldest first, with their metadata and channel versions
   * but no channel value (see walkHistory).
   */
  async *history(threadId: string, ns = "", channels = everyChannel, span: HistorySpan = {}): AsyncGenerator<CheckpointHistoryEntry> {
    const at = { threadId, ns };
    try {
      yield* walkHistory(
        {
          readPage: (after, limit) => historyPage(this.pool, at, after, limit),
          loads: (type, data) => this.plainJson.loads(type, data),
          prefetch: async (versions) => {
            const rows = await blobRows(this.pool, at, versions);
            // The items the page's list versions add are read with it: the walk keeps them until it ends.
            const earlier = this.prefetched;
            const items = earlier?.at.threadId === at.threadId && earlier.at.ns === at.ns ? earlier.items : new Map();
            await prefetchItems(this.pool, at, rows.values(), ITEMS_TYPE, items);
            this.prefetched = { at, rows, items };
          },
        },
        channels,
        span,
      );
    } finally {
      this.prefetched = undefined;
    }
  }

  /**
   * One channel version as stored, undefined when it holds no value (cleared, or never stored).
   * A list version is read past the log positions it shares with `known.previous` (the parent's
   * version, typically), whose items it then reuses: a thread's history reads each item once.
   */
  async readChannel(
    threadId: string,
    channel: string,
    version: string,
    known: KnownVersions = {},
    ns = "",
  ): Promise<StoredChannel | undefined> {
    const at = { threadId, ns };
    const prefetched = this.prefetched?.at.threadId === threadId && this.prefetched.at.ns === ns ? this.prefetched : undefined;
    const row =
      prefetched?.rows.get(blobKey(channel, version)) ??
      (await blobRows(this.pool, at, [[channel, version]])).get(blobKey(channel, version));
    if (!row) return undefined;
    if (row.type === OBJECT_REFS_TYPE)
      throw new Error(`channel "${channel}" holds a graph input stored by reference: read it with getTuple`);
    if (row.type !== ITEMS_TYPE) return storedValue(row.type, row.data!);
    const ranges = JSON.parse(row.ranges!) as SeqRange[];
    const { previous } = known;
    const shared = previous?.ranges ? sharedSeqPrefix(previous.ranges, ranges) : 0;
    const rest = dropRanges(ranges, shared);
    const added = knownItems(prefetched?.items, channel, rest) ?? (await logItems(this.pool, at, channel, rest));
    return { kind: "list", items: shared > 0 ? previous!.items.slice(0, shared).concat(added) : added, ranges };
  }

  /** Decodes a channel value as `getTuple` does (see `readTuple`). */
  async decodeChannel(stored: StoredChannel): Promise<DecodedChannel> {
    return stored.kind === "value" ? this.plainJson.decode(stored.type, stored.data) : { value: await this.codec.decode(stored.items) };
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.pool.query(
      `WITH a AS (DELETE FROM loopgraph_checkpoints WHERE thread_id = $1),
            b AS (DELETE FROM loopgraph_checkpoint_blobs WHERE thread_id = $1),
            c AS (DELETE FROM loopgraph_checkpoint_items WHERE thread_id = $1)
       DELETE FROM loopgraph_checkpoint_writes WHERE thread_id = $1`,
      [threadId],
    );
    this.forgetThread(threadId);
    this.generation += 1;
  }

  private forgetThread(threadId: string): void {
    const prefix = `${threadId}\u0000`;
    this.lastLists.deleteWhere((key) => key.startsWith(prefix));
    this.logEnds.deleteWhere((key) => key.startsWith(prefix));
    this.versionBases.deleteWhere((key) => key.startsWith(prefix));
  }

  /**
   * Runs a write that appends to item logs; when another process appended to one of them since
   * this saver read its end (the append collides on the log's key), forgets what it knew of the
   * thread and runs it again, planned from the database.
   */
  private async retryOnStaleLog<T>(at: ThreadNamespace, appends: boolean, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      this.forgetThread(at.threadId);
      if ((error as { code?: string }).code !== UNIQUE_VIOLATION || !appends) throw error;
      return write();
    }
  }

  /** Reads the ends of the item logs this saver does not know yet. */
  private async readLogEnds(at: ThreadNamespace, logs: readonly string[]): Promise<void> {
    const unknown = [...new Set(logs)].filter((log) => !this.logEnds.has(channelKey(at, log)));
    if (unknown.length === 0) return;
    const { rows } = await this.pool.query<{ channel: string; next: number }>(
      `SELECT channel, max(seq) + 1 AS next FROM loopgraph_checkpoint_items
       WHERE thread_id = $1 AND checkpoint_ns = $2 AND channel = ANY($3::text[]) GROUP BY channel`,
      [at.threadId, at.ns, unknown],
    );
    const ends = new Map(rows.map((row) => [row.channel, Number(row.next)]));
    for (const log of unknown) this.logEnds.set(channelKey(at, log), ends.get(log) ?? 0);
  }

  private threadKey(at: ThreadNamespace): string {
    return `${this.generation}\u0000${channelKey(at, "")}`;
  }

  /**
   * Plans an array (of a pending write, or a property of the graph input) to be stored as spans
   * of the item log `__writes__:<channel>` (see `placeArray`). Undefined when the array is not one of objects
   * encoded as JSON, or the serde has no synchronous twin. Encodings are made afresh: a reducer
   * may still change these objects (messages get their ids) before they are checkpointed.
   */
  private async planArray(channel: string, value: unknown): Promise<PlannedArray | undefined> {
    if (!this.codec.sync || !Array.isArray(value) || value.length === 0 || !value.every(isObject)) return undefined;
    // Each item is written now (the serde writes before its first await): a later change to it is not what this write holds.
    const encoded = await Promise.all(
      value.map(async (item): Promise<EncodedItem> => {
        const [type, bytes] = await this.serde.dumpsTyped(item);
        return { type, bytes };
      }),
    );
    if (encoded.some((item) => item.type !== "json")) return undefined;
    return { log: `${WRITES_LOG_PREFIX}${channel}`, values: value, encoded };
  }

  /** A graph input (a plain object) with arrays of objects, planned for OBJECT_REFS_TYPE; undefined for any other value. */
  private async planInput(value: unknown): Promise<InputPlan | undefined> {
    if (!this.codec.sync || !isObject(value) || Object.getPrototypeOf(value) !== Object.prototype) return undefined;
    const rest: Record<string, unknown> = {};
    const props: [string, PlannedArray][] = [];
    for (const [key, item] of Object.entries(value)) {
      const plan = key.startsWith("__") ? undefined : await this.planArray(key, item);
      if (plan) props.push([key, plan]);
      else rest[key] = item;
    }
    if (props.length === 0) return undefined;
    const [type, bytes] = await this.serde.dumpsTyped(rest);
    return type === "json" ? { rest: bytes, props } : undefined;
  }

  /**
   * Places a planned array in its log: items this saver logged already (byte for byte), when
   * `refer`, are referred to, the others appended to `items`. Its spans, what it appends and
   * what it refers to.
   */
  private placeArray(
    at: ThreadNamespace,
    plan: PlannedArray,
    items: ItemRows,
    refer: boolean,
  ): { spans: LogSpan[]; appended: AppendedSeqs; known: LogSpan[] } {
    const key = channelKey(at, plan.log);
    const threadKey = this.threadKey(at);
    let next = this.logEnds.get(key) ?? 0;
    const spans: LogSpan[] = [];
    const appended: { index: number; seq: number }[] = [];
    const known: LogSpan[] = [];
    plan.encoded.forEach((encoded, index) => {
      const logged = refer ? this.loggedItems.get(plan.values[index] as object) : undefined;
      if (logged && logged.threadKey === threadKey && sameEncoding(logged.encoded, encoded)) {
        pushSpan(spans, logged.channel, logged.seq);
        known.push([logged.channel, logged.seq, logged.seq + 1]);
        return;
      }
      items.push(plan.log, next, encoded);
      appended.push({ index, seq: next });
      pushSpan(spans, plan.log, next);
      next += 1;
    });
    this.logEnds.set(key, next);
    return { spans, appended, known };
  }

  /** Remembers where the items of a placed array went. */
  private rememberLogged(at: ThreadNamespace, plan: PlannedArray, appended: AppendedSeqs): void {
    const threadKey = this.threadKey(at);
    for (const { index, seq } of appended) {
      this.loggedItems.set(plan.values[index] as object, { threadKey, channel: plan.log, seq, encoded: plan.encoded[index]! });
    }
  }

  /**
   * Plans each list channel's new version against the version last written or read (else its
   * parent checkpoint's): the items it shares with that version are kept by their log ranges, the
   * rest are appended to the log.
   */
  private async planLists(
    at: ThreadNamespace,
    parentId: string | undefined,
    lists: readonly [string, string, unknown[]][],
  ): Promise<PlannedList[]> {
    if (lists.length === 0) return [];
    // Reading the parent's tuple remembers its list versions as bases (see rememberRead).
    if (parentId !== undefined && lists.some(([channel]) => !this.lastLists.has(channelKey(at, channel))))
      await this.readTuple(at, parentId);
    await this.readLogEnds(
      at,
      lists.map(([channel]) => channel),
    );
    const threadKey = this.threadKey(at);
    const planned: PlannedList[] = [];
    for (const [channel, version, value] of lists) {
      const key = channelKey(at, channel);
      const previous = this.lastLists.get(key);
      const { shared, encoded, encode } = await this.codec.diff(value, previous);
      const ranges = previous ? truncateRanges(previous.ranges, shared) : [];
      let next = this.logEnds.get(key) ?? 0;
      const appended: AppendedItem[] = [];
      for (let i = shared; i < value.length; i++) {
        const item = value[i];
        const itemEncoding = encode(item);
        encoded.push(itemEncoding);
        // Logged as a pending write or input: stored as a reference to it and the bytes that differ.
        const logged = isObject(item) ? this.loggedItems.get(item) : undefined;
        const stored = logged?.threadKey === threadKey ? makeItemRef(logged.channel, logged.seq, logged.encoded, itemEncoding) : undefined;
        appended.push({
          seq: next,
          encoded: itemEncoding,
          ...(stored ? { reference: { stored, target: { channel: logged!.channel, seq: logged!.seq } } } : {}),
        });
        pushSeq(ranges, next);
        next += 1;
      }
      planned.push({ channel, stored: { version, encoded, values: value.slice(), ranges }, appended });
    }
    return planned;
  }

  private async readTuple(at: ThreadNamespace, checkpointId: string | undefined): Promise<CheckpointTuple | undefined> {
    // The list versions this saver holds (the last written or read) are not read again.
    const known = this.knownLists(at);
    const { rows } = await this.pool.query<TupleRow>(TUPLE_SQL, [
      at.threadId,
      at.ns,
      checkpointId ?? null,
      [...known.keys()],
      [...known.values()].map((list) => list.version),
    ]);
    const head = rows.find((row) => row.part === 0);
    if (!head) return undefined;
    const id = head.a!;
    const parentId = head.b;
    const channelVersions = readVersions(head.channel!);

    const values = new Map<string, ReadValue>();
    const stored = resolvedRows(
      rows
        .filter((row) => row.part === 1)
        .map((row): BlobRow => ({ channel: row.channel!, version: row.a!, type: row.type!, data: row.data, ranges: row.extra })),
    );
    const itemsOf = new Map<string, EncodedItem[]>();
    for (const row of rows.filter((item) => item.part === 2).sort((x, y) => Number(x.ord) - Number(y.ord) || x.n! - y.n!)) {
      let items = itemsOf.get(row.channel!);
      if (!items) itemsOf.set(row.channel!, (items = []));
      items.push(resolvedItem(row.type!, row.data!, row.type2, row.data2));
    }
    // Arrays of inputs and pending writes stored as spans of item logs: their items, read in one more statement.
    const spanReads: { spans: LogSpan[]; items?: EncodedItem[] }[] = [];
    const readSpans = (spans: LogSpan[]) => {
      const read: { spans: LogSpan[]; items?: EncodedItem[] } = { spans };
      spanReads.push(read);
      return read;
    };
    const inputs = new Map<string, { rest: string; props: [string, { items?: EncodedItem[] }][] }>();
    for (const [channel, version] of Object.entries(channelVersions)) {
      const row = stored.get(blobKey(channel, String(version)));
      if (!row) continue;
      if (row.type === OBJECT_REFS_TYPE) {
        const refs = parseObjectRefs(row.data!);
        inputs.set(channel, { rest: refs.rest, props: Object.entries(refs.props).map(([key, spans]) => [key, readSpans(spans)]) });
        continue;
      }
      if (row.type !== ITEMS_TYPE) {
        values.set(channel, storedValue(row.type, row.data!));
        continue;
      }
      const held = known.get(channel);
      values.set(channel, {
        kind: "list",
        version: row.version,
        ranges: JSON.parse(row.ranges!) as SeqRange[],
        items: held?.version === row.version ? held.encoded : (itemsOf.get(channel) ?? []),
      });
    }
    const writes = (part: number) =>
      rows
        .filter((row) => row.part === part)
        .flatMap((row): ReadWrite[] => {
          const [type, value] = unpacked(row.type!, row.data!);
          const task = { taskId: row.a!, taskPath: row.b ?? "" };
          if (isWritesBatch(type)) return unframeWrites(value).map((write) => ({ ...task, ...write }));
          return [{ ...task, idx: row.n!, channel: row.channel!, type, value }];
        })
        .sort((x, y) => compareWritesSortKeys(writesSortKey(x.taskPath, x.taskId, x.idx), writesSortKey(y.taskPath, y.taskId, y.idx)));

    const pending = writes(3).map((write) => ({
      write,
      logged: write.type === LOG_REFS_TYPE ? readSpans(JSON.parse(Buffer.from(write.value).toString("utf8")) as LogSpan[]) : undefined,
    }));
    if (spanReads.length > 0) {
      const all = await spanItems(
        this.pool,
        at,
        spanReads.flatMap((read) => read.spans),
      );
      let offset = 0;
      for (const read of spanReads) {
        const length = read.spans.reduce((sum, [, start, end]) => sum + end - start, 0);
        read.items = all.slice(offset, offset + length);
        offset += length;
      }
    }
    for (const [channel, input] of inputs) {
      values.set(channel, {
        kind: "input",
        rest: Buffer.from(input.rest, "utf8"),
        props: input.props.map(([key, read]) => [key, read.items!] as const),
      });
    }

    const [header, metadata, pendingWrites] = await Promise.all([
      this.plainJson.loads(...unpacked(head.type!, head.data!)) as Promise<Omit<Checkpoint, "channel_values" | "channel_versions">>,
      this.plainJson.loads(...unpacked(head.type2!, head.data2!)) as Promise<CheckpointMetadata>,
      Promise.all(
        pending.map(
          async ({ write, logged }): Promise<CheckpointPendingWrite> => [
            write.taskId,
            write.channel,
            logged ? await decodeItems(logged.items!, this.serde, this.codec.sync) : await this.plainJson.loads(write.type, write.value),
          ],
        ),
      ),
    ]);
    return assembleTuple({
      at,
      id,
      parentId,
      header,
      metadata,
      pendingWrites,
      channelVersions,
      values: [...values].map(([channel, value]) => [channel, this.decodeValue(value)] as const),
      onSettled: (channel, item) => {
        const value = values.get(channel)!;
        if (value.kind === "list" && Array.isArray(item)) this.rememberRead(at, channel, value, item);
      },
      parentSends: () => Promise.all(writes(4).map((send) => this.serde.loadsTyped(send.type, send.value))),
      nextVersion: () => this.getNextVersion(undefined),
    });
  }

  private decodeValue(value: ReadValue): unknown {
    if (value.kind === "value") return this.plainJson.loads(value.type, value.data);
    if (value.kind === "list") return this.codec.decode(value.items);
    return (async () => {
      const input = (await this.plainJson.loads("json", value.rest)) as Record<string, unknown>;
      for (const [key, items] of value.props) input[key] = await decodeItems(items, this.serde, this.codec.sync);
      return input;
    })();
  }

  /** The list versions this saver holds for the thread namespace, by channel. */
  private knownLists(at: ThreadNamespace): Map<string, StoredList> {
    const prefix = channelKey(at, "");
    const known = new Map<string, StoredList>();
    for (const key of [...this.lastLists.keys()]) {
      if (key.startsWith(prefix)) known.set(key.slice(prefix.length), this.lastLists.get(key)!);
    }
    return known;
  }

  /**
   * A list version read (a resumed run's state, typically) becomes the base its channel's next
   * write is planned against when this saver has none: its items are then known by identity.
   */
  private rememberRead(at: ThreadNamespace, channel: string, value: Extract<ReadValue, { kind: "list" }>, items: readonly unknown[]): void {
    const key = channelKey(at, channel);
    if (this.lastLists.has(key)) return;
    this.lastLists.set(key, { version: value.version, encoded: value.items, values: items.slice(), ranges: value.ranges });
  }
}
