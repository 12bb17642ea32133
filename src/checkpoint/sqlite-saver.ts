import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { isDeepStrictEqual } from "node:util";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  JsonPlusSerializer,
  TASKS,
  WRITES_IDX_MAP,
  getCheckpointId,
  maxChannelVersion,
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
import { nextChannelVersion } from "./channel-versions.js";
import {
  CheckpointStore,
  type BlobLink,
  type BlobWrite,
  type CheckpointRow,
  type HistoryRow,
  type ListCursor,
  type StoredWrite,
  type ThreadNamespace,
  type WriteRow,
} from "./checkpoint-store.js";
import type { EncodedItem } from "./item-framing.js";
import {
  chooseListWrite,
  encodeList,
  isListRow,
  materializeList,
  snapshotWrite,
  type ChainLink,
  type ListWrite,
  type StoredList,
} from "./list-history.js";
import { LruMap } from "./lru-map.js";
import { prepareDatabase } from "./schema.js";

/** A channel value as stored, before the serde decodes it. */
type StoredValue =
  | { readonly kind: "value"; readonly type: string; readonly data: Uint8Array }
  | { readonly kind: "list"; readonly list: StoredList };

/** Everything one checkpoint tuple needs, read in one transaction. */
interface StoredTuple {
  readonly row: CheckpointRow;
  readonly channelVersions: ChannelVersions;
  readonly values: ReadonlyMap<string, StoredValue>;
  readonly writes: readonly WriteRow[];
  /** Sends pending on the parent, for checkpoints older than format v4 that kept them there. */
  readonly parentSends: readonly WriteRow[];
}

interface ListWriteChoice {
  readonly cacheKey: string;
  readonly preferred: ListWrite;
  readonly fallback: ListWrite;
}

/** A checkpoint as a history walk reads it: what it records, not its channel values. */
export interface CheckpointHistoryEntry {
  readonly checkpointId: string;
  readonly parentId?: string;
  /** The checkpoint's `ts`. */
  readonly createdAt: string;
  readonly metadata: CheckpointMetadata;
  /** The channels' versions, in the checkpoint's own order. */
  readonly channelVersions: ChannelVersions;
  /** Whether a task that ran from this checkpoint recorded an error. */
  readonly failed: boolean;
}

/** A channel version as stored, not yet decoded: a single value, or a list's items. */
export type StoredChannel =
  | { readonly kind: "value"; readonly type: string; readonly data: Uint8Array }
  | { readonly kind: "list"; readonly items: readonly EncodedItem[] };

/** A serializer wrapper whose `loadsTyped` is that of `decodesWith` (the redacting serializer). */
export interface DecodingDelegate {
  readonly decodesWith: SerializerProtocol;
}

/** A decoded channel value, and when its decoding settled (see `decodeChannel`). */
export interface DecodedChannel {
  readonly value: unknown;
  readonly settledAfter: number;
  /** Set when the value is plain JSON (parsed, no LangChain object in it): nothing in it needs converting. */
  readonly plainJson?: true;
}

/**
 * Plain JSON values up to this size are decoded both ways, to check the fast path
 * (`decodePlainJson`): the first PLAIN_JSON_CHECKS of them, then one in PLAIN_JSON_CHECK_EVERY.
 */
const PLAIN_JSON_CHECKED_BELOW = 512;
const PLAIN_JSON_CHECKS = 128;
const PLAIN_JSON_CHECK_EVERY = 32;
const textDecoder = new TextDecoder();

/**
 * The microtask turns JsonPlusSerializer's reviver takes on a plain JSON value, as `decodeChannel`
 * counts them up to the constant its callers add: an object awaits its values one after the
 * other, an array all at once (`Promise.all` and an `await`); a value already settled still
 * costs its callers one turn.
 */
export function reviveTurns(value: unknown): number {
  const turns = (node: unknown): number => {
    if (!node || typeof node !== "object") return 0;
    if (Array.isArray(node)) {
      let slowest = -1;
      for (const item of node) slowest = Math.max(slowest, turns(item));
      return slowest < 0 ? 1 : slowest + 2;
    }
    let total = 0;
    for (const key in node) if (Object.prototype.hasOwnProperty.call(node, key)) total += turns((node as Record<string, unknown>)[key]) + 1;
    return total;
  };
  return Math.max(turns(value), 1);
}

