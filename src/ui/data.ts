/**
 * What the web inspector's pages show, read from the store as the CLI reads it (`inspect`,
 * `status`): nothing here writes. Every value comes from the store, where secrets are already
 * redacted (runs/redact.ts), so a page shows no more than `inspect --json` prints.
 */
import { checkpointState, nestedTimelines, threadHistory, type NestedTimeline, type ThreadHistory } from "../engine/inspect.js";
import { listThreads, type ThreadSummary } from "../engine/thread-list.js";
import { looperStatus, type LooperStatus } from "../engine/status.js";
import { loadGraph } from "../graph/load.js";
import { drawMermaid } from "../graph/mermaid.js";
import { asSeen, type ThreadRecord } from "../runs/thread-registry.js";
import { withTables, type StoreOptions } from "../store/tables.js";
import { isApprovalRequest, type ApprovalRequest } from "../runtime/approval.js";
import { AUTO_PREFIX } from "../nodes/looper/node.js";
import type { TokenUsage } from "../state/graph-state.js";
import { describeStep } from "../engine/describe-step.js";
import type { CheckpointSummary } from "../engine/inspect.js";
import { inTreeOrder } from "../engine/checkpoint-tree.js";
import { stepDiffs, type StepDiff } from "../snapshots/index.js";
import { SCHEDULED_PREFIX } from "../replay/record.js";
import type { GraphDefinition } from "../format/types.js";

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
      const loop = `${thread.threadId}.loop`;
      const chat = thread.threadId.endsWith(".loop") ? thread.threadId.slice(0, -".loop".length) : undefined;
      const linked = ids.has(loop) ? loop : chat !== undefined && ids.has(chat) ? chat : undefined;
      return { ...thread, tokens: tokens.get(thread.threadId)!, ...(linked !== undefined && { linked }) };
    }),
  };
}

/** Each thread's tokens, summed over its nodes, from its latest checkpoint's `usage` (a plain channel: no state is decoded). */
async function tokensOf(threadIds: readonly string[], options: StoreOptions): Promise<Map<string, TokenUsage>> {
  return withTables(options, "read", async (store) => {
    const totals = new Map<string, TokenUsage>();
    for (const threadId of threadIds) {
      const { usage } = (await store.checkpoints.plainChannels(threadId, ["usage"]).catch(() => ({}))) as {
        usage?: Record<string, TokenUsage>;
      };
      const total = { inputTokens: 0, outputTokens: 0 };
      for (const node of Object.values(usage ?? {})) {
        total.inputTokens += node.inputTokens ?? 0;
        total.outputTokens += node.outputTokens ?? 0;
      }
      totals.set(threadId, total);
    }
    return totals;
  });
}

/** A checkpoint with what its step did, in a few words, and (root steps) the guide that draws the branch tree of forks before it. */
type Described = CheckpointSummary & { what: string; guide?: string };
const described = (checkpoint: CheckpointSummary): Described => ({ ...checkpoint, what: describeStep(checkpoint) });

/** A tool call as a Coder's output logs it, with (a preview of) its result. */
type ToolCall = { id: string; name: string; args: unknown; ok: boolean; errorKind?: string; preview: string; artifact?: string };

/** A thread's page: the run drawn on its graph, its steps, the Looper's status and log, what it waits for. */
export interface ThreadPage {
  thread: ThreadRecord;
  /** The chat of a loop, or the loop of a chat. */
  linked?: string;
  graph: { mermaid?: string; problem?: string };
  history: Omit<ThreadHistory, "checkpoints"> & { checkpoints: Described[] };
  nested: (Omit<NestedTimeline, "checkpoints"> & { checkpoints: Described[] })[];
  /** The tokens the timeline's steps show, summed (see tokensShown). */
  tokens: TokenUsage;
  /** The tool calls of each turn of each Coder node (its 1st, 2nd … turn), oldest first. */
  toolCalls: { node: string; turn: number; checkpointId: string; calls: ToolCall[] }[];
  /** The Looper's status block (a thread with a loop, or a chat whose loop exists). */
  looper?: LooperStatus["json"] & { text: string };
  /** The thread's messages as the latest state holds them: the Looper's `[AUTO]` log among them. */
  messages: { type: string; name?: string; content: string; auto: boolean }[];
  /** The tool call the run waits for an answer on. */
  approval?: ApprovalRequest;
  /** Several calls waiting at once (branches of one step): each with the id an answer names it by. */
  approvals?: { call: string; request: ApprovalRequest }[];
  /** The file changes of each file-changing tool step, from the workspace snapshots. */
  files: { diffs: StepDiff[]; problem?: string };
}

