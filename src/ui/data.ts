/**
 * What the web inspector's pages show, read from the store as the CLI reads it (`inspect`,
 * `status`): nothing here writes. Every value comes from the store, where secrets are already
 * redacted (runs/redact.ts), so a page shows no more than `inspect --json` prints.
 */
import {
  checkpointState,
  nestedTimelines,
  threadHistory,
  tokensAt,
  type HistoryRange,
  type NestedTimeline,
  type ThreadHistory,
} from "../engine/inspect.js";
import { ConfigError } from "../errors.js";
import { listThreads, type ThreadSummary } from "../engine/thread-list.js";
import { looperStatus, type LooperStatus } from "../engine/status.js";
import { loadGraph } from "../graph/load.js";
import { drawMermaid } from "../graph/mermaid.js";
import { asSeen, type ThreadRecord } from "../runs/thread-registry.js";
import { requireThread, withTables, type StoreOptions } from "../store/tables.js";
import { isApprovalRequest, type ApprovalRequest } from "../runtime/approval.js";
import { AUTO_PREFIX } from "../nodes/looper/node.js";
import type { TokenUsage } from "../state/graph-state.js";
import { describeStep } from "../engine/describe-step.js";
import type { CheckpointSummary } from "../engine/inspect.js";
import { inTreeOrder, nestedFrom } from "../engine/checkpoint-tree.js";
import { stepDiffs, type StepDiff } from "../snapshots/index.js";
import { SCHEDULED_PREFIX } from "../replay/record.js";
import type { GraphDefinition } from "../format/types.js";
import type { TrialKey } from "../runs/evals.js";
import { trialOfThread } from "./evals.js";

/** The threads page: every thread, with its tokens and the thread it is linked to (a chat and its loop). */
export interface ThreadsPage {
  threads: (ThreadSummary & { linked?: string; tokens: TokenUsage })[];
}

export async function threadsPage(options: StoreOptions): Promise<ThreadsPage> {
  const threads = await listThreads(options);
  const ids = new Set(threads.map((thread) => thread.threadId));
  const tokens = await tokensOf(
    threads.map((thread) => thread.threadId),
    options,
  );
  return {
    threads: threads.map((thread) => {
      const linked = linkedIn(thread.threadId, (id) => ids.has(id));
      return { ...thread, tokens: tokens.get(thread.threadId)!, ...(linked !== undefined && { linked }) };
    }),
  };
}

/** The thread linked to `threadId`, of those that `exists`: its loop (`<id>.loop`), or the chat of a loop. */
function linkedIn(threadId: string, exists: (threadId: string) => boolean): string | undefined {
  return linkCandidates(threadId).find(exists);
}

/** The threads that may be linked to `threadId`, first found first: its loop, then (a loop's) its chat. */
function linkCandidates(threadId: string): string[] {
  return [`${threadId}.loop`, ...(threadId.endsWith(".loop") ? [threadId.slice(0, -".loop".length)] : [])];
}

/** Each thread's tokens, from its latest checkpoint's `usage` (a plain channel: no state is decoded). */
async function tokensOf(threadIds: readonly string[], options: StoreOptions): Promise<Map<string, TokenUsage>> {
  return withTables(options, "read", async (store) => {
    const totals = new Map<string, TokenUsage>();
    for (const threadId of threadIds)
      totals.set(threadId, await tokensAt(store, threadId).catch(() => ({ inputTokens: 0, outputTokens: 0 })));
    return totals;
  });
}

/**
 * A step as a page lists it: what it did in a few words (cut); root steps their index in the
 * thread (oldest first), the guide that draws the branch tree of forks before them and how long
 * they took. Its changes are fetched when it is opened (`stepPage`).
 */
type Listed = Omit<CheckpointSummary, "changes"> & { what: string; index?: number; guide?: string; seconds?: number };

/** The longest `what` a listed step carries: a page's size stays bounded, whatever the model said. */
const WHAT_MAX = 200;

function listed(checkpoint: CheckpointSummary): Listed {
  const { changes: _, ...rest } = checkpoint;
  const what = describeStep(checkpoint);
  return { ...rest, what: what.length > WHAT_MAX ? `${what.slice(0, WHAT_MAX - 1)}…` : what };
}

/** The steps of a page: the newest PAGE_STEPS when the thread page is first shown, the PAGE_STEPS before them when the user asks for older ones. */
export const PAGE_STEPS = 200;

/** A tool call as a Coder's output logs it, with (a preview of) its result. */
type ToolCall = { id: string; name: string; args: unknown; ok: boolean; errorKind?: string; preview: string; artifact?: string };

