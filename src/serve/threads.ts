/**
 * loopgraph's threads as the LangGraph server shows threads: the record and checkpoints of the
 * store, read as `inspect` reads them (engine/inspect.ts), in LangGraph's shapes (`Thread`,
 * `ThreadState`). Nothing here writes.
 */
import { threadHistory, toPlainValues, type CheckpointSummary } from "../engine/inspect.js";
import type { ThreadRecord } from "../runs/thread-registry.js";
import { requireThread, withStore, type Store, type StoreOptions } from "../store/store.js";
import { HttpError } from "../ui/http.js";
import { loopThreadOf } from "../engine/status.js";

/** LangGraph's thread statuses. */
export type LangGraphThreadStatus = "idle" | "busy" | "interrupted" | "error";

/** One question a paused thread waits on, as LangGraph names it: the id a `command: {resume: {id: …}}` answers it by. */
export interface LangGraphInterrupt {
  id: string;
  value: unknown;
}

/** What the server keeps of a thread besides the store: the metadata clients gave it (for this server's life). */
export interface ThreadExtras {
  metadata: Record<string, unknown>;
  createdAt: string;
}

/**
 * The thread's status for LangGraph: running or queued is `busy`; a pause (an approval, a
 * breakpoint) and a stopped run that can go on are `interrupted`; a failed run and one that
 * ended at a limit before its work was judged done are `error` (never `idle`: it did not do its work).
 */
export function threadStatus(record: ThreadRecord): LangGraphThreadStatus {
  switch (record.status) {
    case "running":
    case "queued":
      return "busy";
    case "paused":
    case "interrupted":
      return "interrupted";
    case "failed":
    case "limited":
      return "error";
    default:
      return "idle";
  }
}

/** The questions a paused run waits on: several when branches of one step each ask. */
export function interruptsOf(record: ThreadRecord): LangGraphInterrupt[] {
  const pause = record.pause;
  if (pause?.reason !== "input") return [];
  if (pause.pending?.length) return pause.pending.map((question) => ({ id: question.id, value: question.value }));
  return [{ id: questionId(pause.value), value: pause.value }];
}

/**
 * The record whose questions the thread waits on: its own, or, for a chat's thread (a graph with
 * a mediator), its loop's (`<thread>.loop`), whose approval the chat's run is paused on; an
 * answer to the chat's thread goes to it (`resume` of a chat continues its loop).
 */
export async function waitingRecord(store: Pick<Store, "threads">, record: ThreadRecord): Promise<ThreadRecord> {
  if (interruptsOf(record).length > 0) return record;
  const loop = await store.threads.get(loopThreadOf(record.threadId));
  return loop && interruptsOf(loop).length > 0 ? loop : record;
}

/** A lone question's id: the tool call it asks about (what `resume --call` takes), else `input`. */
function questionId(value: unknown): string {
  const callId = (value as { callId?: unknown } | undefined)?.callId;
  return typeof callId === "string" ? callId : "input";
}

/** The plain values (messages as `{type, id, content, …}`) at one of the thread's root checkpoints. */
export async function plainValuesAt(store: Store, threadId: string, checkpointId: string): Promise<Record<string, unknown>> {
  const tuple = await store.saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: checkpointId } });
  return toPlainValues((tuple?.checkpoint.channel_values ?? {}) as Record<string, unknown>);
}

/** The thread as LangGraph's `Thread`: its newest values and, when paused on a question, its interrupts. */
export async function threadJson(record: ThreadRecord, store: Store, extras?: ThreadExtras): Promise<Record<string, unknown>> {
  const head = await store.checkpoints.latestCheckpointId(record.threadId);
  const values = head ? await plainValuesAt(store, record.threadId, head) : {};
  const waiting = await waitingRecord(store, record);
  const interrupts = interruptsOf(waiting);
  return {
    thread_id: record.threadId,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    metadata: threadMetadata(record, extras),
    status: waiting === record ? threadStatus(record) : "interrupted",
    values,
    interrupts: interrupts.length > 0 ? { [waiting.pause?.node ?? "input"]: interrupts } : {},
    config: {},
  };
}

