import { isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import diff from "microdiff";
import { ConfigError } from "../errors.js";
import { asSeen, type ThreadRecord } from "../runs/thread-registry.js";
import { requireThread, withStore, type Store, type StoreOptions } from "../runs/store.js";
import type { TokenUsage } from "../state/graph-state.js";
import { checkpointTree, type BranchInfo } from "./checkpoint-tree.js";


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
  /** The branch the checkpoint is on: 0 for the run's original line, 1, 2 … for forks (`replay --from`). */
  branch: number;
  /** Set on the thread's newest checkpoint, where `resume` continues. */
  head?: true;
  step: number;
  source: string;
  /**
   * The nodes whose work this checkpoint records ("input" for the run's input, "start" where it
   * enters the state, "update" where a fork edited the state).
   */
  nodes: string[];
  createdAt: string;
  tokens: TokenUsage;
  /** The Looper's round in the state this checkpoint holds (threads with a loop). */
  round?: number;
  status: "input" | "done" | "error";
  changes: StateChange[];
}

export interface ThreadHistory {
  thread: ThreadRecord;
  /** Every root checkpoint of the thread, oldest first, on whichever branch. */
  checkpoints: CheckpointSummary[];
  /** The branches: 0 is the original run, the others forks, each with the checkpoint it grew from. */
  branches: BranchInfo[];
  /** The newest checkpoint (`resume` continues its branch). */
  head?: string;
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

/** The thread's root-graph checkpoints (every branch), oldest first. */
export async function rootCheckpoints(store: Store, threadId: string): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of store.saver.list({ configurable: { thread_id: threadId, checkpoint_ns: "" } })) {
    if ((tuple.config.configurable?.checkpoint_ns ?? "") === "") tuples.push(tuple);
  }
  return tuples.reverse();
}

export async function listThreads(options: StoreOptions = {}): Promise<ThreadSummary[]> {
  return withStore(options, "read", async (store) => {
    const threads = store.threads.list();
    const summaries: ThreadSummary[] = [];
    for (const thread of threads) {
      summaries.push({ ...asSeen(thread), checkpoints: (await rootCheckpoints(store, thread.threadId)).length });
    }
    return summaries;
  });
}

const zeroUsage = (): TokenUsage => ({ inputTokens: 0, outputTokens: 0 });

function valuesOf(tuple: CheckpointTuple): Record<string, unknown> {
  return toPlainValues(tuple.checkpoint.channel_values as Record<string, unknown>);
}

export function parentIdOf(tuple: CheckpointTuple): string | undefined {
  return tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
}

/** The nodes that ran in a step: those whose visit count rose between two states' `visits` channels. */
export function nodesRun(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const visitsBefore = (before.visits ?? {}) as Record<string, number>;
  const visitsNow = (after.visits ?? {}) as Record<string, number>;
  return Object.keys(visitsNow).filter((node) => (visitsNow[node] ?? 0) > (visitsBefore[node] ?? 0));
}

/** What a checkpoint records: the nodes that ran, or what else made it (input, start, a fork's update). */
function checkpointNodes(tuple: CheckpointTuple, ran: string[]): string[] {
  const step = tuple.metadata?.step ?? 0;
  if (step < 0) return ["input"];
  if (ran.length > 0) return ran;
  const source = tuple.metadata?.source;
  return source === "update" || source === "fork" ? [source] : ["start"];
}

function summarise(tuple: CheckpointTuple, previous: Record<string, unknown>, current: Record<string, unknown>): Omit<CheckpointSummary, "branch"> {
  const step = tuple.metadata?.step ?? 0;
  const usageBefore = (previous.usage ?? {}) as Record<string, TokenUsage>;
  const usageNow = (current.usage ?? {}) as Record<string, TokenUsage>;
  const tokens = zeroUsage();
  for (const [node, usage] of Object.entries(usageNow)) {
    tokens.inputTokens += usage.inputTokens - (usageBefore[node]?.inputTokens ?? 0);
    tokens.outputTokens += usage.outputTokens - (usageBefore[node]?.outputTokens ?? 0);
  }
  const failed = (tuple.pendingWrites ?? []).some(([, channel]) => channel === "__error__");
  const round = (current.loopState as { context?: { round?: unknown } } | undefined)?.context?.round;
  return {
    checkpointId: tuple.checkpoint.id,
    parentId: parentIdOf(tuple),
    step,
    source: tuple.metadata?.source ?? "",
    nodes: checkpointNodes(tuple, nodesRun(previous, current)),
    createdAt: tuple.checkpoint.ts,
    tokens,
    ...(typeof round === "number" && round > 0 ? { round } : {}),
    status: failed ? "error" : step < 0 ? "input" : "done",
    changes: diff(previous, current).map((change) => ({
      path: change.path.join("."),
      kind: change.type === "CREATE" ? "added" : change.type === "REMOVE" ? "removed" : "changed",
      ...(change.type !== "REMOVE" ? { value: change.value } : {}),
      ...(change.type !== "CREATE" ? { before: change.oldValue } : {}),
    })),
  };
}

/** A thread's checkpoint history: step, nodes, time, tokens, status and the state diff of each step (against its parent). */
export async function threadHistory(threadId: string, options: StoreOptions = {}): Promise<ThreadHistory> {
  return withStore(options, "read", async (store) => {
    const thread = requireThread(store, threadId);
    const tuples = await rootCheckpoints(store, threadId);
    const tree = checkpointTree(tuples.map((tuple) => ({ id: tuple.checkpoint.id, parentId: parentIdOf(tuple) })));
    const valuesById = new Map<string, Record<string, unknown>>();
    const checkpoints = tuples.map((tuple): CheckpointSummary => {
      const current = valuesOf(tuple);
      valuesById.set(tuple.checkpoint.id, current);
      const parentId = parentIdOf(tuple);
      const summary = summarise(tuple, (parentId !== undefined && valuesById.get(parentId)) || {}, current);
      const head = tree.head === tuple.checkpoint.id ? { head: true as const } : {};
      return { ...summary, branch: tree.branchOf.get(tuple.checkpoint.id) ?? 0, ...head };
    });
    return { thread, checkpoints, branches: [...tree.branches], ...(tree.head ? { head: tree.head } : {}) };
  });
}

/** One of the thread's root checkpoints, by id or a unique prefix of one; else a one-line error (exit 2). */
export async function findCheckpoint(store: Store, threadId: string, idOrPrefix: string): Promise<CheckpointTuple> {
  const matches = (await rootCheckpoints(store, threadId)).filter((t) => t.checkpoint.id.startsWith(idOrPrefix));
  if (matches.length !== 1) {
    const problem = matches.length === 0 ? "no checkpoint" : "more than one checkpoint";
    throw new ConfigError(`${problem} of thread "${threadId}" matches "${idOrPrefix}": see \`loopgraph inspect ${threadId}\``);
  }
  return matches[0]!;
}

/** The full state at one checkpoint (an id, or a unique prefix of one). */
export async function checkpointState(threadId: string, checkpointId: string, options: StoreOptions = {}): Promise<CheckpointState> {
  return withStore(options, "read", async (store) => {
    requireThread(store, threadId);
    const tuple = await findCheckpoint(store, threadId, checkpointId);
    return {
      threadId,
      checkpointId: tuple.checkpoint.id,
      step: tuple.metadata?.step ?? 0,
      createdAt: tuple.checkpoint.ts,
      values: valuesOf(tuple),
    };
  });
}