/** Some of a thread's root steps, in tree order (forks after the checkpoint they grew from): which of its steps they are. */
export interface StepsPage {
  checkpoints: Listed[];
  range: HistoryRange;
}

/** The graphs nested in steps, listed. */
type NestedListed = Omit<NestedTimeline, "checkpoints"> & { checkpoints: Listed[] };

/**
 * A thread's page, as first shown: the run drawn on its graph, its newest steps, the Looper's
 * status, what it waits for. What grows with the thread besides is fetched when asked for: older
 * steps (`stepsPage`), a step's changes and nested steps (`stepPage`), its state, the messages,
 * the tool calls and the file changes.
 */
export interface ThreadPage {
  thread: ThreadRecord;
  /** The chat of a loop, or the loop of a chat. */
  linked?: string;
  /** The eval trial the thread ran: its eval, task, variant and repetition. */
  eval?: TrialKey & { id: string };
  graph: { mermaid?: string; problem?: string };
  history: Omit<ThreadHistory, "checkpoints" | "thread"> & StepsPage;
  /** The graphs of a node that has not finished (paused at an approval inside it, or still running): their steps so far. */
  inFlight: NestedListed[];
  /** The run's tokens (its newest checkpoint's `usage`), and those of a node that has not finished. */
  tokens: TokenUsage;
  /** The Looper's status block (a thread with a loop, or a chat whose loop exists). */
  looper?: LooperStatus["json"] & { text: string };
  /** The tool call the run waits for an answer on. */
  approval?: ApprovalRequest;
  /** Several calls waiting at once (branches of one step): each with the id an answer names it by. */
  approvals?: { call: string; request: ApprovalRequest }[];
}

/** The thread's page: with `from`, its steps from that index on (what a page that loaded older ones shows), else the newest PAGE_STEPS. */
export async function threadPage(threadId: string, options: StoreOptions, from?: number): Promise<ThreadPage> {
  const {
    thread: record,
    checkpoints,
    ...history
  } = await threadHistory(threadId, options, from === undefined ? { limit: PAGE_STEPS } : { from });
  const thread = asSeen(record);
  const head = history.head;
  const [inFlight, looper, links, graph] = await Promise.all([
    head === undefined ? [] : nestedTimelines(threadId, options, { after: head }),
    looperOf(threadId, options),
    linksOf(threadId, options),
    graphOf(thread),
  ]);
  const { visits = {} } = head
    ? ((await withTables(options, "read", (store) => store.checkpoints.plainChannels(threadId, ["visits"], head))) as {
        visits?: Record<string, number>;
      })
    : {};
  const approval = isApprovalRequest(thread.pause?.value) ? thread.pause.value : undefined;
  const current =
    thread.pause?.node ??
    (thread.status === "running" && "definition" in graph
      ? await runningNode(threadId, head, inFlight, graph.definition, options)
      : undefined);
  // The node whose failure failed it.
  const failed = thread.status === "failed" ? /^node "([^"]+)" failed/.exec(thread.error ?? "")?.[1] : undefined;
  const unfinished = inFlight.filter((inner) => inner.parentNs === "").flatMap((inner) => inner.checkpoints);
  return {
    thread,
    ...links,
    graph: drawn(graph, { visits, ...(current !== undefined && { current }), ...(failed !== undefined && { failed: [failed] }) }),
    history: { ...history, checkpoints: inOrder({ ...history, checkpoints }) },
    inFlight: inFlight.map(listedTimeline),
    tokens: [history.tokens, ...unfinished.map((step) => step.tokens)].reduce(
      (sum, tokens) => ({ inputTokens: sum.inputTokens + tokens.inputTokens, outputTokens: sum.outputTokens + tokens.outputTokens }),
      { inputTokens: 0, outputTokens: 0 },
    ),
    ...(looper && { looper }),
    ...(approval && { approval }),
    ...(pendingApprovals(thread.pause?.pending) ?? {}),
  };
}

/**
 * The steps of a window of the history in tree order, each listed with its index in the thread
 * and how long it took (from its parent, in the window or not).
 */
function inOrder({ checkpoints, range, parentTimes = {} }: Pick<ThreadHistory, "checkpoints" | "range" | "parentTimes">): Listed[] {
  const created = new Map([...Object.entries(parentTimes), ...checkpoints.map((step) => [step.checkpointId, step.createdAt] as const)]);
  return inTreeOrder(checkpoints).map(({ index, checkpoint, guide }) => {
    const parent = checkpoint.parentId === undefined ? undefined : created.get(checkpoint.parentId);
    const seconds = parent === undefined ? undefined : (Date.parse(checkpoint.createdAt) - Date.parse(parent)) / 1000;
    return {
      ...listed(checkpoint),
      index: range.from + index,
      guide,
      ...(seconds !== undefined && Number.isFinite(seconds) && { seconds }),
    };
  });
}

