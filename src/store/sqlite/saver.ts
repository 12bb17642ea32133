import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  getCheckpointId,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import { nextChannelVersion } from "../../checkpoint/channel-versions.js";
import {
  CheckpointStore,
  type BlobLink,
  type BlobWrite,
  type CheckpointRow,
  type ListCursor,
  type StoredWrite,
  type WriteRow,
} from "./checkpoint-store.js";
import { decodeItems, syncSerializerOf, type SyncSerializer } from "../../checkpoint/fast-serde.js";
import { sameEncoding, type EncodedItem } from "../../checkpoint/item-framing.js";
import { makeItemRef } from "../../checkpoint/item-refs.js";
import { LogReader, type LogItems } from "./log-items.js";
import {
  dropRanges,
  isListRow,
  materializeList,
  sharedSeqPrefix,
  pushSeq,
  truncateRanges,
  type ChainLink,
  type ListPlan,
  type SeqRange,
  type StoredList,
  type TailItem,
} from "../../checkpoint/list-history.js";
import { isObject, ItemCodec } from "../../checkpoint/item-codec.js";
import { LruMap } from "../../checkpoint/lru-map.js";
import { PlainJsonReader } from "../../checkpoint/plain-json.js";
import {
  assembleTuple,
  channelKey,
  metadataMatches,
  START,
  threadNamespaceOf,
  withoutId,
  type ThreadNamespace,
} from "../../checkpoint/saver-common.js";
import { prepareDatabase } from "./checkpoint-schema.js";
import {
  everyChannel,
  walkHistory,
  type HistorySpan,
  type CheckpointHistoryEntry,
  type DecodedChannel,
  type HistoryReader,
  type KnownVersions,
  type StoredChannel,
} from "../../checkpoint/history-reader.js";

/** A channel value as stored, before the serde decodes it. */
type StoredValue =
  | { readonly kind: "value"; readonly type: string; readonly data: Uint8Array }
  | { readonly kind: "list"; readonly list: StoredList }
  /** A graph input whose arrays were stored by reference, their items read. */
  | { readonly kind: "input"; readonly rest: Uint8Array; readonly props: readonly [string, readonly EncodedItem[]][] }
  /** A list version of the item log, located in its chunks. */
  | { readonly kind: "log"; readonly version: string; readonly ranges: readonly SeqRange[]; readonly items: LogItems };

/** A pending write as read: with its items when it refers to item logs. */
type StoredWriteRow = WriteRow & { readonly items?: readonly EncodedItem[] };

/** Everything one checkpoint tuple needs, read in one transaction. */
interface StoredTuple {
  readonly row: CheckpointRow;
  readonly channelVersions: ChannelVersions;
  readonly values: ReadonlyMap<string, StoredValue>;
  readonly writes: readonly StoredWriteRow[];
}

/** A graph input whose arrays are stored by reference (see OBJECT_REFS_TYPE). */
interface PlannedInput {
  readonly channel: string;
  readonly version: string;
  readonly rest: Uint8Array;
  readonly props: readonly [string, PlannedRefs][];
}

interface PlannedList {
  readonly channel: string;
  readonly cacheKey: string;
  readonly plan: ListPlan;
}

/** A list version as written: what the saver remembers, and the log positions of its new items. */
interface WrittenList {
  readonly stored: StoredList;
  /** The index (in the list) of the first item of `tailSeqs`. */
  readonly tailStart: number;
  readonly tailSeqs: readonly number[];
}

/** Where an item this saver wrote sits in an item log (of its thread). */
interface LoggedItem {
  /** `generation` and thread: positions are valid while the thread was not deleted since. */
  readonly threadKey: string;
  readonly ns: string;
  readonly channel: string;
  readonly seq: number;
  readonly encoded: EncodedItem;
}

/** Items at [start, end) of the item log of (ns, channel) of the thread. */
type LogRef = [ns: string, channel: string, start: number, end: number];

