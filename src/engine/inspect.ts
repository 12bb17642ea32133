import { isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import diff from "microdiff";
import { ConfigError } from "../errors.js";
import type { ThreadRecord } from "../runs/thread-registry.js";
import { requireThread, withStore, type Store, type StoreOptions } from "../runs/store.js";
import type { NodeUsage } from "../state/graph-state.js";


export interface ThreadSummary extends ThreadRecord {
  checkpoints: number;
}

export interface StateChange {
  path: string;
  kind: "added" | "changed" | "removed";
  value?: unknown;
  before?: unknown;
}

export interface CheckpointSummary {
  checkpointId: string;
  parentId?: string;
  step: number;
  source: string;
  /** The nodes whose work this checkpoint records ("input" for the run's input, "start" where it enters the state). */
  nodes: string[];
  createdAt: string;
  tokens: NodeUsage;
  status: "input" | "done" | "error";
  changes: StateChange[];
}

export interface ThreadHistory {
  thread: ThreadRecord;
  checkpoints: CheckpointSummary[];
}

export interface CheckpointState {
  threadId: string;
  checkpointId: string;
  step: number;
  createdAt: string;
  values: Record<string, unknown>;
}

/** A message as plain JSON, for `inspect` output and diffs. */
export interface PlainMessage {
  type: string;
  id?: string;
  name?: string;
  content: unknown;
  tool_calls?: unknown[];
  tool_call_id?: string;
}

function toPlainMessage(message: BaseMessage): PlainMessage {
  const plain: PlainMessage = { type: message.getType(), content: message.content };
  if (message.id) plain.id = message.id;
  if (message.name) plain.name = message.name;
  const toolCalls = (message as { tool_calls?: unknown[] }).tool_calls;
  if (toolCalls?.length) plain.tool_calls = toolCalls;
  const toolCallId = (message as { tool_call_id?: string }).tool_call_id;
  if (toolCallId) plain.tool_call_id = toolCallId;
  return plain;
}

/** Channel values as plain JSON: messages become {type, name, content, …}; LangGraph's internal channels are dropped. */
export function toPlainValues(values: Record<string, unknown>): Record<string, unknown> {
  const plain = (value: unknown): unknown => {
    if (isBaseMessage(value)) return toPlainMessage(value);
    if (Array.isArray(value)) return value.map(plain);
    if (value && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, plain(inner)]));
    }
    return value;
  };
  return Object.fromEntries(
    Object.entries(values)
      .filter(([channel]) => !channel.startsWith("__") && !channel.startsWith("branch:"))
      .map(([channel, value]) => [channel, plain(value)]),
  );
}

/** The thread's root-graph checkpoints, oldest first. */
async function rootCheckpoints(store: Store, threadId: string): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of store.saver.list({ configurable: { thread_id: threadId, checkpoint_ns: "" } })) {
    if ((tuple.config.configurable?.checkpoint_ns ?? "") === "") tuples.push(tuple);
  }
  return tuples.reverse();
}

export async function listThreads(options: StoreOptions = {}): Promise<ThreadSummary[]> {
  return withStore(options, async (store) => {
    const threads = store.threads.list();
    const summaries: ThreadSummary[] = [];
    for (const thread of threads) {
      summaries.push({ ...thread, checkpoints: (await rootCheckpoints(store, thread.threadId)).length });
    }
    return summaries;
  });
}

const zeroUsage = (): NodeUsage => ({ inputTokens: 0, outputTokens: 0 });

function valuesOf(tuple: CheckpointTuple): Record<string, unknown> {
  return toPlainValues(tuple.checkpoint.channel_values as Record<string, unknown>);
}

function summarise(tuple: CheckpointTuple, previous: Record<string, unknown>, current: Record<string, unknown>): CheckpointSummary {
  const step = tuple.metadata?.step ?? 0;
  const visitsBefore = (previous.visits ?? {}) as Record<string, number>;
  const visitsNow = (current.visits ?? {}) as Record<string, number>;
  const nodes = Object.keys(visitsNow).filter((node) => (visitsNow[node] ?? 0) > (visitsBefore[node] ?? 0));
  const usageBefore = (previous.usage ?? {}) as Record<string, NodeUsage>;
  const usageNow = (current.usage ?? {}) as Record<string, NodeUsage>;
  const tokens = zeroUsage();
  for (const [node, usage] of Object.entries(usageNow)) {
    tokens.inputTokens += usage.inputTokens - (usageBefore[node]?.inputTokens ?? 0);
    tokens.outputTokens += usage.outputTokens - (usageBefore[node]?.outputTokens ?? 0);
  }
  const failed = (tuple.pendingWrites ?? []).some(([, channel]) => channel === "__error__");
  return {
    checkpointId: tuple.checkpoint.id,
    parentId: tuple.parentConfig?.configurable?.checkpoint_id as string | undefined,
    step,
    source: tuple.metadata?.source ?? "",
    nodes: step < 0 ? ["input"] : nodes.length > 0 ? nodes : ["start"],
    createdAt: tuple.checkpoint.ts,
    tokens,
    status: failed ? "error" : step < 0 ? "input" : "done",
    changes: diff(previous, current).map((change) => ({
      path: change.path.join("."),
      kind: change.type === "CREATE" ? "added" : change.type === "REMOVE" ? "removed" : "changed",
      ...(change.type !== "REMOVE" ? { value: change.value } : {}),
      ...(change.type !== "CREATE" ? { before: change.oldValue } : {}),
    })),
  };
}

/** A thread's checkpoint history: step, nodes, time, tokens, status and the state diff of each step. */
export async function threadHistory(threadId: string, options: StoreOptions = {}): Promise<ThreadHistory> {
  return withStore(options, async (store) => {
    const thread = requireThread(store, threadId);
    let previous: Record<string, unknown> = {};
    const checkpoints = (await rootCheckpoints(store, threadId)).map((tuple) => {
      const current = valuesOf(tuple);
      const summary = summarise(tuple, previous, current);
      previous = current;
      return summary;
    });
    return { thread, checkpoints };
  });
}

/** The full state at one checkpoint (an id, or a unique prefix of one). */
export async function checkpointState(threadId: string, checkpointId: string, options: StoreOptions = {}): Promise<CheckpointState> {
  return withStore(options, async (store) => {
    requireThread(store, threadId);
    const matches = (await rootCheckpoints(store, threadId)).filter((t) => t.checkpoint.id.startsWith(checkpointId));
    if (matches.length !== 1) {
      const problem = matches.length === 0 ? "no checkpoint" : "more than one checkpoint";
      throw new ConfigError(`${problem} of thread "${threadId}" matches "${checkpointId}": see \`loopgraph inspect ${threadId}\``);
    }
    const tuple = matches[0]!;
    return {
      threadId,
      checkpointId: tuple.checkpoint.id,
      step: tuple.metadata?.step ?? 0,
      createdAt: tuple.checkpoint.ts,
      values: valuesOf(tuple),
    };
  });
}
