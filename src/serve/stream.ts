/**
 * What a run streams, in the LangGraph server's stream modes, made from loopgraph's own records:
 * `values` and `updates` from the thread's checkpoints as the run writes them (read back from the
 * store after each step, so they are what `inspect` shows), `messages-tuple` from the model's
 * streamed text, `custom` as loopgraph's run events (docs/events.md), and the pause of an
 * approval as LangGraph's `__interrupt__`.
 */
import { threadHistory, type CheckpointSummary } from "../engine/inspect.js";
import type { RunEvent } from "../runtime/events.js";
import type { ThreadRecord } from "../runs/thread-registry.js";
import { withStore, type StoreOptions } from "../store/store.js";
import { interruptsOf, plainValuesAt } from "./threads.js";

/** The stream modes `serve` gives; the others LangGraph has are refused by name (see docs/serve.md). */
export const STREAM_MODES = ["values", "updates", "messages-tuple", "custom"] as const;
export type StreamMode = (typeof STREAM_MODES)[number];

/** One server-sent event of a run's stream. */
export interface StreamPart {
  event: string;
  data: unknown;
}

/** Checkpoints that record no node's work: the run's input, and where a fork edited the state. */
const NOT_A_NODE = new Set(["input", "start", "update"]);

/** How many of a thread's newest checkpoints one look reads: more than one step writes. */
const LOOK_BACK = 50;

/**
 * Follows a thread's checkpoints while a run writes them: each new one is published once, as
 * `values` (the whole state) and `updates` (`{node: what changed}`), in the order written.
 */
export class CheckpointFollower {
  private readonly seen = new Set<string>();
  private previous: Record<string, unknown> = {};
  private looking: Promise<void> = Promise.resolve();

  constructor(
    private readonly threadId: string,
    private readonly store: StoreOptions,
    private readonly publish: (part: StreamPart) => void,
  ) {}

  /** What the thread holds before the run: not streamed again. */
  async start(): Promise<void> {
    const history = await threadHistory(this.threadId, this.store, { limit: LOOK_BACK }).catch(() => undefined);
    for (const checkpoint of history?.checkpoints ?? []) this.seen.add(checkpoint.checkpointId);
    const head = history?.checkpoints.find((checkpoint) => checkpoint.head);
    if (head) this.previous = await withStore(this.store, "read", (store) => plainValuesAt(store, this.threadId, head.checkpointId));
  }

  /** Looks for new checkpoints (after a step ended); looks are made one after another, never two at once. */
  look(): Promise<void> {
    this.looking = this.looking.then(() => this.publishNew()).catch(() => undefined);
    return this.looking;
  }

  /** The state last published (or held before the run). */
  get values(): Record<string, unknown> {
    return this.previous;
  }

  private async publishNew(): Promise<void> {
    const history = await threadHistory(this.threadId, this.store, { limit: LOOK_BACK });
    const fresh = history.checkpoints.filter((checkpoint) => !this.seen.has(checkpoint.checkpointId));
    if (fresh.length === 0) return;
    await withStore(this.store, "read", async (store) => {
      for (const checkpoint of fresh) {
        this.seen.add(checkpoint.checkpointId);
        if (checkpoint.nodes.includes("input")) continue;
        const values = await plainValuesAt(store, this.threadId, checkpoint.checkpointId);
        const nodes = checkpoint.nodes.filter((node) => !NOT_A_NODE.has(node));
        if (nodes.length > 0) this.publish({ event: "updates", data: updateOf(checkpoint, nodes, this.previous, values) });
        this.publish({ event: "values", data: values });
        this.previous = values;
      }
    });
  }
}

/** A step's update as LangGraph streams it: per node, the channels it changed (of a list, the items it added). */
function updateOf(
  checkpoint: CheckpointSummary,
  nodes: string[],
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): Record<string, unknown> {
  const channels = new Set(checkpoint.changes.map((change) => change.path.split(".")[0]!));
  const update: Record<string, unknown> = {};
  for (const channel of channels) update[channel] = addedOrWhole(before[channel], after[channel]);
  // One step of several nodes (a fan-out) is one update: each of them is named with it.
  return Object.fromEntries(nodes.map((node) => [node, update]));
}

function addedOrWhole(before: unknown, after: unknown): unknown {
  if (!Array.isArray(before) || !Array.isArray(after) || after.length < before.length) return after;
  const kept = before.every((item, index) => JSON.stringify(item) === JSON.stringify(after[index]));
  return kept ? after.slice(before.length) : after;
}

/**
 * The run's events as stream parts: `custom` carries each of loopgraph's events; `messages`
 * (the `messages-tuple` mode) the model's streamed text as LangGraph's message chunks, and a
 * complete message that came without pieces as one chunk.
 */
export class EventTranslator {
  private readonly streaming = new Map<string, string>();
  private counter = 0;

  constructor(
    private readonly runId: string,
    private readonly modes: ReadonlySet<StreamMode>,
    private readonly publish: (part: StreamPart) => void,
  ) {}

  translate(event: RunEvent): void {
    if (this.modes.has("custom")) this.publish({ event: "custom", data: event });
    if (!this.modes.has("messages-tuple") || event.type !== "message") return;
    const key = `${event.threadId}\u0000${event.node}`;
    const metadata = { langgraph_node: event.node, thread_id: event.threadId, run_id: this.runId };
    if (event.delta !== undefined) {
      let id = this.streaming.get(key);
      if (id === undefined) this.streaming.set(key, (id = `${this.runId}-${++this.counter}`));
      this.publish({ event: "messages", data: [{ type: "AIMessageChunk", id, content: event.delta }, metadata] });
      return;
    }
    if (event.content === undefined) return;
    // The pieces already carried this message's text: its end closes them.
    if (this.streaming.delete(key)) return;
    this.publish({
      event: "messages",
      data: [{ type: "AIMessageChunk", id: `${this.runId}-${++this.counter}`, content: event.content }, metadata],
    });
  }
}

/** The pause of a run waiting for an answer, as LangGraph streams it: `__interrupt__` in `updates` and in the last `values`. */
export function interruptParts(record: ThreadRecord, values: Record<string, unknown>, modes: ReadonlySet<StreamMode>): StreamPart[] {
  const interrupts = interruptsOf(record);
  if (interrupts.length === 0) return [];
  const parts: StreamPart[] = [];
  if (modes.has("updates")) parts.push({ event: "updates", data: { __interrupt__: interrupts } });
  if (modes.has("values")) parts.push({ event: "values", data: { ...values, __interrupt__: interrupts } });
  return parts;
}