const LIST_PAGE_SIZE = 100;
const HISTORY_PAGE_SIZE = 256;
/** Threads × namespaces × list channels whose last written version is kept for diffing. */
const REMEMBERED_LISTS = 64;

/**
 * LangGraph checkpoint saver on SQLite (better-sqlite3).
 *
 * Channel values live apart from checkpoints, once per channel version; list channels (such as
 * `messages`) are stored as deltas of the previous version, so a thread's storage grows linearly
 * with its history rather than quadratically. See list-history.ts for the delta scheme.
 */
export class SqliteCheckpointSaver extends BaseCheckpointSaver {
  /** The open database; other tables of the application may share it. */
  readonly db: Database.Database;
  private readonly ownsDatabase: boolean;
  private readonly store: CheckpointStore;
  private readonly lastWrittenLists = new LruMap<string, StoredList>(REMEMBERED_LISTS);
  /**
   * The serialized form of list items this saver has written or read, so the unchanged part of
   * a list is neither re-serialized nor re-compared item by item. This treats items as immutable
   * once checkpointed; LangGraph's reducers replace items (messages by id), never edit them.
   */
  private readonly itemEncodings = new WeakMap<object, EncodedItem>();
  /** The channel rows `history` read ahead for its current page (see `prefetchChannels`). */
  private prefetched?: { at: ThreadNamespace; links: ReadonlyMap<string, BlobLink> };
  /** The plain-JSON decoding path of `decodeChannel`: off unless the serde is LangGraph's; its calibrated settle offset. */
  private readonly plainJson: { off: boolean; offset?: number; small: number };

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
    const decoder = (this.serde as Partial<DecodingDelegate>).decodesWith ?? this.serde;
    this.plainJson = { off: Object.getPrototypeOf(decoder) !== JsonPlusSerializer.prototype, small: 0 };
  }

  /** Closes the database if this saver opened it. */
  close(): void {
    if (this.ownsDatabase) this.db.close();
  }

  override getNextVersion(current: number | undefined): number {
    return nextChannelVersion(current);
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const at = threadNamespaceOf(config);
    if (!at) return undefined;
    const checkpointId = getCheckpointId(config) || undefined;
    const stored = this.store.readTransaction(() => {
      const row = this.store.checkpoint(at, checkpointId);
      return row && this.readStoredTuple(row, new Map());
    });
    return stored && this.decodeTuple(stored);
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { limit, before, filter } = options;
    const wanted = Object.entries(filter ?? {}).filter(([, value]) => value !== undefined);
    let remaining = limit ?? Number.POSITIVE_INFINITY;
    const pageSize = wanted.length === 0 && limit !== undefined ? limit : LIST_PAGE_SIZE;
    const query = {
      threadId: config.configurable?.thread_id as string | undefined,
      ns: config.configurable?.checkpoint_ns as string | undefined,
      checkpointId: getCheckpointId(config) || undefined,
      beforeId: before?.configurable?.checkpoint_id as string | undefined,
      limit: pageSize,
    };
    const valuesRead = new Map<string, StoredValue | undefined>();
    let cursor: ListCursor | undefined;
    while (remaining > 0) {
      const page = this.store.readTransaction(() => this.store.listCheckpoints(query, cursor));
      for (const listed of page) {
        if (wanted.length > 0 && !(await this.metadataMatches(listed, wanted))) continue;
        const stored = this.store.readTransaction(() => {
          const row = this.store.checkpoint({ threadId: listed.thread_id, ns: listed.checkpoint_ns }, listed.checkpoint_id);
          return row && this.readStoredTuple(row, valuesRead);
        });
        if (!stored) continue;
        yield await this.decodeTuple(stored);
        remaining -= 1;
        if (remaining <= 0) return;
      }
      if (page.length < pageSize) return;
      cursor = page[page.length - 1];
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
    const listWrites: ListWriteChoice[] = [];
    const parentVersions = lazy(() => this.channelVersionsOf(at, parentId));
    for (const [channel, newVersion] of Object.entries(newVersions)) {
      const version = String(newVersion);
      if (!Object.prototype.hasOwnProperty.call(values, channel)) {
        blobs.push({ channel, version, record: { kind: "empty" } });
        continue;
      }
      const value: unknown = values[channel];
      if (Array.isArray(value)) {
        const choice = await this.planListWrite(at, channel, version, value, parentVersions);
        listWrites.push(choice);
        blobs.push({ channel, version, record: choice.preferred.record, fallback: choice.fallback.record });
      } else {
        const [type, data] = await this.serde.dumpsTyped(value);
        blobs.push({ channel, version, record: { kind: "value", type, data } });
      }
    }
    const [[checkpointType, checkpointBytes], [metadataType, metadataBytes]] = await Promise.all([
      this.serde.dumpsTyped(rest),
      this.serde.dumpsTyped(metadata),
    ]);

    const storedRecords = this.store.writeTransaction(() => {
      const stored = blobs.map((blob) => this.store.insertBlob(at, blob));
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
      return new Set(stored);
    });
    for (const { cacheKey, preferred, fallback } of listWrites) {
      // Neither stored means the version already existed: what it holds is unknown here.
      const written = [preferred, fallback].find((candidate) => storedRecords.has(candidate.record));
      if (written) this.lastWrittenLists.set(cacheKey, written.stored);
      else this.lastWrittenLists.delete(cacheKey);
    }
    return { configurable: { thread_id: at.threadId, checkpoint_ns: at.ns, checkpoint_id: checkpoint.id } };
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    if (!config.configurable) throw new Error("Empty configuration supplied.");
    const at = threadNamespaceOf(config);
    if (!at) throw new Error("Missing thread_id field in config.configurable.");
    const checkpointId = getCheckpointId(config);
    if (!checkpointId) throw new Error("Missing checkpoint_id field in config.configurable.");
    const rows = await Promise.all(
      writes.map(async ([channel, value], index): Promise<StoredWrite> => {
        const [type, bytes] = await this.serde.dumpsTyped(value);
        return {
          thread_id: at.threadId,
          checkpoint_ns: at.ns,
          checkpoint_id: checkpointId,
          task_id: taskId,
          task_path: taskPath,
          idx: WRITES_IDX_MAP[channel] ?? index,
          channel,
          type,
          value: bytes,
        };
      }),
    );
    // Special writes (errors, interrupts, ...) replace an earlier one of the same task; regular ones are written once.
    const replaceExisting = writes.every(([channel]) => channel in WRITES_IDX_MAP);
    this.store.writeTransaction(() => this.store.insertWrites(rows, replaceExisting));
  }

  /**
   * The thread's checkpoints (in `ns`), oldest first, with their metadata and channel versions
   * but no channel value: read page by page, so a long thread is never held whole.
   */
  async *history(threadId: string, ns = "", channels: (channel: string) => boolean = () => true): AsyncGenerator<CheckpointHistoryEntry> {
    const at = { threadId, ns };
    const versionsOf = new LruMap<string, ChannelVersions>(HISTORY_PAGE_SIZE * 2);
    let after = "";
    try {
      for (;;) {
        const page = this.store.readTransaction(() => this.store.historyPage(at, after, HISTORY_PAGE_SIZE));
        const entries = await Promise.all(page.map((row) => this.decodeHistoryRow(row)));
        this.prefetchChannels(at, entries, versionsOf, channels);
        for (const entry of entries) yield entry;
        if (page.length < HISTORY_PAGE_SIZE) return;
        after = page[page.length - 1]!.checkpoint_id;
      }
    } finally {
      this.prefetched = undefined;
    }
  }

  /**
   * Reads, in one query, the rows of the channel versions a page of `history` brings that its
   * checkpoints' parents did not hold: what `readChannel` will be asked for next.
   */
  private prefetchChannels(
    at: ThreadNamespace,
    entries: readonly CheckpointHistoryEntry[],
    versionsOf: LruMap<string, ChannelVersions>,
    channels: (channel: string) => boolean,
  ): void {
    const pairs: [string, string][] = [];
    const seen = new Set<string>();
    for (const entry of entries) {
      const parent = entry.parentId === undefined ? undefined : versionsOf.get(entry.parentId);
      for (const [channel, version] of Object.entries(entry.channelVersions)) {
        const key = `${channel}\u0000${String(version)}`;
        if (parent?.[channel] === version || !channels(channel) || seen.has(key)) continue;
        seen.add(key);
        pairs.push([channel, String(version)]);
      }
      versionsOf.set(entry.checkpointId, entry.channelVersions);
    }
    this.prefetched = { at, links: this.store.blobs(at, pairs) };
  }

  /**
   * One channel version as stored, undefined when it holds no value (cleared, or never stored).
   * A list version is rebuilt from its row and its base's items: `knownItems` may give those of
   * a version the caller already holds (the parent's, typically), else the base chain is read.
   */
  readChannel(
    threadId: string,
    channel: string,
    version: string,
    knownItems: (version: string) => readonly EncodedItem[] | undefined = () => undefined,
    ns = "",
  ): StoredChannel | undefined {
    const at = { threadId, ns };
    // Blobs are never changed once written: each read is one statement, no transaction needed.
    const prefetched = this.prefetched?.at.threadId === threadId && this.prefetched.at.ns === ns ? this.prefetched.links : undefined;
    const link = prefetched?.get(`${channel}\u0000${version}`) ?? this.store.blob(at, channel, version);
    const record = link?.record;
    if (!record || record.kind === "empty") return undefined;
    if (record.kind === "value") return record;
    if (record.kind === "snapshot") return { kind: "list", items: record.items };
    const base = knownItems(record.baseVersion);
    if (base) return { kind: "list", items: base.slice(0, record.keep).concat(record.items) };
    const value = this.readValue(at, channel, version);
    return value?.kind === "list" ? { kind: "list", items: value.list.encoded } : value;
  }

  /**
   * Decodes a channel value exactly as `getTuple` and `list` do, and counts the microtask turns
   * until its decoding settled. Those decode a checkpoint's channels concurrently and set each
   * channel's key in `channel_values` when its decoding settles, which takes a number of turns
   * fixed by the value's shape: the keys come in the order of that number, ties in the order of
   * `channel_versions`. A reader decoding only some channels can so order them as a full read
   * would (a list's number is the largest of its items' numbers, each decoded as a one-item list).
   */
  async decodeChannel(stored: StoredChannel): Promise<DecodedChannel> {
    return (stored.kind === "value" && (await this.decodePlainJson(stored))) || this.decodeChannelAsTuplesDo(stored);
  }

  /**
   * A JSON value with no LangChain object (no "lc" key) decoded by `JSON.parse`, which gives what
   * JsonPlusSerializer's reviver gives, in one native call instead of one promise per node; its
   * settle count computed from its shape (`reviveTurns`). Only for this saver's serde when it is
   * LangGraph's own (or a wrapper that decodes with it); small values (the first ones, then one
   * in PLAIN_JSON_CHECK_EVERY) are decoded both ways and compared, and any difference turns this
   * path off for good. Undefined where it does not apply.
   */
  private async decodePlainJson(stored: Extract<StoredChannel, { kind: "value" }>): Promise<DecodedChannel | undefined> {
    if (stored.type !== "json" || this.plainJson.off) return undefined;
    const text = textDecoder.decode(stored.data);
    // `"__proto__"` as a key would set the prototype in the reviver, not a property.
    if (text.includes('"lc"') || text.includes('"__proto__"')) return undefined;
    const value: unknown = JSON.parse(text);
    const turns = reviveTurns(value);
    const { offset } = this.plainJson;
    const small = stored.data.length <= PLAIN_JSON_CHECKED_BELOW ? ++this.plainJson.small : 0;
    const checked = small > 0 && (small <= PLAIN_JSON_CHECKS || small % PLAIN_JSON_CHECK_EVERY === 0);
    if (offset !== undefined && !checked) return { value, settledAfter: turns + offset, plainJson: true };
    const decoded = await this.decodeChannelAsTuplesDo(stored);
    if (offset === undefined) this.plainJson.offset = decoded.settledAfter - turns;
    if (decoded.settledAfter - turns !== this.plainJson.offset || !isDeepStrictEqual(decoded.value, value)) this.plainJson.off = true;
    return decoded;
  }

  /** The serde's `loadsTyped`, by `JSON.parse` where that gives the same value (see `decodePlainJson`). */
  private async loadsQuickly(type: string, data: Uint8Array): Promise<unknown> {
    if (type === "json" && !this.plainJson.off) {
      const text = textDecoder.decode(data);
      if (!text.includes('"lc"') && !text.includes('"__proto__"')) return JSON.parse(text) as unknown;
    }
    return this.serde.loadsTyped(type, data);
  }

  private async decodeChannelAsTuplesDo(stored: StoredChannel): Promise<DecodedChannel> {
    const value: StoredValue =
      stored.kind === "value"
        ? stored
        : {
            kind: "list",
            list: { version: "", encoded: stored.items, deltasSinceAnchor: 0, anchorVersion: "", sharedWithAnchor: 0 },
          };
    let turns = 0;
    let settled = false;
    const counter = (async () => {
      while (!settled) {
        await undefined;
        turns += 1;
      }
    })();
    let decoded: unknown;
    let settledAfter = 0;
    try {
      await (async () => {
        decoded = await this.decodeValue(value);
        settledAfter = turns;
      })();
    } finally {
      settled = true;
      await counter;
    }
    return { value: decoded, settledAfter };
  }

  async deleteThread(threadId: string): Promise<void> {
    this.store.writeTransaction(() => this.store.deleteThread(threadId));
    this.lastWrittenLists.deleteWhere((key) => key.startsWith(`${threadId}\u0000`));
  }

  /** Diffs a list channel's new value against the version last written (or its parent's). */
  private async planListWrite(
    at: ThreadNamespace,
    channel: string,
    version: string,
    value: readonly unknown[],
    parentVersions: () => ChannelVersions,
  ): Promise<ListWriteChoice> {
    const cacheKey = channelKey(at, channel);
    const previous = this.lastWrittenLists.get(cacheKey) ?? this.readListVersion(at, channel, parentVersions()[channel]);
    const list = await encodeList(value, previous, (item) => this.encodeItem(item));
    return { cacheKey, preferred: chooseListWrite(previous, version, list), fallback: snapshotWrite(version, list) };
  }

  private encodeItem(item: unknown): EncodedItem | Promise<EncodedItem> {
    return (isObject(item) && this.itemEncodings.get(item)) || this.serializeItem(item);
  }

  private async serializeItem(item: unknown): Promise<EncodedItem> {
    const [type, bytes] = await this.serde.dumpsTyped(item);
    const encoded = { type, bytes };
    this.rememberEncoding(item, encoded);
    return encoded;
  }

  private rememberEncoding(item: unknown, encoded: EncodedItem): void {
    if (isObject(item)) this.itemEncodings.set(item, encoded);
  }

  private async metadataMatches(row: CheckpointRow, wanted: readonly [string, unknown][]): Promise<boolean> {
    const metadata = (await this.serde.loadsTyped(row.metadata_type, row.metadata)) as Record<string, unknown>;
    return wanted.every(([key, value]) => isDeepStrictEqual(metadata[key], value));
  }

  private channelVersionsOf(at: ThreadNamespace, checkpointId: string | undefined): ChannelVersions {
    const row = checkpointId === undefined ? undefined : this.store.checkpoint(at, checkpointId);
    return row ? (JSON.parse(row.channel_versions) as ChannelVersions) : {};
  }

  /** A stored list version, for diffing against when this saver has not written the channel itself. */
  private readListVersion(
    at: ThreadNamespace,
    channel: string,
    version: string | number | undefined,
  ): StoredList | undefined {
    const value = version === undefined ? undefined : this.readValue(at, channel, String(version));
    return value?.kind === "list" ? value.list : undefined;
  }

  private readStoredTuple(row: CheckpointRow, valuesRead: Map<string, StoredValue | undefined>): StoredTuple {
    const at = { threadId: row.thread_id, ns: row.checkpoint_ns };
    const channelVersions = JSON.parse(row.channel_versions) as ChannelVersions;
    const values = new Map<string, StoredValue>();
    for (const [channel, version] of Object.entries(channelVersions)) {
      const readKey = `${channelKey(at, channel)}\u0000${version}`;
      const value = valuesRead.has(readKey) ? valuesRead.get(readKey) : this.readValue(at, channel, String(version));
      valuesRead.set(readKey, value);
      if (value) values.set(channel, value);
    }
    const parentId = row.parent_checkpoint_id;
    return {
      row,
      channelVersions,
      values,
      writes: this.store.writes(at, row.checkpoint_id),
      parentSends: parentId === null ? [] : this.store.writes(at, parentId, TASKS),
    };
  }

  private readValue(at: ThreadNamespace, channel: string, version: string): StoredValue | undefined {
    const chain = this.store.blobChain(at, channel, version);
    const record = chain[0]?.record;
    if (!record || record.kind === "empty") return undefined;
    if (record.kind === "value") return record;
    return { kind: "list", list: materializeList(asListChain(chain)) };
  }

  private async decodeHistoryRow(row: HistoryRow): Promise<CheckpointHistoryEntry> {
    const [header, metadata] = await Promise.all([
      this.loadsQuickly(row.checkpoint_type, row.checkpoint) as Promise<Pick<Checkpoint, "ts">>,
      this.loadsQuickly(row.metadata_type, row.metadata) as Promise<CheckpointMetadata>,
    ]);
    return {
      checkpointId: row.checkpoint_id,
      ...(row.parent_checkpoint_id !== null ? { parentId: row.parent_checkpoint_id } : {}),
      createdAt: header.ts,
      metadata,
      channelVersions: JSON.parse(row.channel_versions) as ChannelVersions,
      failed: row.failed !== 0,
    };
  }

  private async decodeTuple(stored: StoredTuple): Promise<CheckpointTuple> {
    const { row } = stored;
    const [header, metadata, pendingWrites] = await Promise.all([
      this.serde.loadsTyped(row.checkpoint_type, row.checkpoint) as Promise<Omit<Checkpoint, "channel_values" | "channel_versions">>,
      this.serde.loadsTyped(row.metadata_type, row.metadata) as Promise<CheckpointMetadata>,
      this.decodeWrites(stored.writes),
    ]);
    const channelValues: Record<string, unknown> = {};
    await Promise.all(
      [...stored.values].map(async ([channel, value]) => {
        channelValues[channel] = await this.decodeValue(value);
      }),
    );
    const checkpoint: Checkpoint = { ...header, channel_values: channelValues, channel_versions: { ...stored.channelVersions } };
    if (checkpoint.v < 4 && row.parent_checkpoint_id !== null) await this.migratePendingSends(checkpoint, stored.parentSends);
    const config = (checkpoint_id: string) => ({
      configurable: { thread_id: row.thread_id, checkpoint_ns: row.checkpoint_ns, checkpoint_id },
    });
    return {
      config: config(row.checkpoint_id),
      checkpoint,
      metadata,
      parentConfig: row.parent_checkpoint_id === null ? undefined : config(row.parent_checkpoint_id),
      pendingWrites,
    };
  }

  private async decodeValue(value: StoredValue): Promise<unknown> {
    if (value.kind === "value") return this.serde.loadsTyped(value.type, value.data);
    return Promise.all(
      value.list.encoded.map(async (encoded) => {
        const item: unknown = await this.serde.loadsTyped(encoded.type, encoded.bytes);
        this.rememberEncoding(item, encoded);
        return item;
      }),
    );
  }

  private decodeWrites(writes: readonly WriteRow[]): Promise<CheckpointPendingWrite[]> {
    return Promise.all(
      writes.map(async (write): Promise<CheckpointPendingWrite> => [
        write.task_id,
        write.channel,
        await this.serde.loadsTyped(write.type, write.value),
      ]),
    );
  }

  /** Checkpoints before format v4 kept pending sends as writes of their parent; v4 has them as a channel. */
  private async migratePendingSends(checkpoint: Checkpoint, parentSends: readonly WriteRow[]): Promise<void> {
    checkpoint.channel_values[TASKS] = await Promise.all(
      parentSends.map((send) => this.serde.loadsTyped(send.type, send.value)),
    );
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }
}

function threadNamespaceOf(config: RunnableConfig): ThreadNamespace | undefined {
  const threadId: unknown = config.configurable?.thread_id;
  if (threadId === undefined || threadId === null || threadId === "") return undefined;
  return { threadId: String(threadId), ns: (config.configurable?.checkpoint_ns as string | undefined) ?? "" };
}

function channelKey(at: ThreadNamespace, channel: string): string {
  return `${at.threadId}\u0000${at.ns}\u0000${channel}`;
}

function asListChain(chain: readonly BlobLink[]): ChainLink[] {
  return chain.map((link) => {
    if (!isListRow(link.record)) throw new Error(`List history of version ${link.version} holds a ${link.record.kind} row`);
    return { version: link.version, record: link.record };
  });
}

function isObject(value: unknown): value is object {
  return typeof value === "object" && value !== null;
}

function lazy<T>(compute: () => T): () => T {
  let computed: { value: T } | undefined;
  return () => (computed ??= { value: compute() }).value;
}