/** A task's pending writes waiting for the next write transaction, and its caller's promise. */
interface QueuedWrites {
  readonly rows: readonly StoredWrite[];
  readonly replaceExisting: boolean;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Pending writes and graph inputs log their arrays' items under the channel's name with this
 * prefix (LangGraph reserves names starting with "__": no channel of a graph has one).
 */
const WRITES_LOG_PREFIX = "__writes__:";
/** A pending write's array value, stored as references into item logs (data: JSON `LogRef[]`). */
const LOG_REFS_TYPE = "loopgraph:log-refs";
/** A graph input (the `__start__` channel), its arrays stored as references into item logs (data: JSON `ObjectRefs`). */
const OBJECT_REFS_TYPE = "loopgraph:object-refs";

interface ObjectRefs {
  /** The object without the properties in `props`, serialized as JSON by the serde. */
  rest: string;
  props: Record<string, LogRef[]>;
}

/** An array to store by reference: each item's encoding, and where it is logged already, if it is. */
interface PlannedRefs {
  /** The log items not logged yet are appended to (a channel of the thread namespace written). */
  readonly channel: string;
  readonly values: readonly unknown[];
  readonly encoded: readonly EncodedItem[];
  readonly known: readonly (LoggedItem | undefined)[];
}

const LIST_PAGE_SIZE = 100;
/** Checkpoints in the first page of a `list` without limit (a caller often takes only the first few). */
const FIRST_LIST_PAGE = 10;
/** Threads × namespaces × list channels whose last written version is kept for diffing. */
const REMEMBERED_LISTS = 64;

/**
 * LangGraph checkpoint saver on SQLite (better-sqlite3).
 *
 * Channel values live apart from checkpoints, once per channel version; list channels (such as
 * `messages`) are stored as deltas of the previous version, so a thread's storage grows linearly
 * with its history rather than quadratically. See list-history.ts for the delta scheme.
 */
export class SqliteCheckpointSaver extends BaseCheckpointSaver implements HistoryReader {
  /** The open database; other tables of the application may share it. */
  readonly db: Database.Database;
  private readonly ownsDatabase: boolean;
  private readonly store: CheckpointStore;
  private readonly lastWrittenLists = new LruMap<string, StoredList>(REMEMBERED_LISTS);
  /** List items to and from their stored form, encodings remembered (see item-codec.ts). */
  private readonly codec: ItemCodec;
  /** The channel rows `history` read ahead for its current page (see `history`). */
  private prefetched?: { at: ThreadNamespace; links: ReadonlyMap<string, BlobLink> };
  /** Stored values decoded by `JSON.parse` where that gives what the serde gives (see plain-json.ts). */
  private readonly plainJson: PlainJsonReader;
  /** Items this saver appended to an item log, so a later version holding them again refers to them. */
  private readonly loggedItems = new WeakMap<object, LoggedItem>();
  /** Counts deleteThread calls: log positions remembered before a deletion are not used after it. */
  private generation = 0;
  /** The serde's synchronous twin, when it has one (see fast-serde.ts). */
  private readonly sync: SyncSerializer | undefined;
  /** Pending writes waiting to commit with the next write transaction (see putWrites), oldest first. */
  private readonly queuedWrites: QueuedWrites[] = [];
  private flushScheduled = false;

  /**
   * Opens (creating its directory) the database file at a path, or uses an open database, which
   * the caller then closes. The database is prepared (WAL, busy timeout, the saver's tables)
   * unless `prepare` is false: the run store prepares its own, and opens some read-only.
   */
  constructor(database: string | Database.Database, serde?: SerializerProtocol, options: { prepare?: boolean } = {}) {
    super(serde);
    if (typeof database === "string") {
      mkdirSync(dirname(resolve(database)), { recursive: true });
      this.db = new Database(database);
      this.ownsDatabase = true;
    } else {
      this.db = database;
      this.ownsDatabase = false;
    }
    if (options.prepare !== false) prepareDatabase(this.db);
    this.store = new CheckpointStore(this.db);
    this.sync = syncSerializerOf(this.serde);
    this.codec = new ItemCodec(this.serde, this.sync);
    this.plainJson = new PlainJsonReader(this.serde, this.sync);
  }

  /**
   * Runs `hook` at the start of every write transaction of this saver (checkpoints, pending
   * writes, thread deletion): what it writes commits, or not, with them.
   */
  addWriteHook(hook: () => void): void {
    this.store.writeHooks.push(hook);
  }

  /** Closes the database if this saver opened it; pending writes still queued are written first. */
  close(): void {
    try {
      this.flushWrites();
    } finally {
      if (this.ownsDatabase) this.db.close();
    }
  }

  /**
   * Commits the pending writes still queued (see putWrites), in one transaction. Their callers
   * learn of a failure through their promises; it is thrown here too.
   */
  flushWrites(): void {
    if (this.queuedWrites.length > 0) this.writeTransaction(() => undefined);
  }

  /**
   * The store's write transaction, taking in the pending writes queued so far (written first, in
   * the order they came): they commit, or fail, with `work`, and their callers hear so after it.
   */
  private writeTransaction<T>(work: () => T): T {
    const batch = this.queuedWrites.splice(0);
    let result: T;
    try {
      result = this.store.writeTransaction(() => {
        for (const queued of batch) this.store.insertWrites(queued.rows, queued.replaceExisting);
        return work();
      });
    } catch (error) {
      for (const queued of batch) queued.reject(error);
      throw error;
    }
    for (const queued of batch) queued.resolve();
    return result;
  }

  /** A read on one snapshot of the database, after the pending writes still queued (so this saver reads what it was given). */
  private readTransaction<T>(work: () => T): T {
    try {
      this.flushWrites();
    } catch {
      // Their callers hear of it; the read goes on with what is stored.
    }
    return this.store.readTransaction(work);
  }

  override getNextVersion(current: number | undefined): number {
    return nextChannelVersion(current);
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const at = threadNamespaceOf(config);
    if (!at) return undefined;
    const checkpointId = getCheckpointId(config) || undefined;
    const stored = this.readTransaction(() => {
      const row = this.store.checkpoint(at, checkpointId);
      return row && this.readStoredTuples([row])[0];
    });
    return stored && this.decodeTuple(stored);
  }