const listedTimeline = (inner: NestedTimeline): NestedListed => ({ ...inner, checkpoints: inner.checkpoints.map(listed) });

/** Older steps: the `limit` (at most PAGE_STEPS) steps before the index `before`. */
export async function stepsPage(threadId: string, options: StoreOptions, before: number, limit = PAGE_STEPS): Promise<StepsPage> {
  const history = await threadHistory(threadId, options, { before, limit: Math.min(limit, PAGE_STEPS) });
  return { checkpoints: inOrder(history), range: history.range };
}

/** One step opened: its changes from its parent, its lanes, and the steps of the graphs it ran (a Coder's turn, a subagent, a subgraph). */
export async function stepPage(threadId: string, checkpointId: string, options: StoreOptions) {
  const {
    checkpoints: [step],
  } = await threadHistory(threadId, options, { from: checkpointId, limit: 1 });
  if (!step) throw new ConfigError(`no checkpoint of thread "${threadId}" matches "${checkpointId}"`);
  // The graphs that started while it ran, of those it ran (a fork's first step grew from an older checkpoint).
  const nested = nestedFrom(
    await nestedTimelines(threadId, options, { after: step.parentId ?? "", before: step.checkpointId }),
    new Set([step.parentId]),
  );
  return {
    checkpointId: step.checkpointId,
    changes: step.changes,
    ...(step.lanes && { lanes: step.lanes }),
    nested: nested.map(listedTimeline),
  };
}

/** The thread's messages as its newest state holds them: the Looper's `[AUTO]` log among them. */
export async function messagesPage(threadId: string, options: StoreOptions): Promise<{ messages: ReturnType<typeof messagesOf> }> {
  const head = await withTables(options, "read", async (store) => {
    await requireThread(store, threadId);
    return store.checkpoints.latestCheckpointId(threadId);
  });
  const values = head ? (await checkpointState(threadId, head, options)).values : {};
  return { messages: messagesOf(values.messages) };
}

/** The file changes of each file-changing tool step, from the workspace snapshots. */
export async function filesPage(threadId: string, options: StoreOptions): Promise<{ diffs: StepDiff[]; problem?: string }> {
  return stepDiffs(threadId, options).catch((error: Error) => ({ diffs: [], problem: error.message }));
}

/** The tool calls of each turn of each Coder node (its 1st, 2nd … turn), oldest first. */
export async function toolCallsPage(threadId: string, options: StoreOptions): Promise<{ toolCalls: ToolTurn[] }> {
  return { toolCalls: await toolCallsOf(threadId, (await threadHistory(threadId, options)).checkpoints, options) };
}

type ToolTurn = { node: string; turn: number; checkpointId: string; calls: ToolCall[] };

/**
 * The node a running thread is at: the one running a graph of its own from the latest checkpoint (a
 * Coder's turn, whose steps are checkpointed), else the one LangGraph scheduled from it (its
 * `branch:to:<node>` channel): a node without steps of its own (an agent, a function) shows only so.
 */
async function runningNode(
  threadId: string,
  head: string | undefined,
  nested: NestedTimeline[],
  graph: GraphDefinition,
  options: StoreOptions,
): Promise<string | undefined> {
  const inner = nested.find((timeline) => timeline.parentNs === "" && timeline.from === head)?.node;
  if (inner !== undefined || head === undefined) return inner;
  const channels = Object.keys(graph.nodes).map((node) => SCHEDULED_PREFIX + node);
  const scheduled = await withTables(options, "read", (store) => store.checkpoints.plainChannels(threadId, channels, head)).catch(
    () => ({}),
  );
  return Object.keys(scheduled)[0]?.slice(SCHEDULED_PREFIX.length);
}

/**
 * Every turn's tool calls of each node that logs them (a Coder): its output holds only its latest
 * turn's, so each step that changed a node's output is read, in the order of the steps.
 */
async function toolCallsOf(threadId: string, checkpoints: readonly CheckpointSummary[], options: StoreOptions): Promise<ToolTurn[]> {
  const outputSteps = checkpoints.filter((step) => step.changes.some((change) => change.path.startsWith("outputs.")));
  return withTables(options, "read", async (store) => {
    const turns: ToolTurn[] = [];
    for (const step of outputSteps) {
      const outputs = (await store.checkpoints.plainChannels(threadId, ["outputs"], step.checkpointId)).outputs as
        | Record<string, { toolCalls?: unknown } | undefined>
        | undefined;
      for (const node of step.nodes) {
        const calls = outputs?.[node]?.toolCalls;
        if (Array.isArray(calls) && calls.length > 0)
          turns.push({
            node,
            turn: turns.filter((turn) => turn.node === node).length + 1,
            checkpointId: step.checkpointId,
            calls: calls as ToolCall[],
          });
      }
    }
    return turns;
  });
}

