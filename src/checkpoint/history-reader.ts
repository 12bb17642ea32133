/**
 * Reading a thread's history one checkpoint after the other, as `inspect` does: each checkpoint's
 * metadata and channel versions (`history`), then only the channel versions that changed
 * (`readChannel`), decoded one by one (`decodeChannel`). A tuple's `channel_values` and `inspect`'s
 * states both hold their channels in `channel_versions` order, so a reader of some channels only
 * orders them as a full read does without decoding the others.
 * A capability of the savers that offer it (both of loopgraph's); `canReadHistory` tells.
 */
import type { BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { EncodedItem } from "./item-framing.js";
import type { SeqRange } from "./list-history.js";
import { LruMap } from "./lru-map.js";

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
  /** `ranges`: where the items lie in the channel's item log, for versions stored there. */
  | { readonly kind: "list"; readonly items: readonly EncodedItem[]; readonly ranges?: readonly SeqRange[] };

/** A list version a reader holds already, passed to `readChannel` to read only what a later one adds. */
export interface KnownList {
  readonly items: readonly EncodedItem[];
  readonly ranges?: readonly SeqRange[];
}

/** What a reader holds already of a channel (see `readChannel`). */
export interface KnownVersions {
  /** The version the reader holds (its parent checkpoint's, typically). */
  previous?: KnownList;
  /** The items of another version the reader holds, by version (a version-2 SQLite store's lists are built on a base). */
  knownItems?: (version: string) => readonly EncodedItem[] | undefined;
}

/** A decoded channel value (see `decodeChannel`). */
export interface DecodedChannel {
  readonly value: unknown;
  /** Set when the value is plain JSON (parsed, no LangChain object in it): nothing in it needs converting. */
  readonly plainJson?: true;
}

/** A history walk's default filter of the channels it reads ahead: all of them. */
export const everyChannel = (_channel: string): boolean => true;

/** The part of a thread's history a walk reads: the whole of it by default. */
export interface HistorySpan {
  /** Start after this checkpoint id ("" or absent: at the oldest). */
  readonly after?: string;
  /** At most this many checkpoints (absent: to the newest). */
  readonly limit?: number;
}

export interface HistoryReader {
  /**
   * The thread's checkpoints (in `ns`), oldest first, with their metadata and channel versions but
   * no channel value; `span` reads a part of them only (a page of `inspect`).
   */
  history(
    threadId: string,
    ns?: string,
    channels?: (channel: string) => boolean,
    span?: HistorySpan,
  ): AsyncGenerator<CheckpointHistoryEntry>;
  /**
   * One channel version as stored, undefined when it holds no value (cleared, or never stored).
   * A list version is read past the items it shares with `known.previous`, whose items it reuses:
   * a thread's history reads each item once.
   */
  readChannel(
    threadId: string,
    channel: string,
    version: string,
    known?: KnownVersions,
    ns?: string,
  ): StoredChannel | undefined | Promise<StoredChannel | undefined>;
  /** Decodes a channel value exactly as `getTuple` does. */
  decodeChannel(stored: StoredChannel): Promise<DecodedChannel>;
}

/** Whether the saver reads a thread's history channel by channel (see HistoryReader). */
export function canReadHistory(saver: BaseCheckpointSaver): saver is BaseCheckpointSaver & HistoryReader {
  const reader = saver as Partial<HistoryReader>;
  return typeof reader.history === "function" && typeof reader.readChannel === "function" && typeof reader.decodeChannel === "function";
}

/** Checkpoints read per statement of a history walk. */
export const HISTORY_PAGE_SIZE = 256;

/** A checkpoint's row as both savers' tables hold it, without its thread and namespace, undecoded. */
export interface CheckpointColumns {
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  checkpoint_type: string;
  /** The checkpoint without channel_values and channel_versions. */
  checkpoint: Uint8Array;
  /** JSON: versions are plain strings or numbers, and reads need them before any async decoding. */
  channel_versions: string;
  metadata_type: string;
  metadata: Uint8Array;
}

/** A checkpoint's row as a history walk reads it. */
export interface HistoryRow extends CheckpointColumns {
  /** Whether a task that ran from it recorded an error (an `__error__` pending write): SQLite says 0 or 1. */
  failed: boolean | number;
}

/** How a saver reads a history walk (see `walkHistory`). */
export interface HistoryPages {
  /** The rows of the checkpoints after the id `after` ("" for the first), oldest first, `limit` (≤ HISTORY_PAGE_SIZE) at most. */
  readPage(after: string, limit: number): readonly HistoryRow[] | Promise<readonly HistoryRow[]>;
  /** The saver's serde's `loadsTyped`. */
  loads(type: string, data: Uint8Array): Promise<unknown>;
  /** Reads ahead the channel versions a page brings that its checkpoints' parents did not hold: what `readChannel` is asked for next. */
  prefetch(versions: [channel: string, version: string][]): void | Promise<void>;
}

/** A saver's `history`: page by page, so a long thread is never held whole; `span` the part read. */
export async function* walkHistory(
  pages: HistoryPages,
  channels: (channel: string) => boolean,
  span: HistorySpan = {},
): AsyncGenerator<CheckpointHistoryEntry> {
  const versionsOf = new LruMap<string, ChannelVersions>(HISTORY_PAGE_SIZE * 2);
  let after = span.after ?? "";
  let left = span.limit ?? Number.POSITIVE_INFINITY;
  while (left > 0) {
    const size = Math.min(left, HISTORY_PAGE_SIZE);
    const page = await pages.readPage(after, size);
    const entries = await Promise.all(page.map((row) => historyEntryOf(row, pages.loads)));
    await pages.prefetch(versionsToRead(entries, versionsOf, channels));
    for (const entry of entries) yield entry;
    if (page.length < size) return;
    left -= page.length;
    after = page[page.length - 1]!.checkpoint_id;
  }
}

async function historyEntryOf(row: HistoryRow, loads: HistoryPages["loads"]): Promise<CheckpointHistoryEntry> {
  const [header, metadata] = await Promise.all([
    loads(row.checkpoint_type, row.checkpoint) as Promise<Pick<Checkpoint, "ts">>,
    loads(row.metadata_type, row.metadata) as Promise<CheckpointMetadata>,
  ]);
  return {
    checkpointId: row.checkpoint_id,
    ...(row.parent_checkpoint_id !== null ? { parentId: row.parent_checkpoint_id } : {}),
    createdAt: header.ts,
    metadata,
    channelVersions: JSON.parse(row.channel_versions) as ChannelVersions,
    failed: Boolean(row.failed),
  };
}

/**
 * The channel versions (of `channels`) a page of `history` brings that its checkpoints' parents
 * did not hold, each once. `versionsOf` remembers the versions of the checkpoints seen, the
 * parents of the next page's.
 */
function versionsToRead(
  entries: readonly CheckpointHistoryEntry[],
  versionsOf: LruMap<string, ChannelVersions>,
  channels: (channel: string) => boolean,
): [channel: string, version: string][] {
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
  return pairs;
}