/** A thread the server has given an id that has not run yet: it has no record in the store until its first run. */
export function reservedThreadJson(threadId: string, extras: ThreadExtras): Record<string, unknown> {
  return {
    thread_id: threadId,
    created_at: extras.createdAt,
    updated_at: extras.createdAt,
    metadata: extras.metadata,
    status: "idle",
    values: {},
    interrupts: {},
    config: {},
  };
}

/** The client's metadata, and what loopgraph knows of the thread: its graph (the assistant) and its own status. */
export function threadMetadata(record: ThreadRecord, extras?: ThreadExtras): Record<string, unknown> {
  return {
    ...extras?.metadata,
    graph_id: record.graphName,
    assistant_id: record.graphName,
    loopgraph_status: record.status,
    ...(record.error !== undefined && { loopgraph_error: record.error }),
  };
}

/** A checkpoint's id as LangGraph's `Checkpoint`. */
const checkpointRef = (threadId: string, checkpointId: string) => ({
  thread_id: threadId,
  checkpoint_ns: "",
  checkpoint_id: checkpointId,
  checkpoint_map: null,
});

/**
 * The thread's states, newest first (LangGraph's `getHistory`): `limit` of them, those older than
 * `before` when it names a checkpoint. `next` of a state is the nodes its next step ran (on any
 * branch), or, for the newest of a paused thread, the node it waits at.
 */
export async function threadStates(
  threadId: string,
  options: StoreOptions,
  window: { limit: number; before?: string; at?: string },
): Promise<Record<string, unknown>[]> {
  const history = await threadHistory(threadId, options).catch((error: unknown) => {
    if (error instanceof Error && error.message.startsWith("no thread ")) throw new HttpError(404, error.message);
    throw error;
  });
  const newestFirst = [...history.checkpoints].reverse();
  let from = 0;
  const mark = window.at ?? window.before;
  if (mark !== undefined) {
    const index = newestFirst.findIndex((checkpoint) => checkpoint.checkpointId === mark);
    if (index < 0) throw new HttpError(404, `thread "${threadId}" has no checkpoint "${mark}"`);
    from = window.at !== undefined ? index : index + 1;
  }
  const chosen = newestFirst.slice(from, from + window.limit);
  return withStore(options, "read", async (store) => {
    const record = await requireThread(store, threadId);
    const states: Record<string, unknown>[] = [];
    for (const checkpoint of chosen) states.push(await stateOf(store, record, checkpoint, history.checkpoints));
    return states;
  });
}

/** One checkpoint as LangGraph's `ThreadState`. */
async function stateOf(
  store: Store,
  record: ThreadRecord,
  checkpoint: CheckpointSummary,
  all: readonly CheckpointSummary[],
): Promise<Record<string, unknown>> {
  const values = await plainValuesAt(store, record.threadId, checkpoint.checkpointId);
  const children = all.filter((other) => other.parentId === checkpoint.checkpointId);
  const paused = checkpoint.head && record.status === "paused" && record.pause?.node !== undefined;
  const next = paused ? [record.pause!.node!] : [...new Set(children.flatMap((child) => child.nodes))].filter((node) => node !== "update");
  // A chat's newest state shows the question its loop waits on, as a task of the loop's node.
  const waiting = checkpoint.head ? await waitingRecord(store, record) : record;
  const interrupts = checkpoint.head ? interruptsOf(waiting) : [];
  const asking = waiting.pause?.node;
  const taskNodes = asking !== undefined && interrupts.length > 0 && !next.includes(asking) ? [...next, asking] : next;
  return {
    values,
    next,
    tasks: taskNodes.map((node) => ({
      id: `${checkpoint.checkpointId}:${node}`,
      name: node,
      error: null,
      interrupts: node === asking ? interrupts : [],
      checkpoint: null,
      state: null,
      result: null,
    })),
    metadata: { step: checkpoint.step, source: checkpoint.source, nodes: checkpoint.nodes, branch: checkpoint.branch },
    created_at: checkpoint.createdAt,
    checkpoint: checkpointRef(record.threadId, checkpoint.checkpointId),
    parent_checkpoint: checkpoint.parentId ? checkpointRef(record.threadId, checkpoint.parentId) : null,
    interrupts,
  };
}