  /**
   * Pages of checkpoints, newest first: with no filter, a page's rows and everything its tuples
   * need are read in one transaction, a page being at most what is left of `limit` (FIRST_LIST_PAGE
   * rows first without one, growing to LIST_PAGE_SIZE); values are decoded only for the tuples
   * yielded. With a filter, only the checkpoints whose metadata matches are read further.
   */
  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { limit, before, filter } = options;
    const wanted = Object.entries(filter ?? {}).filter(([, value]) => value !== undefined);
    let remaining = limit ?? Number.POSITIVE_INFINITY;
    const query = {
      threadId: config.configurable?.thread_id as string | undefined,
      ns: config.configurable?.checkpoint_ns as string | undefined,
      checkpointId: getCheckpointId(config) || undefined,
      beforeId: before?.configurable?.checkpoint_id as string | undefined,
    };
    let pageSize = wanted.length > 0 ? LIST_PAGE_SIZE : FIRST_LIST_PAGE;
    let cursor: ListCursor | undefined;
    while (remaining > 0) {
      const size = wanted.length > 0 ? pageSize : Math.min(pageSize, remaining);
      const { page, stored } = this.readTransaction(() => {
        const rows = this.store.listCheckpoints({ ...query, limit: size }, cursor);
        return { page: rows, stored: wanted.length === 0 ? this.readStoredTuples(rows) : undefined };
      });
      let tuples = stored;
      if (!tuples) {
        const matching: CheckpointRow[] = [];
        for (const row of page) if (await metadataMatches(this.serde, row.metadata_type, row.metadata, wanted)) matching.push(row);
        // Read again in one snapshot: a checkpoint deleted since (with its thread) is left out.
        tuples = this.readTransaction(() =>
          this.readStoredTuples(
            matching.flatMap((row) => this.store.checkpoint({ threadId: row.thread_id, ns: row.checkpoint_ns }, row.checkpoint_id) ?? []),
          ),
        );
      }
      for (const tuple of tuples) {
        yield await this.decodeTuple(tuple);
        remaining -= 1;
        if (remaining <= 0) return;
      }
      if (page.length < size) return;
      cursor = page[page.length - 1];
      pageSize = Math.min(pageSize * 4, LIST_PAGE_SIZE);
    }
  }

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    if (!config.configurable) throw new Error("Empty configuration supplied.");
    const at = threadNamespaceOf(config);
    if (!at) throw new Error(`Missing "thread_id" field in passed "config.configurable".`);
    const parentId = getCheckpointId(config) || undefined;
    const { channel_values: values, channel_versions: versions, ...rest } = checkpoint;

    const blobs: BlobWrite[] = [];
    const lists: PlannedList[] = [];
    const inputs: PlannedInput[] = [];
    const parentVersions = lazy(() => this.channelVersionsOf(at, parentId));
    for (const [channel, newVersion] of Object.entries(newVersions)) {
      const version = String(newVersion);
      // A version with no value (a channel cleared or consumed) is stored as no row: read, it is
      // absent either way, as from an "empty" row of earlier stores.
      if (!Object.prototype.hasOwnProperty.call(values, channel)) continue;
      const value: unknown = values[channel];
      const input = channel === START ? await this.planInput(at, value) : undefined;
      if (input) {
        inputs.push({ channel, version, ...input });
      } else if (Array.isArray(value)) {
        lists.push(await this.planListWrite(at, channel, version, value, parentVersions));
      } else {
        const [type, data] = await this.dumpsTyped(value);
        blobs.push({ channel, version, record: { kind: "value", type, data } });
      }
    }
    const [[checkpointType, checkpointBytes], [metadataType, metadataBytes]] = await Promise.all([
      this.dumpsTyped(withoutId(rest)),
      this.dumpsTyped(metadata),
    ]);