/** The full state at one checkpoint, as `inspect --checkpoint` gives it. */
export async function checkpointPage(threadId: string, checkpointId: string, options: StoreOptions) {
  return checkpointState(threadId, checkpointId, options);
}

/** What changes when the thread (or its loop) changes: its record's update time and status, its latest checkpoint, its loop's commands. What live pages poll. */
export async function threadVersion(threadId: string, options: StoreOptions): Promise<string> {
  return withTables(options, "read", async (store) => {
    const thread = await store.threads.get(threadId);
    const loop = await store.threads.get(`${threadId}.loop`);
    const latest = await store.checkpoints.latestCheckpointId(threadId);
    // A command sent to its loop changes what the status block says, before the loop takes it.
    const commands = (await store.inbox.after(loop ? loop.threadId : threadId, 0)).length;
    // The status as readers see it: a run whose process died changes nothing in the store, yet is interrupted now.
    const status = (record: ThreadRecord | undefined) => (record ? asSeen(record).status : undefined);
    return [thread?.updatedAt, status(thread), loop?.updatedAt, status(loop), latest, commands].join("|");
  });
}

/** The thread's graph as its file holds it now, or why it cannot be loaded. */
async function graphOf(thread: ThreadRecord): Promise<{ definition: GraphDefinition } | { problem: string }> {
  return loadGraph(thread.graphFile).then(
    (definition) => ({ definition }),
    (error: unknown) => ({ problem: cannotDraw(thread.graphFile, error) }),
  );
}

/** The run drawn on its graph (the Mermaid text of `graphs draw`, with the run's marks). */
function drawn(graph: Awaited<ReturnType<typeof graphOf>>, marks: Parameters<typeof drawMermaid>[1]): ThreadPage["graph"] {
  if ("problem" in graph) return graph;
  try {
    return { mermaid: drawMermaid(graph.definition, marks) };
  } catch (error) {
    return { problem: cannotDraw(graph.definition.file, error) };
  }
}

const cannotDraw = (file: string, error: unknown): string =>
  `the graph ${file} cannot be drawn: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`;

async function looperOf(threadId: string, options: StoreOptions): Promise<ThreadPage["looper"]> {
  // A thread whose loop state cannot be read (not a loop, or written by another graph) shows no Looper panel.
  const status = await looperStatus(threadId, options).catch(() => undefined);
  if (!status || (status.json.round === 0 && status.json.state === "IDLE" && status.json.pending.length === 0)) return undefined;
  return { ...status.json, text: status.text };
}

/**
 * The thread linked to `threadId` (see linkedIn: only its two candidates are looked up, not every
 * thread and its tokens), and the eval trial it ran, if it is one.
 */
async function linksOf(threadId: string, options: StoreOptions): Promise<Pick<ThreadPage, "linked" | "eval">> {
  return withTables(options, "read", async (store) => {
    const found = new Set<string>();
    for (const candidate of linkCandidates(threadId)) if (await store.threads.get(candidate)) found.add(candidate);
    const linked = linkedIn(threadId, (id) => found.has(id));
    const trial = await trialOfThread(store, threadId);
    return { ...(linked !== undefined && { linked }), ...(trial && { eval: trial }) };
  });
}

function messagesOf(raw: unknown): { type: string; name?: string; content: string; auto: boolean }[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((message) => {
    const { type, name, content } = (message ?? {}) as { type?: string; name?: string; content?: unknown };
    const text =
      typeof content === "string"
        ? content
        : Array.isArray(content)
          ? content.map((part) => (part as { text?: string }).text ?? "").join("")
          : "";
    return { type: type ?? "unknown", ...(name && { name }), content: text, auto: text.startsWith(AUTO_PREFIX) };
  });
}

/** The approvals of several branches waiting at once, each by the id `resume --call` takes. */
function pendingApprovals(pending: { id: string; value: unknown }[] | undefined): { approvals: ThreadPage["approvals"] } | undefined {
  if (!pending) return undefined;
  const approvals = pending.flatMap((question) =>
    isApprovalRequest(question.value) ? [{ call: question.value.callId ?? question.id, request: question.value }] : [],
  );
  return { approvals };
}