export async function threadPage(threadId: string, options: StoreOptions): Promise<ThreadPage> {
  const history = await threadHistory(threadId, options);
  const thread = asSeen(history.thread);
  const [nested, looper, linked, graph] = await Promise.all([
    nestedTimelines(threadId, options),
    looperOf(threadId, options),
    linkedThread(threadId, options),
    graphOf(thread),
  ]);
  const head = history.head ?? history.checkpoints.at(-1)?.checkpointId;
  const values = head ? (await checkpointState(threadId, head, options)).values : {};
  const visits = (values.visits ?? {}) as Record<string, number>;
  const approval = isApprovalRequest(thread.pause?.value) ? thread.pause.value : undefined;
  const current =
    thread.pause?.node ??
    (thread.status === "running" && "definition" in graph
      ? await runningNode(threadId, head, nested, graph.definition, options)
      : undefined);
  // The node whose failure failed it.
  const failed = thread.status === "failed" ? /^node "([^"]+)" failed/.exec(thread.error ?? "")?.[1] : undefined;
  return {
    thread,
    ...(linked !== undefined && { linked }),
    graph: drawn(graph, { visits, ...(current !== undefined && { current }), ...(failed !== undefined && { failed: [failed] }) }),
    history: {
      ...history,
      checkpoints: inTreeOrder(history.checkpoints).map(({ checkpoint, guide }) => ({ ...described(checkpoint), guide })),
    },
    nested: nested.map((inner) => ({ ...inner, checkpoints: inner.checkpoints.map(described) })),
    tokens: tokensShown(history.checkpoints, nested),
    toolCalls: await toolCallsOf(threadId, history.checkpoints, options),
    ...(looper && { looper }),
    messages: messagesOf(values.messages),
    files: await stepDiffs(threadId, options).catch((error: Error) => ({ diffs: [], problem: error.message })),
    ...(approval && { approval }),
    ...(pendingApprovals(thread.pause?.pending) ?? {}),
  };
}

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
 * The tokens the timeline shows: its root steps', and those of the steps of a node that has not
 * finished (paused at an approval inside it, or still running), which no root step counts yet. A
 * finished node's root step counts its nested steps already: they are not added twice.
 */
function tokensShown(checkpoints: readonly CheckpointSummary[], nested: readonly NestedTimeline[]): TokenUsage {
  const placed = (inner: NestedTimeline) => checkpoints.some((step) => step.parentId === inner.from && step.nodes.includes(inner.node));
  const unfinished = nested.filter((inner) => inner.parentNs === "" && !placed(inner)).flatMap((inner) => inner.checkpoints);
  return [...checkpoints, ...unfinished].reduce(
    (sum, step) => ({ inputTokens: sum.inputTokens + step.tokens.inputTokens, outputTokens: sum.outputTokens + step.tokens.outputTokens }),
    { inputTokens: 0, outputTokens: 0 },
  );
}

/**
 * Every turn's tool calls of each node that logs them (a Coder): its output holds only its latest
 * turn's, so each step that changed a node's output is read, in the order of the steps.
 */
async function toolCallsOf(
  threadId: string,
  checkpoints: readonly CheckpointSummary[],
  options: StoreOptions,
): Promise<ThreadPage["toolCalls"]> {
  const outputSteps = checkpoints.filter((step) => step.changes.some((change) => change.path.startsWith("outputs.")));
  return withTables(options, "read", async (store) => {
    const turns: ThreadPage["toolCalls"] = [];
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

/** The full state at one checkpoint and its changes from the one before, as `inspect --checkpoint` and `--diff` give them. */
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

async function linkedThread(threadId: string, options: StoreOptions): Promise<string | undefined> {
  const { threads } = await threadsPage(options);
  return threads.find((thread) => thread.threadId === threadId)?.linked;
}

function messagesOf(raw: unknown): ThreadPage["messages"] {
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
