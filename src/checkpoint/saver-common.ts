import { isDeepStrictEqual } from "node:util";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  TASKS,
  maxChannelVersion,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";

/** What both savers share: how a checkpoint's header, its thread and its channels are keyed. */

/** A thread's checkpoint namespace: the unit checkpoints, blobs and writes belong to. */
export interface ThreadNamespace {
  readonly threadId: string;
  readonly ns: string;
}

/** LangGraph's START node's channel, which holds the graph's input. */
export const START = "__start__";

/**
 * A checkpoint's stored header leaves out its id, which its row's key holds (and stores of
 * version 3 and earlier kept in both): `withId` puts it back where LangGraph has it, after `v`.
 */
export function withoutId<T extends { id: string }>(header: T): Omit<T, "id"> {
  const { id: _id, ...rest } = header;
  return rest;
}

export function withId<T extends { v: number }>(header: T, id: string): T & { id: string } {
  if (Object.prototype.hasOwnProperty.call(header, "id")) return header as T & { id: string };
  const { v, ...rest } = header;
  return { v, id, ...rest } as T & { id: string };
}

/** The thread and namespace a config names; undefined without a thread id. */
export function threadNamespaceOf(config: RunnableConfig): ThreadNamespace | undefined {
  const threadId: unknown = config.configurable?.thread_id;
  if (threadId === undefined || threadId === null || threadId === "") return undefined;
  return { threadId: String(threadId), ns: (config.configurable?.checkpoint_ns as string | undefined) ?? "" };
}

/** A key for one channel of one thread namespace (for caches). */
export function channelKey(at: ThreadNamespace, channel: string): string {
  return `${at.threadId}\u0000${at.ns}\u0000${channel}`;
}

/** Whether stored metadata holds each of `wanted` (`list`'s filter), decoded with `serde`. */
export async function metadataMatches(
  serde: SerializerProtocol,
  type: string,
  data: Uint8Array,
  wanted: readonly [string, unknown][],
): Promise<boolean> {
  const metadata = (await serde.loadsTyped(type, data)) as Record<string, unknown>;
  return wanted.every(([key, value]) => isDeepStrictEqual(metadata[key], value));
}

/** What a checkpoint tuple is made of, as a saver has read and decoded it. */
export interface TupleParts {
  readonly at: ThreadNamespace;
  readonly id: string;
  readonly parentId: string | null;
  readonly header: Omit<Checkpoint, "channel_values" | "channel_versions">;
  readonly metadata: CheckpointMetadata;
  readonly pendingWrites: CheckpointPendingWrite[];
  readonly channelVersions: ChannelVersions;
  /** Each channel's decoded value, or a promise of it. */
  readonly values: Iterable<readonly [channel: string, decoded: unknown]>;
  /** Sees each channel's value as it settles. */
  readonly onSettled?: (channel: string, value: unknown) => void;
  /** The sends pending on the parent, decoded: checkpoints before format v4 kept them there. */
  readonly parentSends: () => Promise<unknown[]>;
  readonly nextVersion: () => number;
}

/**
 * The tuple of a checkpoint. Its `channel_values` hold the channels in `channel_versions` order,
 * as LangGraph reads channels (a declared list, not when each decoding ends): the same checkpoint
 * always gives the same key order, and `inspect`, which decodes only some channels, gives it too.
 */
export async function assembleTuple(parts: TupleParts): Promise<CheckpointTuple> {
  const decoded = new Map<string, unknown>();
  const pending: Promise<void>[] = [];
  for (const [channel, value] of parts.values) {
    const settle = (settled: unknown): void => {
      decoded.set(channel, settled);
      parts.onSettled?.(channel, settled);
    };
    if (value instanceof Promise) pending.push(value.then(settle));
    else settle(value);
  }
  await Promise.all(pending);
  const channelValues = inVersionOrder(decoded, parts.channelVersions);
  const { at, id, parentId } = parts;
  const checkpoint: Checkpoint = {
    ...withId(parts.header, id),
    channel_values: channelValues,
    channel_versions: { ...parts.channelVersions },
  };
  if (checkpoint.v < 4 && parentId !== null) {
    checkpoint.channel_values[TASKS] = await parts.parentSends();
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : parts.nextVersion();
  }
  const configOf = (checkpoint_id: string) => ({ configurable: { thread_id: at.threadId, checkpoint_ns: at.ns, checkpoint_id } });
  return {
    config: configOf(id),
    checkpoint,
    metadata: parts.metadata,
    parentConfig: parentId === null ? undefined : configOf(parentId),
    pendingWrites: parts.pendingWrites,
  };
}

/** The decoded channels as `channel_values`, keyed in `channel_versions` order (any channel it does not name after those). */
function inVersionOrder(decoded: ReadonlyMap<string, unknown>, channelVersions: ChannelVersions): Record<string, unknown> {
  const channelValues: Record<string, unknown> = {};
  for (const channel of Object.keys(channelVersions)) if (decoded.has(channel)) channelValues[channel] = decoded.get(channel);
  for (const [channel, value] of decoded) if (!Object.prototype.hasOwnProperty.call(channelValues, channel)) channelValues[channel] = value;
  return channelValues;
}
