import { isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import { ERROR, type CheckpointTuple } from "@langchain/langgraph-checkpoint";
import type { Difference } from "microdiff";
import { sameEncoding } from "../checkpoint/item-framing.js";
import type { EncodedItem } from "../checkpoint/item-framing.js";
import { sharedSeqPrefix, type SeqRange } from "../checkpoint/list-history.js";
import { canReadHistory, type CheckpointHistoryEntry, type HistoryReader, type StoredChannel } from "../checkpoint/history-reader.js";
import { ConfigError } from "../errors.js";
import type { ThreadRecord } from "../runs/thread-registry.js";
import { requireThread, withStore, type Store, type StoreOptions } from "../store/store.js";
import type { TokenUsage } from "../state/graph-state.js";
import { checkpointTree, type BranchInfo } from "./checkpoint-tree.js";
import { lanesOfSteps, type Lane } from "./lanes.js";
import { plainDiff } from "./plain-diff.js";

export { listThreads, type ThreadSummary } from "./thread-list.js";

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
  /** The nodes that ran more than once in this step (a map's instances, all together): how many times. */
  instances?: Record<string, number>;
  /** A step where several tasks ran together: each one's node (and map index), tokens and time. */
  lanes?: Lane[];
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
  /** Which of the thread's checkpoints (oldest first) `checkpoints` holds: indexes [from, to) of `total`. */
  range: HistoryRange;
  /** A window's: when each parent of its checkpoints that it does not hold was written (by id), for their steps' times. */
  parentTimes?: Record<string, string>;
  /** The tokens of the run that led to the newest checkpoint, all its steps (those not shown too). */
  tokens: TokenUsage;
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
      .filter(([channel]) => isShownChannel(channel))
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

/** The nodes whose visit count rose by more than one in a step (a map's instances each count one): by how much. */
export function instancesRun(before: Record<string, unknown>, after: Record<string, unknown>): Record<string, number> | undefined {
  const visitsBefore = (before.visits ?? {}) as Record<string, number>;
  const visitsNow = (after.visits ?? {}) as Record<string, number>;
  const counts = Object.entries(visitsNow)
    .map(([node, visits]) => [node, visits - (visitsBefore[node] ?? 0)] as const)
    .filter(([, count]) => count > 1);
  return counts.length > 0 ? Object.fromEntries(counts) : undefined;
}

/** What a checkpoint's summary takes from its row, besides its state. */
interface StepFacts {
  checkpointId: string;
  parentId?: string;
  step: number;
  source: string;
  createdAt: string;
  failed: boolean;
}

/** A state's `usage`: per node (a graph's state), or one total (a Coder's own state, nested). */
function usageByNode(usage: unknown): Record<string, TokenUsage> {
  if (typeof (usage as TokenUsage | undefined)?.inputTokens === "number") return { "": usage as TokenUsage };
  return (usage ?? {}) as Record<string, TokenUsage>;
}

/**
 * A Coder's step, which counts no visits: `model` when it added the model's answer, `tools` a
 * tool's result, `reads` the results of a batch of reads run at once, `join` the judging after
 * such a batch, `finish` its result.
 */
function coderStepNode(changes: readonly StateChange[]): string | undefined {
  const added = changes.flatMap((change) =>
    change.kind === "added" && /^messages(\.\d+)?$/.test(change.path) ? (Array.isArray(change.value) ? change.value : [change.value]) : [],
  ) as PlainMessage[];
  if (added.some((message) => message?.type === "ai")) return "model";
  // A batch of reads run at once adds each result; the join after it judges them.
  if (changes.some((change) => change.path === "readResults" || change.path.startsWith("readResults.")))
    return added.some((message) => message?.type === "tool") ? "reads" : "join";
  if (added.some((message) => message?.type === "tool")) return "tools";
  if (added.some((message) => message?.type === "human")) return "remind";
  return changes.some((change) => change.path === "result" || change.path.startsWith("result.")) ? "finish" : undefined;
}

function summarise(
  facts: StepFacts,
  previous: Record<string, unknown>,
  current: Record<string, unknown>,
  changes: StateChange[],
): Omit<CheckpointSummary, "branch"> {
  const { step } = facts;
  const usageBefore = usageByNode(previous.usage);
  const usageNow = usageByNode(current.usage);
  const tokens = zeroUsage();
  for (const [node, usage] of Object.entries(usageNow)) {
    tokens.inputTokens += usage.inputTokens - (usageBefore[node]?.inputTokens ?? 0);
    tokens.outputTokens += usage.outputTokens - (usageBefore[node]?.outputTokens ?? 0);
  }
  const round = (current.loopState as { context?: { round?: unknown } } | undefined)?.context?.round;
  const ran = nodesRun(previous, current);
  const instances = instancesRun(previous, current);
  return {
    checkpointId: facts.checkpointId,
    parentId: facts.parentId,
    step,
    source: facts.source,
    nodes: step < 0 ? ["input"] : ran.length > 0 ? ran : facts.source === "update" || facts.source === "fork" ? [facts.source] : ["start"],
    ...(instances && { instances }),
    createdAt: facts.createdAt,
    tokens,
    ...(typeof round === "number" && round > 0 ? { round } : {}),
    status: facts.failed ? "error" : step < 0 ? "input" : "done",
    changes,
  };
}

/** microdiff's changes as `inspect` shows them; `offset` is added to the first index of a path under `prefix`. */
function asChanges(changes: Difference[], prefix: string, offset = 0): StateChange[] {
  return changes.map((change) => {
    const [first, ...rest] = change.path;
    const path = [...(prefix ? [prefix] : []), typeof first === "number" ? first + offset : first, ...rest];
    return {
      path: path.join("."),
      kind: change.type === "CREATE" ? "added" : change.type === "REMOVE" ? "removed" : "changed",
      ...(change.type !== "REMOVE" ? { value: change.value } : {}),
      ...(change.type !== "CREATE" ? { before: change.oldValue } : {}),
    };
  });
}

/**
 * Whether `toPlainValues` keeps a channel: not one of LangGraph's own (`__start__`, `__pregel_…`,
 * the scheduled `branch:to:<node>`, a join's `join:<sources>:<target>`).
 */
function isShownChannel(channel: string): boolean {
  return !(channel.startsWith("__") || channel.startsWith("branch:") || channel.startsWith("join:"));
}

/** A channel's value at one checkpoint, decoded once and shared by the checkpoints that keep its version. */
interface ChannelEntry {
  version: string;
  /**
   * The value as `toPlainValues` makes it; a list's items may be PendingItems, decoded when a diff
   * shows them (`plainValue`, `plainItems`).
   */
  plain: unknown;
  /** List channels: the stored items. */
  items?: readonly EncodedItem[];
  /** Where the items lie in the channel's item log (stores of version 3). */
  ranges?: readonly SeqRange[];
  /** Lists: this entry's own number in the walk, and the leading items it holds as the entry it was read from (by number) does (the same objects). */
  id?: number;
  sharedWith?: { id: number; items: number };
}

/** The shown channels of a checkpoint, in the order of its `channel_values` (its `channel_versions` order). */
interface StepState {
  channels: Map<string, ChannelEntry>;
}

const NO_STATE: StepState = { channels: new Map() };

/**
 * A list item as stored, not decoded yet: decoded when a diff first shows it, once (the states
 * holding it share it). The items a list shares with its parent's are never decoded: a page of a
 * long thread decodes what its steps change, not the message list its first parent holds.
 */
class PendingItem {
  /** Set once decoded. */
  decoded?: { readonly plain: unknown };

  constructor(
    readonly encoded: EncodedItem,
    readonly reader: StateReader,
  ) {}
}

/** List items as plain values, the pending ones decoded (all in one call); `given(i)` is an item's value in their stead when it gives one. */
async function plainItems(items: readonly unknown[], given?: (index: number) => { plain: unknown } | undefined): Promise<unknown[]> {
  const values = [...items];
  const pending: [index: number, item: PendingItem][] = [];
  values.forEach((item, index) => {
    const stead = given?.(index);
    if (stead) values[index] = stead.plain;
    else if (item instanceof PendingItem) {
      if (item.decoded) values[index] = item.decoded.plain;
      else pending.push([index, item]);
    }
  });
  if (pending.length === 0) return values;
  const decoded = await pending[0]![1].reader.decodeItems(pending.map(([, item]) => item.encoded));
  pending.forEach(([index, item], i) => {
    item.decoded = { plain: decoded[i] };
    values[index] = decoded[i];
  });
  return values;
}

/** What a diff compares in place of an item both lists hold at the same index: alike on both sides, it shows no change. */
const UNCHANGED = { plain: null };

/** A channel's whole value, its pending list items decoded. */
function plainValue(entry: ChannelEntry): unknown | Promise<unknown> {
  return Array.isArray(entry.plain) && entry.items ? plainItems(entry.plain) : entry.plain;
}

/** Some channels of a state as a plain object: what the summary reads for tokens, nodes and round. */
async function plainOf(state: StepState, wanted: readonly string[]): Promise<Record<string, unknown>> {
  const values: Record<string, unknown> = {};
  for (const channel of wanted) {
    const entry = state.channels.get(channel);
    if (entry) values[channel] = await plainValue(entry);
  }
  return values;
}

/** The list versions lately read per channel: the bases a delta or rollup is rebuilt from. */
const KNOWN_LIST_VERSIONS = 64;

/**
 * Reads the state of each checkpoint from its parent's: only channels whose version changed are
 * read and decoded, and of a list only the items past the prefix it shares with the parent's.
 */
class StateReader {
  private readonly knownLists = new Map<string, Map<string, readonly EncodedItem[]>>();

  constructor(
    private readonly saver: HistoryReader,
    private readonly threadId: string,
    private readonly ns: string,
  ) {}

  async read(entry: CheckpointHistoryEntry, parent: StepState): Promise<StepState> {
    const channels = new Map<string, ChannelEntry>();
    for (const [channel, rawVersion] of Object.entries(entry.channelVersions)) {
      if (!isShownChannel(channel)) continue;
      const version = String(rawVersion);
      const before = parent.channels.get(channel);
      const read = before?.version === version ? before : await this.readEntry(channel, version, before);
      if (read) channels.set(channel, read);
    }
    return { channels };
  }

  private async readEntry(channel: string, version: string, before: ChannelEntry | undefined): Promise<ChannelEntry | undefined> {
    const known = this.knownLists.get(channel);
    const stored = await this.saver.readChannel(
      this.threadId,
      channel,
      version,
      {
        ...(before?.items ? { previous: { items: before.items, ...(before.ranges ? { ranges: before.ranges } : {}) } } : {}),
        knownItems: (base) => (before?.version === base && before.items ? before.items : known?.get(base)),
      },
      this.ns,
    );
    if (!stored) return undefined;
    if (stored.kind === "value") {
      const decoded = await this.saver.decodeChannel(stored);
      // Plain JSON holds no message to convert: `toPlainValues` would copy it as it is.
      const plain = decoded.plainJson ? decoded.value : toPlainValues({ [channel]: decoded.value })[channel];
      return { version, plain };
    }
    this.rememberList(channel, version, stored.items);
    return this.readList(version, stored, before);
  }

  private rememberList(channel: string, version: string, items: readonly EncodedItem[]): void {
    let known = this.knownLists.get(channel);
    if (!known) this.knownLists.set(channel, (known = new Map()));
    known.set(version, items);
    if (known.size > KNOWN_LIST_VERSIONS) known.delete(known.keys().next().value!);
  }

  /** List items decoded, as `toPlainValues` makes them. */
  async decodeItems(items: readonly EncodedItem[]): Promise<unknown[]> {
    const decoded = await this.saver.decodeChannel({ kind: "list", items });
    return (decoded.value as unknown[]).map((item) => toPlainValues({ item }).item);
  }

  /**
   * A list's plain items: the parent's where stored alike, the others pending (decoded when a diff
   * shows them). The items at the log positions the parent's lead with are stored alike without
   * comparing them: a version reads its new items only.
   */
  private readList(
    version: string,
    { items, ranges }: Extract<StoredChannel, { kind: "list" }>,
    before: ChannelEntry | undefined,
  ): ChannelEntry {
    const previousItems = before?.items ?? [];
    const previousPlain = Array.isArray(before?.plain) ? (before.plain as unknown[]) : [];
    const comparable = Math.min(items.length, previousItems.length, previousPlain.length);
    let shared = Math.min(comparable, before?.ranges && ranges ? sharedSeqPrefix(before.ranges, ranges) : 0);
    while (shared < comparable && sameEncoding(items[shared]!, previousItems[shared]!)) shared += 1;
    const plain = previousPlain.slice(0, shared);
    // Past the shared prefix too, an item stored as the parent's at its index (one replaced or removed before it) is the parent's.
    for (let index = shared; index < items.length; index++) {
      const kept = index < comparable && sameEncoding(items[index]!, previousItems[index]!);
      plain.push(kept ? previousPlain[index] : new PendingItem(items[index]!, this));
    }
    const id = (listEntries += 1);
    return {
      version,
      plain,
      items,
      ...(ranges ? { ranges } : {}),
      id,
      ...(before?.id !== undefined && { sharedWith: { id: before.id, items: shared } }),
    };
  }
}

/** List entries read so far (each one's number, see ChannelEntry.id). */
let listEntries = 0;

/** The changes from one state to the next, as microdiff gives them for the two states' plain values whole. */
async function stateChanges(previous: StepState, current: StepState): Promise<StateChange[]> {
  const changes: StateChange[] = [];
  for (const [channel, before] of previous.channels) {
    const after = current.channels.get(channel);
    if (!after) {
      changes.push({ path: channel, kind: "removed", before: await plainValue(before) });
    } else if (after !== before) {
      changes.push(...(await entryChanges(channel, before, after)));
    }
  }
  for (const [channel, after] of current.channels) {
    if (!previous.channels.has(channel)) changes.push({ path: channel, kind: "added", value: await plainValue(after) });
  }
  return changes;
}

async function entryChanges(channel: string, before: ChannelEntry, after: ChannelEntry): Promise<StateChange[]> {
  if (Array.isArray(before.plain) && Array.isArray(after.plain)) {
    // The leading items both hold alike (the same objects) differ in nothing: diff from the first other one.
    const comparable = Math.min(before.plain.length, after.plain.length);
    let shared = after.sharedWith && after.sharedWith.id === before.id ? Math.min(after.sharedWith.items, comparable) : 0;
    while (shared < comparable && before.plain[shared] === after.plain[shared]) shared += 1;
    // Past it, an item both hold at the same index (stored alike) differs in nothing either: neither is decoded for it.
    const [beforeTail, afterTail] = [before.plain.slice(shared), after.plain.slice(shared)];
    const unchanged = (index: number) =>
      index < beforeTail.length && index < afterTail.length && beforeTail[index] === afterTail[index] ? UNCHANGED : undefined;
    const [beforeItems, afterItems] = [await plainItems(beforeTail, unchanged), await plainItems(afterTail, unchanged)];
    return asChanges(plainDiff(beforeItems, afterItems), channel, shared);
  }
  return asChanges(plainDiff({ [channel]: await plainValue(before) }, { [channel]: await plainValue(after) }), "");
}

/**
 * A thread's checkpoint history: step, nodes, time, tokens, status and the state diff of each step (against its parent).
 *
 * Linear in the checkpoints it shows: they are read oldest first with their channel versions,
 * and only the channels whose version differs from the parent's are decoded and diffed. The state
 * is kept only for checkpoints whose children are still to come (one per branch being read). A
 * window (see HistoryWindow) reads its checkpoints only, from the state of their parents (their
 * lists' items decoded only where a diff shows them).
 */
export async function threadHistory(threadId: string, options: StoreOptions, window: HistoryWindow = {}): Promise<ThreadHistory> {
  return withStore(options, "read", async (store) => {
    const thread = await requireThread(store, threadId);
    const { checkpoints, tree, range, parentTimes } = await timeline(store, threadId, "", window);
    return {
      thread,
      checkpoints: await withLanes(store, threadId, checkpoints, parentTimes),
      branches: [...tree.branches],
      ...(tree.head ? { head: tree.head } : {}),
      range,
      ...(parentTimes.size > 0 && { parentTimes: Object.fromEntries(parentTimes) }),
      tokens: tree.head === undefined ? zeroUsage() : await tokensAt(store, threadId, tree.head),
    };
  });
}

/** The tokens a root checkpoint's state counts (its `usage`, a plain channel: nothing else is read): the run's that led to it. */
export async function tokensAt(store: Pick<Store, "checkpoints">, threadId: string, checkpointId?: string): Promise<TokenUsage> {
  const { usage } = await store.checkpoints.plainChannels(threadId, ["usage"], checkpointId);
  const total = zeroUsage();
  for (const node of Object.values(usageByNode(usage))) {
    total.inputTokens += node.inputTokens ?? 0;
    total.outputTokens += node.outputTokens ?? 0;
  }
  return total;
}

/** The checkpoints, each step where several tasks ran (a map, a fan-out) with its lanes. */
async function withLanes(
  store: Store,
  threadId: string,
  checkpoints: CheckpointSummary[],
  parentTimes: ReadonlyMap<string, string>,
): Promise<CheckpointSummary[]> {
  const created = new Map([...parentTimes, ...checkpoints.map((checkpoint) => [checkpoint.checkpointId, checkpoint.createdAt] as const)]);
  const parallel = checkpoints.filter(
    (checkpoint) => checkpoint.parentId !== undefined && (checkpoint.nodes.length > 1 || checkpoint.instances !== undefined),
  );
  const steps = parallel.map((checkpoint) => ({
    parentId: checkpoint.parentId!,
    startedAt: created.get(checkpoint.parentId!) ?? checkpoint.createdAt,
  }));
  const lanes = await lanesOfSteps(store, threadId, steps);
  const isParallel = new Set(parallel);
  return checkpoints.map((checkpoint) => {
    const found = checkpoint.parentId === undefined ? undefined : lanes.get(checkpoint.parentId);
    return found && found.length > 1 && isParallel.has(checkpoint) ? { ...checkpoint, lanes: found } : checkpoint;
  });
}

/**
 * The timeline of a graph nested in a thread's step: a Coder's turn (its model and tool steps),
 * a subagent run in a Coder's tool step, a subgraph node's run.
 */
export interface NestedTimeline {
  /** Its checkpoint namespace: `node:task` for each graph it is nested in, joined by `|`. */
  ns: string;
  /** The namespace of the graph it ran in ("" for the root graph). */
  parentNs: string;
  /** The checkpoint of that graph it ran from: the parent of the step that ran it. */
  from?: string;
  /** The node of that graph that ran it (a Coder's `tools` for a subagent). */
  node: string;
  /** Its steps that did something (its input and start left out), oldest first. */
  checkpoints: CheckpointSummary[];
}

/**
 * The checkpoints (by id) the graphs a `nestedTimelines` read started between: those that started
 * after `after` (and before `before`, when given). Ids are time-ordered: a graph nested in a step
 * starts after the step's parent and before the step.
 */
export interface NestedSpan {
  after: string;
  before?: string;
}

/** Every graph nested in the thread's steps (see NestedTimeline), in the order they started; `span`: those that started in it only. */
export async function nestedTimelines(threadId: string, options: StoreOptions, span?: NestedSpan): Promise<NestedTimeline[]> {
  return withStore(options, "read", async (store) => {
    await requireThread(store, threadId);
    // Every checkpoint's address (no state), oldest first: each namespace's first one says when it started.
    const started = new Map<string, string>();
    for (const { ns, id } of await store.checkpoints.checkpointsWithPrefix(threadId, ""))
      if (ns !== "" && !started.has(ns)) started.set(ns, id);
    const namespaces = [...started]
      .filter(([, first]) => span === undefined || (first > span.after && (span.before === undefined || first < span.before)))
      .map(([ns]) => ns);
    const timelines: NestedTimeline[] = [];
    for (const ns of namespaces) {
      const { checkpoints, parents } = await timeline(store, threadId, ns);
      const segments = ns.split("|");
      const parentNs = segments.slice(0, -1).join("|");
      timelines.push({
        ns,
        parentNs,
        ...(parents[parentNs] !== undefined && { from: parents[parentNs] }),
        node: segments.at(-1)!.split(":")[0]!,
        checkpoints: checkpoints
          .filter((checkpoint) => checkpoint.step > 0)
          .map((checkpoint) =>
            checkpoint.nodes[0] === "start" ? { ...checkpoint, nodes: [coderStepNode(checkpoint.changes) ?? "start"] } : checkpoint,
          ),
      });
    }
    return timelines.sort((a, b) => ((a.checkpoints[0]?.createdAt ?? "") < (b.checkpoints[0]?.createdAt ?? "") ? -1 : 1));
  });
}

/**
 * Which of a thread's root checkpoints (oldest first, by id) a history shows: all of them by
 * default; `from` those from one on (an index, as `inspect` numbers its rows, or a checkpoint id
 * or a unique prefix of one); `before` those before an index; `limit` at most so many: the first
 * ones from `from` when it is given, else the newest ones.
 */
export interface HistoryWindow {
  from?: number | string;
  before?: number;
  limit?: number;
}

/** The part of the thread's checkpoints a history holds: indexes [from, to) of `total`. */
export interface HistoryRange {
  from: number;
  to: number;
  total: number;
}

/** Indexes [from, to) of the `links` (oldest first) the window names; a checkpoint `from` names that is not there is a one-line error. */
function rangeOf(links: readonly { id: string }[], window: HistoryWindow, threadId: string): HistoryRange {
  const total = links.length;
  const clamp = (index: number) => Math.max(0, Math.min(total, Math.floor(index)));
  const to = clamp(window.before ?? total);
  if (typeof window.from === "string") {
    const found = links.flatMap((link, index) => (link.id.startsWith(window.from as string) ? [index] : []));
    if (found.length !== 1) {
      const problem = found.length === 0 ? "no checkpoint" : "more than one checkpoint";
      throw new ConfigError(`${problem} of thread "${threadId}" matches "${window.from}": see \`loopgraph inspect ${threadId}\``);
    }
    return windowFrom(found[0]!, to, total, window.limit);
  }
  if (window.from === undefined) return { from: window.limit === undefined ? 0 : clamp(to - window.limit), to, total };
  return windowFrom(clamp(window.from), to, total, window.limit);
}

/** From index `from` up to `to`, at most `limit` of them. */
function windowFrom(from: number, to: number, total: number, limit?: number): HistoryRange {
  const start = Math.min(from, to);
  return { from: start, to: limit === undefined ? to : Math.min(to, start + limit), total };
}

/**
 * The checkpoints of one namespace of the thread, oldest first, summarised, with their tree and
 * the enclosing graphs' checkpoints they ran from. With a window, only its checkpoints are read:
 * the parent links (no state) tell which; the state of each parent outside the window is read
 * once (its lists' items as stored, see PendingItem), then the walk goes on over the window alone.
 */
async function timeline(
  store: Store,
  threadId: string,
  ns: string,
  window: HistoryWindow = {},
): Promise<{
  checkpoints: CheckpointSummary[];
  tree: ReturnType<typeof checkpointTree>;
  parents: Record<string, string>;
  range: HistoryRange;
  /** When each parent outside the window was written. */
  parentTimes: Map<string, string>;
}> {
  const links = [...(await store.checkpoints.parentLinks(threadId, ns))]
    .map(([id, parentId]) => ({ id, parentId }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const tree = checkpointTree(links);
  const range = rangeOf(links, window, threadId);
  const shown = links.slice(range.from, range.to);
  const indexOf = new Map(links.map((link, index) => [link.id, index]));
  const childrenLeft = new Map<string, number>();
  for (const { parentId } of shown) if (parentId !== undefined) childrenLeft.set(parentId, (childrenLeft.get(parentId) ?? 0) + 1);
  const states = new Map<string, StepState>();
  const parentTimes = new Map<string, string>();
  const reader = stateReaderOf(store, threadId, ns);
  // The parents the window's checkpoints grew from, outside it: each read once.
  for (const parentId of childrenLeft.keys()) {
    const index = indexOf.get(parentId);
    if (index === undefined || (index >= range.from && index < range.to)) continue;
    for await (const { entry, read } of historySteps(store, reader, threadId, ns, links, index, index + 1)) {
      states.set(parentId, await read(NO_STATE));
      parentTimes.set(parentId, entry.createdAt);
    }
  }
  const checkpoints: CheckpointSummary[] = [];
  let parents: Record<string, string> | undefined;
  for await (const { entry, read } of historySteps(store, reader, threadId, ns, links, range.from, range.to)) {
    // A checkpoint a running run wrote since the tree was read waits for the next inspect.
    if (!tree.branchOf.has(entry.checkpointId)) continue;
    parents ??= (entry.metadata?.parents ?? {}) as Record<string, string>;
    const parent = entry.parentId === undefined ? undefined : states.get(entry.parentId);
    const previous = parent ?? NO_STATE;
    const current = await read(previous);
    const facts: StepFacts = {
      checkpointId: entry.checkpointId,
      parentId: entry.parentId,
      step: entry.metadata?.step ?? 0,
      source: entry.metadata?.source ?? "",
      createdAt: entry.createdAt,
      failed: entry.failed,
    };
    const summary = summarise(
      facts,
      await plainOf(previous, SUMMARY_CHANNELS),
      await plainOf(current, SUMMARY_CHANNELS),
      await stateChanges(previous, current),
    );
    const head = tree.head === entry.checkpointId ? { head: true as const } : {};
    checkpoints.push({ ...summary, branch: tree.branchOf.get(entry.checkpointId) ?? 0, ...head });
    if ((childrenLeft.get(entry.checkpointId) ?? 0) > 0) states.set(entry.checkpointId, current);
    if (entry.parentId !== undefined && childrenLeft.has(entry.parentId)) {
      const left = childrenLeft.get(entry.parentId)! - 1;
      childrenLeft.set(entry.parentId, left);
      if (left <= 0) states.delete(entry.parentId);
    }
  }
  return { checkpoints, tree, parents: parents ?? {}, range, parentTimes };
}

/** A checkpoint of a history walk, and how to read its state from its parent's. */
interface HistoryStep {
  entry: CheckpointHistoryEntry;
  read(parent: StepState): Promise<StepState>;
}

/** The reader of states a walk shares between its parts (the lists it read lately), with a saver that reads history. */
function stateReaderOf(store: Store, threadId: string, ns: string): StateReader | undefined {
  return canReadHistory(store.saver) ? new StateReader(store.saver, threadId, ns) : undefined;
}

/**
 * The checkpoints `links[from..to)` of the thread (oldest first), each with how to read its
 * state. With a saver that reads history (both backends'), its history walk over that span and
 * StateReader: only what changed is read and decoded. With another saver, each checkpoint's tuple is read whole.
 */
async function* historySteps(
  store: Store,
  reader: StateReader | undefined,
  threadId: string,
  ns: string,
  links: readonly { id: string }[],
  from: number,
  to: number,
): AsyncGenerator<HistoryStep> {
  const { saver } = store;
  if (reader && canReadHistory(saver)) {
    const span = { after: from > 0 ? links[from - 1]!.id : "", limit: to - from };
    if (span.limit <= 0) return;
    for await (const entry of saver.history(threadId, ns, isShownChannel, span))
      yield { entry, read: (parent) => reader.read(entry, parent) };
    return;
  }
  for (const { id } of links.slice(from, to)) {
    const tuple = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id } });
    if (!tuple) continue;
    const entry: CheckpointHistoryEntry = {
      checkpointId: id,
      ...(parentIdOf(tuple) !== undefined ? { parentId: parentIdOf(tuple) } : {}),
      createdAt: tuple.checkpoint.ts,
      metadata: tuple.metadata ?? ({} as CheckpointHistoryEntry["metadata"]),
      channelVersions: tuple.checkpoint.channel_versions,
      failed: (tuple.pendingWrites ?? []).some(([, channel]) => channel === ERROR),
    };
    yield { entry, read: async (parent) => stateOfTuple(tuple, parent) };
  }
}