    const written = this.writeTransaction(() => {
      for (const blob of blobs) this.store.insertBlob(at, blob);
      const listsWritten = lists.map((list) => this.writeList(at, list));
      const inputsWritten = inputs.map((input) => this.writeInput(at, input));
      this.store.insertCheckpoint({
        thread_id: at.threadId,
        checkpoint_ns: at.ns,
        checkpoint_id: checkpoint.id,
        parent_checkpoint_id: parentId ?? null,
        checkpoint_type: checkpointType,
        checkpoint: checkpointBytes,
        channel_versions: JSON.stringify(versions),
        metadata_type: metadataType,
        metadata: metadataBytes,
      });
      return { lists: listsWritten, inputs: inputsWritten };
    });
    inputs.forEach((input, i) => {
      written.inputs[i]?.forEach((appended, j) => this.rememberRefs(at, input.props[j]![1], appended));
    });
    lists.forEach(({ channel, cacheKey, plan }, i) => {
      const list = written.lists[i];
      // Not written means the version already existed: what it holds is unknown here.
      if (!list) {
        this.lastWrittenLists.delete(cacheKey);
        return;
      }
      this.lastWrittenLists.set(cacheKey, list.stored);
      const threadKey = this.threadKey(at);
      list.tailSeqs.forEach((seq, j) => {
        const value = plan.values[list.tailStart + j];
        if (isObject(value))
          this.loggedItems.set(value, { threadKey, ns: at.ns, channel, seq, encoded: list.stored.encoded[list.tailStart + j]! });
      });
    });
    return { configurable: { thread_id: at.threadId, checkpoint_ns: at.ns, checkpoint_id: checkpoint.id } };
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    if (!config.configurable) throw new Error("Empty configuration supplied.");
    const at = threadNamespaceOf(config);
    if (!at) throw new Error("Missing thread_id field in config.configurable.");
    const checkpointId = getCheckpointId(config);
    if (!checkpointId) throw new Error("Missing checkpoint_id field in config.configurable.");
    // Arrays of objects written to ordinary channels (new messages, say) go to the channel's item
    // log, where the checkpoint that takes them in refers to them again instead of a second copy.
    const planned = await Promise.all(
      writes.map(([channel, value]) => (channel.startsWith("__") ? undefined : this.planRefs(at, channel, value))),
    );
    const serialized = await Promise.all(writes.map(([, value], index) => (planned[index] ? undefined : this.dumpsTyped(value))));
    // Special writes (errors, interrupts, ...) replace an earlier one of the same task; regular ones are written once.
    const replaceExisting = writes.every(([channel]) => channel in WRITES_IDX_MAP);
    const row = (index: number, channel: string, [type, value]: [string, Uint8Array]): StoredWrite => ({
      thread_id: at.threadId,
      checkpoint_ns: at.ns,
      checkpoint_id: checkpointId,
      task_id: taskId,
      task_path: taskPath,
      idx: WRITES_IDX_MAP[channel] ?? index,
      channel,
      type,
      value,
    });
    if (planned.every((refsPlan) => !refsPlan)) {
      // Nothing here feeds an item log, so nothing a checkpoint plans depends on them having been
      // written: they wait for the next write transaction, which is usually the checkpoint that
      // takes them in (LangGraph puts it right after the step's last task ends), or else one of
      // their own on the next turn of the event loop. One commit a step instead of two.
      const rows = writes.map(([channel], index) => row(index, channel, serialized[index]!));
      return new Promise((resolve, reject) => {
        this.queuedWrites.push({ rows, replaceExisting, resolve, reject });
        this.scheduleFlush();
      });
    }
    const appendedByWrite = this.writeTransaction(() => {
      const appended: (readonly { index: number; seq: number }[])[] = [];
      const rows = writes.map(([channel], index): StoredWrite => {
        const refsPlan = planned[index];
        if (!refsPlan) return row(index, channel, serialized[index]!);
        const written = this.writeRefs(at, refsPlan);
        appended[index] = written.appended;
        return row(index, channel, [LOG_REFS_TYPE, Buffer.from(JSON.stringify(written.refs), "utf8")]);
      });
      this.store.insertWrites(rows, replaceExisting);
      return appended;
    });
    planned.forEach((refsPlan, index) => {
      const appended = appendedByWrite[index];
      if (refsPlan && appended) this.rememberRefs(at, refsPlan, appended);
    });
  }

  /** Commits the queued pending writes on the next turn of the event loop, unless a write transaction took them in first. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      try {
        this.flushWrites();
      } catch {
        // Each queued write's caller hears of it through its promise.
      }
    });
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
          readPage: (after, limit) => this.readTransaction(() => this.store.historyPage(at, after, limit)),
          loads: (type, data) => this.plainJson.loads(type, data),
          prefetch: (versions) => {
            this.prefetched = { at, links: this.store.blobs(at, versions) };
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
   * A list version of the item log is read past the log positions it shares with `previous` (the
   * parent's version, typically), whose items it then reuses: a thread's history reads each item
   * once. A list version of a version-2 store is rebuilt from its row and its base's items:
   * `knownItems` may give those of a version the caller already holds, else the base chain is read.
   */
  readChannel(threadId: string, channel: string, version: string, known: KnownVersions = {}, ns = ""): StoredChannel | undefined {
    const { previous, knownItems = () => undefined } = known;
    const at = { threadId, ns };
    // Blobs are never changed once written: each read is one statement, no transaction needed.
    const prefetched = this.prefetched?.at.threadId === threadId && this.prefetched.at.ns === ns ? this.prefetched.links : undefined;
    const link = prefetched?.get(`${channel}\u0000${version}`) ?? this.store.blob(at, channel, version);
    const record = link?.record;
    if (!record || record.kind === "empty") return undefined;
    if (record.kind === "value" && record.type === OBJECT_REFS_TYPE) {
      throw new Error(`channel "${channel}" holds a graph input stored by reference: read it with getTuple`);
    }
    if (record.kind === "value") return record;
    // A list version of the item log: its items are read from the log's chunks (cached, never changed).
    if (record.kind === "items") {
      const shared = previous?.ranges ? sharedSeqPrefix(previous.ranges, record.ranges) : 0;
      const added = this.readLogItems(at, channel, dropRanges(record.ranges, shared)).encoded();
      const items = shared > 0 ? previous!.items.slice(0, shared).concat(added) : added;
      return { kind: "list", items, ranges: record.ranges };
    }
    // Lists of a version-2 store: a snapshot, or a delta or rollup on a base version.
    if (record.kind === "snapshot") return { kind: "list", items: record.items };
    const base = knownItems(record.baseVersion);
    if (base) return { kind: "list", items: base.slice(0, record.keep).concat(record.items) };
    const value = this.readValue(at, channel, version);
    if (value?.kind !== "list") throw new Error(`version ${version} of channel "${channel}" is not a list's history`);
    return { kind: "list", items: value.list.encoded };
  }

  /** Decodes a channel value exactly as `getTuple` and `list` do. */
  async decodeChannel(stored: StoredChannel): Promise<DecodedChannel> {
    return stored.kind === "value" ? this.plainJson.decode(stored.type, stored.data) : { value: await this.decodeStored(stored) };
  }

  /** The serde's `dumpsTyped`, without a promise where its synchronous twin writes the value (see fast-serde.ts). */
  private dumpsTyped(value: unknown): [string, Uint8Array] | Promise<[string, Uint8Array]> {
    return this.sync?.dumpsTypedSync(value) ?? this.serde.dumpsTyped(value);
  }

  private decodeStored(stored: StoredChannel): unknown {
    return this.decodeValue(stored.kind === "value" ? stored : { kind: "list", list: { version: "", encoded: stored.items } });
  }

  async deleteThread(threadId: string): Promise<void> {
    this.writeTransaction(() => this.store.deleteThread(threadId));
    this.generation += 1;
    this.lastWrittenLists.deleteWhere((key) => key.startsWith(`${threadId}\u0000`));
  }

  /**
   * Plans a list channel's new version against the version last written (or its parent's): the
   * items it shares with that version are kept by their log ranges, the rest are referred to
   * where this saver logged them already, or appended.
   */
  private async planListWrite(
    at: ThreadNamespace,
    channel: string,
    version: string,
    value: readonly unknown[],
    parentVersions: () => ChannelVersions,
  ): Promise<PlannedList> {
    const cacheKey = channelKey(at, channel);
    const remembered = this.lastWrittenLists.get(cacheKey) ?? this.readListVersion(at, channel, parentVersions()[channel]);
    // A version of the earlier formats has no log ranges to refer to: the log starts afresh.
    const previous = remembered?.ranges ? remembered : undefined;
    const { shared, encoded, encode } = await this.codec.diff(value, previous);
    const threadKey = this.threadKey(at);
    const tail: TailItem[] = [];
    for (let i = shared; i < value.length; i += 1) {
      const item = value[i];
      const itemEncoding = encode(item);
      encoded.push(itemEncoding);
      const logged = isObject(item) ? this.loggedItems.get(item) : undefined;
      const ours = logged && logged.threadKey === threadKey && logged.ns === at.ns ? logged : undefined;
      if (ours?.channel === channel && sameEncoding(ours.encoded, itemEncoding)) {
        tail.push({ seq: ours.seq, encoded: itemEncoding });
        continue;
      }
      // Logged as a pending write (or input) of this namespace: stored as a reference to it and the bytes that differ.
      const stored = ours?.channel.startsWith(WRITES_LOG_PREFIX)
        ? makeItemRef(ours.channel, ours.seq, ours.encoded, itemEncoding)
        : undefined;
      tail.push(stored ? { encoded: itemEncoding, stored, target: { channel: ours!.channel, seq: ours!.seq } } : { encoded: itemEncoding });
    }
    const plan: ListPlan = {
      version,
      encoded,
      values: value.slice(),
      ...(shared > 0 && previous ? { baseVersion: previous.version } : {}),
      keepRanges: previous ? truncateRanges(previous.ranges!, shared) : [],
      tail,
    };
    return { channel, cacheKey, plan };
  }

  /** Writes a planned list version (in the checkpoint's transaction); undefined when that version is stored already. */
  private writeList(at: ThreadNamespace, { channel, plan }: PlannedList): WrittenList | undefined {
    if (this.store.hasBlob(at, channel, plan.version)) return undefined;
    const logEnd = this.store.logEnd(at, channel);
    let keepRanges = plan.keepRanges;
    let tail = plan.tail;
    const referenced = Math.max(0, ...keepRanges.map(([, end]) => end), ...tail.map((item) => (item.seq === undefined ? 0 : item.seq + 1)));
    // The thread was deleted (by another connection) since: nothing it held can be referred to.
    if (referenced > logEnd || (plan.baseVersion !== undefined && !this.store.hasBlob(at, channel, plan.baseVersion))) {
      keepRanges = [];
      tail = plan.encoded.map((encoded) => ({ encoded }));
    }
    const ranges: SeqRange[] = keepRanges.slice();
    const appended: EncodedItem[] = [];
    const tailSeqs: number[] = [];
    const logEnds = this.logEnds(at.threadId);
    let next = logEnd;
    for (const item of tail) {
      let seq: number;
      if (item.seq === undefined) {
        seq = next;
        next += 1;
        // A reference's target past its log's end: the thread was deleted (by another connection) since.
        appended.push(item.stored && item.target && item.target.seq < logEnds(at.ns, item.target.channel) ? item.stored : item.encoded);
      } else {
        seq = item.seq;
      }
      pushSeq(ranges, seq);
      tailSeqs.push(seq);
    }
    if (appended.length > 0) this.store.appendToLog(at, channel, logEnd, appended);
    this.store.insertBlob(at, { channel, version: plan.version, record: { kind: "items", ranges } });
    return {
      stored: { version: plan.version, encoded: plan.encoded, values: plan.values, ranges },
      tailStart: plan.encoded.length - tail.length,
      tailSeqs,
    };
  }

  /** A graph input (an object) with arrays of objects, planned for OBJECT_REFS_TYPE; undefined for any other value. */
  private async planInput(at: ThreadNamespace, value: unknown): Promise<Omit<PlannedInput, "channel" | "version"> | undefined> {
    if (!this.sync || !isObject(value) || Object.getPrototypeOf(value) !== Object.prototype) return undefined;
    const rest: Record<string, unknown> = {};
    const props: [string, PlannedRefs][] = [];
    for (const [key, item] of Object.entries(value)) {
      const refs = key.startsWith("__") ? undefined : await this.planRefs(at, key, item);
      if (refs) props.push([key, refs]);
      else rest[key] = item;
    }
    if (props.length === 0) return undefined;
    const [type, bytes] = await this.dumpsTyped(rest);
    return type === "json" ? { rest: bytes, props } : undefined;
  }

  /** Writes a planned input (in the checkpoint's transaction); returns what each array appended, or undefined when that version is stored already. */
  private writeInput(at: ThreadNamespace, input: PlannedInput): (readonly { index: number; seq: number }[])[] | undefined {
    if (this.store.hasBlob(at, input.channel, input.version)) return undefined;
    const appended: (readonly { index: number; seq: number }[])[] = [];
    const refs: ObjectRefs = {
      rest: Buffer.from(input.rest.buffer, input.rest.byteOffset, input.rest.byteLength).toString("utf8"),
      props: {},
    };
    for (const [key, plan] of input.props) {
      const written = this.writeRefs(at, plan);
      refs.props[key] = written.refs;
      appended.push(written.appended);
    }
    const data = Buffer.from(JSON.stringify(refs), "utf8");
    this.store.insertBlob(at, { channel: input.channel, version: input.version, record: { kind: "value", type: OBJECT_REFS_TYPE, data } });
    return appended;
  }

  private threadKey(at: ThreadNamespace): string {
    return `${this.generation}\u0000${at.threadId}`;
  }

  /**
   * Plans an array (of a pending write, or a property of the graph's input) to be stored as
   * references into item logs: items this saver logged already (byte for byte) are referred to,
   * the rest will be appended to the log of `channel`. Undefined when the array is not worth it
   * or the serde has no synchronous twin. Encodings are made afresh (not remembered): a reducer
   * may still change these objects (messages get their ids) before they are checkpointed.
   */
  private async planRefs(at: ThreadNamespace, channel: string, value: unknown): Promise<PlannedRefs | undefined> {
    if (!this.sync || !Array.isArray(value) || value.length === 0 || !value.every(isObject)) return undefined;
    // A log of their own: appended to the list channel's log, they would interleave with the
    // list's items and split its versions' ranges (a list version refers to its own log only).
    const logChannel = `${WRITES_LOG_PREFIX}${channel}`;
    const threadKey = this.threadKey(at);
    // Each item is written now (the serde's own `dumpsTyped` too writes before its first await):
    // a later change to it is not what this write holds.
    const encoded = await Promise.all(
      value.map(async (item): Promise<EncodedItem> => {
        const [type, bytes] = await this.dumpsTyped(item);
        return { type, bytes };
      }),
    );
    const known = value.map((item, i) => {
      const logged = this.loggedItems.get(item as object);
      return logged && logged.threadKey === threadKey && sameEncoding(logged.encoded, encoded[i]!) ? logged : undefined;
    });
    return { channel: logChannel, values: value, encoded, known };
  }

  /** Stores planned references (in a write transaction): appends the items not logged yet, returns the references. */
  private writeRefs(at: ThreadNamespace, plan: PlannedRefs): { refs: LogRef[]; appended: { index: number; seq: number }[] } {
    const logEnd = this.logEnds(at.threadId);
    // A position past its log's end means the thread was deleted (by another connection) since.
    const known = plan.known.map((logged) => (logged && logged.seq < logEnd(logged.ns, logged.channel) ? logged : undefined));
    const start = logEnd(at.ns, plan.channel);
    const toAppend: EncodedItem[] = [];
    const appended: { index: number; seq: number }[] = [];
    const refs: LogRef[] = [];
    plan.encoded.forEach((encoded, index) => {
      const logged = known[index];
      let ref: LogRef;
      if (logged) {
        ref = [logged.ns, logged.channel, logged.seq, logged.seq + 1];
      } else {
        const seq = start + toAppend.length;
        toAppend.push(encoded);
        appended.push({ index, seq });
        ref = [at.ns, plan.channel, seq, seq + 1];
      }
      const last = refs[refs.length - 1];
      if (last && last[0] === ref[0] && last[1] === ref[1] && last[3] === ref[2]) last[3] = ref[3];
      else refs.push(ref);
    });
    if (toAppend.length > 0) this.store.appendToLog(at, plan.channel, start, toAppend);
    return { refs, appended };
  }

  /** The end of each item log of the thread, read once (in a write transaction, where nothing else appends to them). */
  private logEnds(threadId: string): (ns: string, channel: string) => number {
    const ends = new Map<string, number>();
    return (ns, channel) => {
      const key = `${ns}\u0000${channel}`;
      let end = ends.get(key);
      if (end === undefined) {
        end = this.store.logEnd({ threadId, ns }, channel);
        ends.set(key, end);
      }
      return end;
    };
  }

  /** Remembers where the items a `writeRefs` appended are. */
  private rememberRefs(at: ThreadNamespace, plan: PlannedRefs, appended: readonly { index: number; seq: number }[]): void {
    const threadKey = this.threadKey(at);
    for (const { index, seq } of appended) {
      this.loggedItems.set(plan.values[index] as object, {
        threadKey,
        ns: at.ns,
        channel: plan.channel,
        seq,
        encoded: plan.encoded[index]!,
      });
    }
  }

  /** The items `refs` point to, read from their logs. */
  private readRefs(logs: LogReader, refs: readonly LogRef[]): EncodedItem[] {
    const items: EncodedItem[] = [];
    for (const [ns, channel, start, end] of refs) items.push(...logs.items(ns, channel, [[start, end]]).encoded());
    return items;
  }

  /** Item log reads of the thread (see LogReader). */
  private logReader(threadId: string): LogReader {
    return new LogReader((ns, channel, start, end) => this.store.logChunks({ threadId, ns }, channel, start, end));
  }

  private channelVersionsOf(at: ThreadNamespace, checkpointId: string | undefined): ChannelVersions {
    const row = checkpointId === undefined ? undefined : this.store.checkpoint(at, checkpointId);
    return row ? (JSON.parse(row.channel_versions) as ChannelVersions) : {};
  }

  /** A stored list version, for diffing against when this saver has not written the channel itself. */
  private readListVersion(at: ThreadNamespace, channel: string, version: string | number | undefined): StoredList | undefined {
    const value = version === undefined ? undefined : this.readValue(at, channel, String(version));
    if (value?.kind === "log") return { version: value.version, encoded: value.items.encoded(), ranges: value.ranges };
    return value?.kind === "list" ? value.list : undefined;
  }

  /** The stored tuples of checkpoints (their rows read in this transaction), in order: a thread namespace's at a time (see readNamespaceTuples). */
  private readStoredTuples(rows: readonly CheckpointRow[]): StoredTuple[] {
    const byNamespace = new Map<string, CheckpointRow[]>();
    for (const row of rows) {
      const key = `${row.thread_id}\u0000${row.checkpoint_ns}`;
      const group = byNamespace.get(key);
      if (group) group.push(row);
      else byNamespace.set(key, [row]);
    }
    const tuples = new Map<CheckpointRow, StoredTuple>();
    for (const group of byNamespace.values()) {
      const at = { threadId: group[0]!.thread_id, ns: group[0]!.checkpoint_ns };
      this.readNamespaceTuples(at, group).forEach((tuple, i) => tuples.set(group[i]!, tuple));
    }
    return rows.map((row) => tuples.get(row)!);
  }

  /**
   * The stored tuples of checkpoints of one thread namespace: their channel versions and their
   * pending writes in one statement each, every version read once however many of the
   * checkpoints hold it, and each item log they refer to once (its ranges declared first, see LogReader).
   */
  private readNamespaceTuples(at: ThreadNamespace, rows: readonly CheckpointRow[]): StoredTuple[] {
    const versionsOf = rows.map((row) => JSON.parse(row.channel_versions) as ChannelVersions);
    const pairs = new Map<string, [string, string]>();
    for (const versions of versionsOf) {
      for (const [channel, version] of Object.entries(versions))
        pairs.set(`${channel}\u0000${String(version)}`, [channel, String(version)]);
    }
    const links = this.store.blobs(at, [...pairs.values()]);
    const writes = this.store.writesOf(
      at,
      rows.map((row) => row.checkpoint_id),
    );
    const logs = this.logReader(at.threadId);
    const wantRefs = (refs: readonly LogRef[]) => {
      for (const [ns, channel, start, end] of refs) logs.want(ns, channel, [[start, end]]);
    };
    const objectRefs = new Map<string, ObjectRefs>();
    for (const [key, [channel]] of pairs) {
      const record = links.get(key)?.record;
      if (record?.kind === "items") logs.want(at.ns, channel, record.ranges);
      if (record?.kind === "value" && record.type === OBJECT_REFS_TYPE) {
        const refs = JSON.parse(utf8(record.data)) as ObjectRefs;
        Object.values(refs.props).forEach(wantRefs);
        objectRefs.set(key, refs);
      }
    }
    const writeRefs = new Map<WriteRow, LogRef[]>();
    for (const write of [...writes.values()].flat()) {
      if (write.type !== LOG_REFS_TYPE) continue;
      const refs = JSON.parse(utf8(write.value)) as LogRef[];
      wantRefs(refs);
      writeRefs.set(write, refs);
    }
    const values = new Map<string, StoredValue | undefined>();
    for (const [key, [channel, version]] of pairs)
      values.set(key, this.storedValueOf(at, channel, version, links.get(key), logs, objectRefs.get(key)));
    return rows.map((row, i) => {
      const channelValues = new Map<string, StoredValue>();
      for (const [channel, version] of Object.entries(versionsOf[i]!)) {
        const value = values.get(`${channel}\u0000${String(version)}`);
        if (value) channelValues.set(channel, value);
      }
      const ownWrites = (writes.get(row.checkpoint_id) ?? []).map((write) => {
        const refs = writeRefs.get(write);
        return refs ? { ...write, items: this.readRefs(logs, refs) } : write;
      });
      return { row, channelVersions: versionsOf[i]!, values: channelValues, writes: ownWrites };
    });
  }

  private readValue(at: ThreadNamespace, channel: string, version: string): StoredValue | undefined {
    return this.storedValueOf(at, channel, version, this.store.blob(at, channel, version), this.logReader(at.threadId));
  }

  /**
   * A channel version as stored, given its own row (`link`, undefined when it has none), the
   * item log reads it takes part in, and its parsed references when it is a graph input stored by them.
   */
  private storedValueOf(
    at: ThreadNamespace,
    channel: string,
    version: string,
    link: BlobLink | undefined,
    logs: LogReader,
    objectRefs?: ObjectRefs,
  ): StoredValue | undefined {
    const record = link?.record;
    if (!record || record.kind === "empty") return undefined;
    if (record.kind === "value" && record.type === OBJECT_REFS_TYPE) {
      const refs = objectRefs ?? (JSON.parse(utf8(record.data)) as ObjectRefs);
      const props = Object.entries(refs.props).map(([key, logRefs]): [string, EncodedItem[]] => [key, this.readRefs(logs, logRefs)]);
      return { kind: "input", rest: Buffer.from(refs.rest, "utf8"), props };
    }
    if (record.kind === "value") return record;
    if (record.kind === "items") return { kind: "log", version, ranges: record.ranges, items: logs.items(at.ns, channel, record.ranges) };
    // A list of a version-2 store: a snapshot, or a delta or rollup read down its base chain.
    const chain = record.kind === "snapshot" ? [link] : this.store.blobChain(at, channel, version);
    return { kind: "list", list: materializeList(asListChain(chain)) };
  }

  /** The items at `ranges` of the channel's item log, read in one query, references resolved (see CheckpointStore.logChunks). */
  private readLogItems(at: ThreadNamespace, channel: string, ranges: readonly SeqRange[]): LogItems {
    return this.logReader(at.threadId).items(at.ns, channel, ranges);
  }

  private async decodeTuple(stored: StoredTuple): Promise<CheckpointTuple> {
    const { row } = stored;
    const [header, metadata, pendingWrites] = await Promise.all([
      this.plainJson.loads(row.checkpoint_type, row.checkpoint) as Promise<Omit<Checkpoint, "channel_values" | "channel_versions">>,
      this.plainJson.loads(row.metadata_type, row.metadata) as Promise<CheckpointMetadata>,
      this.decodeWrites(stored.writes),
    ]);
    const at = { threadId: row.thread_id, ns: row.checkpoint_ns };
    return assembleTuple({
      at,
      id: row.checkpoint_id,
      parentId: row.parent_checkpoint_id,
      header,
      metadata,
      pendingWrites,
      channelVersions: stored.channelVersions,
      values: [...stored.values].map(
        ([channel, value]) =>
          [channel, value.kind === "value" ? this.decodeChannel(value).then((decoded) => decoded.value) : this.decodeValue(value)] as const,
      ),
      onSettled: (channel, item) => {
        const value = stored.values.get(channel)!;
        if (value.kind === "log" && Array.isArray(item)) this.rememberReadList(at, channel, value, item);
      },
      // Read only for the checkpoints before format v4 that need them (the parent's sends never change once written).
      parentSends: () =>
        Promise.all(
          this.readTransaction(() => (row.parent_checkpoint_id === null ? [] : this.store.writes(at, row.parent_checkpoint_id, TASKS))).map(
            (send) => this.serde.loadsTyped(send.type, send.value),
          ),
        ),
      nextVersion: () => this.getNextVersion(undefined),
    });
  }

  /**
   * A list version read (a resumed run's state, typically) as the base its channel's next write is
   * planned against, when this saver has none: its items are then known by identity, and the
   * version is not read and compared again. Any stored version of the channel is a valid base.
   */
  private rememberReadList(
    at: ThreadNamespace,
    channel: string,
    value: Extract<StoredValue, { kind: "log" }>,
    items: readonly unknown[],
  ): void {
    const cacheKey = channelKey(at, channel);
    if (this.lastWrittenLists.has(cacheKey)) return;
    this.lastWrittenLists.set(cacheKey, {
      version: value.version,
      encoded: value.items.encoded(),
      values: items.slice(),
      ranges: value.ranges,
    });
  }

  /** A stored value decoded: a list's items in one pass (see fast-serde.ts), synchronously when none needs LangChain's `load`. */
  private decodeValue(value: StoredValue): unknown {
    if (value.kind === "value") return this.plainJson.loads(value.type, value.data);
    if (value.kind === "input") return this.decodeInput(value);
    if (value.kind === "log" && this.sync && value.items.allJson) {
      const { items } = value;
      const decoded = this.sync.loadsJsonArray(items.jsonArrayText(), (i) => utf8(items.at(i).bytes));
      const remember = (values: unknown[]): unknown[] => {
        values.forEach((item, i) => {
          if (isObject(item)) this.codec.remember(item, items.at(i));
        });
        return values;
      };
      return decoded.some((item) => item instanceof Promise) ? Promise.all(decoded).then(remember) : remember(decoded);
    }
    return this.codec.decode(value.kind === "log" ? value.items.encoded() : value.list.encoded);
  }

  private async decodeInput({ rest, props }: { rest: Uint8Array; props: readonly [string, readonly EncodedItem[]][] }): Promise<unknown> {
    const input = (await this.plainJson.loads("json", rest)) as Record<string, unknown>;
    for (const [key, items] of props) input[key] = await decodeItems(items, this.serde, this.sync);
    return input;
  }

  private decodeWrites(writes: readonly StoredWriteRow[]): Promise<CheckpointPendingWrite[]> {
    return Promise.all(
      writes.map(
        async (write): Promise<CheckpointPendingWrite> => [
          write.task_id,
          write.channel,
          write.items ? await decodeItems(write.items, this.serde, this.sync) : await this.plainJson.loads(write.type, write.value),
        ],
      ),
    );
  }
}

function utf8(data: Uint8Array): string {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("utf8");
}

function asListChain(chain: readonly BlobLink[]): ChainLink[] {
  return chain.map((link) => {
    if (!isListRow(link.record)) throw new Error(`List history of version ${link.version} holds a ${link.record.kind} row`);
    return { version: link.version, record: link.record };
  });
}

function lazy<T>(compute: () => T): () => T {
  let computed: { value: T } | undefined;
  return () => (computed ??= { value: compute() }).value;
}