/**
 * A checkpoint's state from its tuple: its channels in `channel_versions` order, as StateReader
 * gives them, whatever order the saver gave `channel_values`; a channel whose version is the
 * parent's is the parent's entry (unchanged, as StateReader gives it).
 */
function stateOfTuple(tuple: CheckpointTuple, parent: StepState): StepState {
  const values = tuple.checkpoint.channel_values as Record<string, unknown>;
  const channels = new Map<string, ChannelEntry>();
  for (const [channel, rawVersion] of Object.entries(tuple.checkpoint.channel_versions)) {
    if (!isShownChannel(channel) || !Object.prototype.hasOwnProperty.call(values, channel)) continue;
    const version = String(rawVersion);
    const before = parent.channels.get(channel);
    channels.set(
      channel,
      before?.version === version ? before : { version, plain: toPlainValues({ [channel]: values[channel] })[channel] },
    );
  }
  return { channels };
}

/** The channels a summary reads besides the diff: tokens, nodes that ran, the loop's round. */
const SUMMARY_CHANNELS = ["usage", "visits", "loopState"];

/**
 * One of the thread's root checkpoints, by id or a unique prefix of one (found by a range of the
 * key, only that one decoded); else a one-line error (exit 2).
 */
export async function findCheckpoint(store: Store, threadId: string, idOrPrefix: string): Promise<CheckpointTuple> {
  const ids = await store.checkpoints.rootCheckpointIdsWithPrefix(threadId, idOrPrefix, 2);
  const tuple =
    ids.length === 1
      ? await store.saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: ids[0] } })
      : undefined;
  if (!tuple) {
    const problem = ids.length === 0 ? "no checkpoint" : "more than one checkpoint";
    throw new ConfigError(`${problem} of thread "${threadId}" matches "${idOrPrefix}": see \`loopgraph inspect ${threadId}\``);
  }
  return tuple;
}

/** The full state at one checkpoint (an id, or a unique prefix of one). */
export async function checkpointState(threadId: string, checkpointId: string, options: StoreOptions): Promise<CheckpointState> {
  return withStore(options, "read", async (store) => {
    await requireThread(store, threadId);
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
