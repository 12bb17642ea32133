import { randomUUID } from "node:crypto";
import { HumanMessage } from "@langchain/core/messages";
import { ConfigError } from "../errors.js";
import type { GraphDefinition } from "../format/types.js";
import { loadGraph, resolveGraphPath } from "../graph/load.js";
import { needsTask } from "../graph/placeholders.js";
import { looperKind } from "../nodes/looper/kind.js";
import { nodesOfKind } from "../runtime/node-kind.js";
import { openStore, requireThread, resolveStore, withStore, type Store, type StoreOptions } from "../store/store.js";
import type { StoreLocation } from "../store/tables.js";
import { postgresBackend } from "../store/postgres/backend.js";
import { isRepoWorkspace, repoWorkspaceLabel } from "../runs/repo-workspaces.js";
import type { ThreadRecord } from "../runs/thread-registry.js";
import type { ApprovalAnswer } from "../runtime/approval.js";
import { answerPaused } from "./answers.js";
import { hasUnconsumedCommands } from "./commands.js";
import { loopEndRequest, LoopSupervisor } from "./loop-supervisor.js";
import { TASK_MESSAGE_ID, type PauseInfo, type ResumeOptions, type RunOptions, type RunOutcome } from "./run-types.js";
import { checkRepoSource, RepoWorkspace, resultText } from "./repo-workspace.js";
import { initialVars, mediatorNodeOf, Thread, type LooperFactory, type ThreadOptions } from "./thread.js";

/**
 * The Looper of a Mediator thread: its loop runs in this process with the thread's settings and
 * store, through runGraph and resumeRun.
 */
export const createLoopSupervisor: LooperFactory = (thread, mediator) =>
  new LoopSupervisor({
    mediatorThreadId: thread.threadId,
    graphFile: mediator.loop.file,
    workspace: thread.workspace,
    settings: thread.settings,
    maxRounds: thread.options.maxRounds,
    noSandbox: thread.options.noSandbox,
    store: { db: thread.store.path, cwd: thread.options.cwd, env: thread.options.settings.env },
    commandSettings: thread.options.settings,
    onEvent: thread.options.onEvent,
    control: thread.options.control,
    signal: thread.options.signal,
    modelTimeoutMs: thread.options.modelTimeoutMs,
    run: runGraph,
    resume: resumeRun,
  });

/**
 * Starts a new thread: loads and validates the graph (unless given loaded), records the thread,
 * runs until it ends or pauses. For a mediator graph, a loop the Mediator started runs to its
 * end, then the Mediator sums up.
 */
export async function runGraph(options: RunOptions): Promise<RunOutcome> {
  if (options.repo !== undefined || options.ref !== undefined) {
    throw new ConfigError(
      "--repo and --ref are for a queued run (--queue), which a worker runs in its own clone: without --queue, run in a checkout with --workspace",
    );
  }
  const cwd = options.cwd ?? process.cwd();
  const trustNotes: string[] = [];
  const graph = await graphToRun(options, cwd, trustNotes);
  const spec = Thread.newThread(graph, options);
  // A failure of the store (damaged, full, …) is its one line, as every command says it (see storeError).
  return withStore({ db: options.db, cwd, env: options.settings.env }, "create", async (store) => {
    const thread = Thread.prepare(store, graph, spec, options, { looper: createLoopSupervisor, trustNotes });
    const task = options.task ?? "";
    await thread.record(task);
    const ctx = thread.context();
    thread.announce(ctx, { task, resumed: false });
    return await followLoop(thread, await thread.execute(firstInput(graph, task, options.attempts), ctx));
  });
}

/** The graph of a new run (a name or path, or a graph already loaded), checked to have the task it needs. */
async function graphToRun(options: RunOptions, cwd: string, trustNotes: string[] = []): Promise<GraphDefinition> {
  const forRun = { env: options.settings.env, notes: trustNotes };
  const graph =
    typeof options.graph === "string" ? await loadGraph(resolveGraphPath(options.graph, cwd, undefined, forRun)) : options.graph;
  if (!options.task?.trim() && needsTask(graph)) {
    throw new ConfigError(`graph "${graph.name}" works on a task and none was given: pass --task "<what to do>"`);
  }
  const loopAttempts = nodesOfKind(graph, looperKind).some((looper) => looper.attempts !== undefined);
  if (options.attempts !== undefined && graph.state[ATTEMPTS_FIELD]?.type !== "number" && !loopAttempts) {
    throw new ConfigError(
      `graph "${graph.name}" takes no --attempts: it declares no number field "${ATTEMPTS_FIELD}" under state:, nor a looper with attempts (see graphs/best-of-n.yaml)`,
    );
  }
  return graph;
}

/** The state field `--attempts` sets (a map over it runs one instance per attempt). */
export const ATTEMPTS_FIELD = "attempts";

/**
 * `run --queue`: records a new thread, queued for a worker (`loopgraph worker`), and asks the
 * store's queue to run it; nothing runs here. The graph, task, workspace and settings are checked
 * as for a run. Returns the thread's id.
 */
export async function enqueueRun(options: RunOptions): Promise<string> {
  const cwd = options.cwd ?? process.cwd();
  const graph = await graphToRun(options, cwd);
  if (options.maxRounds !== undefined)
    throw new ConfigError("--max-rounds is not kept for a queued run: set max_rounds on the graph's looper node instead");
  if (options.attempts !== undefined)
    throw new ConfigError(`--attempts is not kept for a queued run: set the default of the graph's ${ATTEMPTS_FIELD} field instead`);
  const env = options.settings.env;
  const where = requireQueueStore({ db: options.db, cwd, env });
  if (options.repo !== undefined && options.workspace !== undefined)
    throw new ConfigError("--repo and --workspace exclude each other: a run on a repository works in the worker's clone of it");
  if (options.repo === undefined && options.ref !== undefined)
    throw new ConfigError("--ref names the commit of a repository to start from: give the repository with --repo");
  if (options.repo !== undefined && mediatorNodeOf(graph)) {
    throw new ConfigError(
      `graph "${graph.name}" has a mediator, which talks with you in a chat: queue a loop graph on a repository instead`,
    );
  }
  const checked = Thread.newThread(graph, options);
  const source = options.repo === undefined ? undefined : await checkRepoSource(options.repo, options.ref, checked.threadId, { cwd, env });
  // A run on a repository records the repository instead of a directory (the worker's clone is its workspace).
  const spec = source ? { ...checked, workspace: repoWorkspaceLabel(source) } : checked;
  const { RunQueue } = await import("./run-queue.js");
  const store = await openStore({ db: options.db, cwd, env }, "create");
  try {
    const queue = await RunQueue.open(where.location, env);
    try {
      // The repository is recorded before the thread: a worker that finds the thread finds its repository too,
      // also when this process was killed in between (the row left then is replaced when the id is queued again).
      if (source && !(await store.threads.get(spec.threadId))) await store.repoWorkspaces!.create(spec.threadId, source);
      await Thread.prepare(store, graph, spec, options).record(options.task ?? "", { queued: true });
      await queue.request(spec.threadId);
    } finally {
      await queue.close();
    }
    return spec.threadId;
  } finally {
    await store.close();
  }
}

/** The store's location, when it is a PostgreSQL store (the one a queue needs, shared with the workers); else a one-line error. */
export function requireQueueStore(store: StoreOptions): StoreLocation {
  const where = resolveStore(store.db, store.env, store.cwd ?? process.cwd());
  if (where.backend !== postgresBackend) {
    throw new ConfigError(
      `--queue needs a PostgreSQL store shared with the workers: give one with --db postgres://… (or LOOPGRAPH_DB), not ${where.location}`,
    );
  }
  return where;
}

/**
 * What a thread's first execution starts from: its task, as the first message too, and the
 * declared fields' defaults (`attempts` from --attempts when given).
 */
export function firstInput(graph: GraphDefinition, task: string, attempts?: number) {
  const vars = initialVars(graph);
  if (attempts !== undefined && graph.state[ATTEMPTS_FIELD] !== undefined) vars[ATTEMPTS_FIELD] = attempts;
  return {
    task,
    messages: task ? [new HumanMessage({ content: task, id: TASK_MESSAGE_ID })] : [],
    vars,
  };
}

/** `run`/`resume` of a mediator graph: once the Mediator's turn is over, a loop it started runs to its end here (see summariseLoop). */
function followLoop(thread: Thread, outcome: RunOutcome): Promise<RunOutcome> | RunOutcome {
  return outcome.status === "finished" && thread.looper?.running ? summariseLoop(thread, thread.looper) : outcome;
}

/**
 * Waits for the running loop to end, then asks the Mediator for a summary. A loop that pauses or
 * is interrupted mid-way is reported as such (its thread is the one to resume); a loop that
 * ended without finishing its work (failed, ended by a limit, stopped) is summarised, then
 * reported with its own outcome.
 */
async function summariseLoop(thread: Thread, looper: LoopSupervisor): Promise<RunOutcome> {
  const loop = (await looper.wait())!;
  if (loop.status === "paused" || (loop.status === "interrupted" && !loop.ended)) {
    // The Mediator's thread does not run again: a resume gives it back as it was.
    await thread.release();
    return loop;
  }
  const request = new HumanMessage({
    id: randomUUID(),
    name: "looper",
    content: loopEndRequest(loop, "Summarise the outcome for the user."),
  });
  await thread.markRunning();
  const summarised = await thread.execute({ messages: [request] });
  // The loop's outcome stands when it did not finish its work (failed, ended by a limit, stopped), unless the summary itself failed.
  return loop.status !== "finished" && summarised.status === "finished" ? loop : summarised;
}

async function unfinishedThread(store: Store, threadId: string): Promise<boolean> {
  const record = await store.threads.get(threadId);
  return record !== undefined && (record.status !== "finished" || (await hasUnconsumedCommands(store, threadId)));
}

/** How a thread whose graph has ended ended, for "nothing to resume", with what to do instead. */
function endedThread(record: ThreadRecord): string {
  const how = record.status === "finished" ? "has finished" : `ended (${record.status}${record.error ? `: ${record.error}` : ""})`;
  const more = record.status !== "finished" ? "; to go on, start a new run" : "";
  return `thread "${record.threadId}" ${how}${more} (see \`loopgraph inspect ${record.threadId}\`)`;
}

/** Continues a paused, interrupted, failed or crashed thread from its last checkpoint. */
export async function resumeRun(options: ResumeOptions): Promise<RunOutcome> {
  const cwd = options.cwd ?? process.cwd();
  return withStore({ db: options.db, cwd, env: options.settings.env }, "write", async (store) => {
    // The claim comes first: what the thread holds is read as it was when this process took it.
    const record = await requireThread(store, options.threadId);
    // A loop keeps the round limit it started with (`run --max-rounds`), and so does its step limit; `--max-rounds` here overrides it.
    const loopRounds = (
      (await store.checkpoints.plainChannels(record.threadId, ["loopState"])).loopState as { context?: { maxRounds?: number } } | undefined
    )?.context?.maxRounds;
    const thread = await Thread.open(
      store,
      record,
      { ...options, maxRounds: options.maxRounds ?? loopRounds },
      {
        looper: createLoopSupervisor,
        ...(isRepoWorkspace(record.workspace)
          ? { workspaceFor: (claimed: ThreadRecord) => repoWorkspaceHooks(store, claimed, options) }
          : {}),
      },
    );
    try {
      return await resumeClaimed(store, thread, thread.claimedFrom!, options);
    } catch (error) {
      await thread.release();
      throw error;
    }
  });
}

/**
 * A thread that works on a repository: its workspace on this machine (made from the store's
 * record when this machine does not hold its latest state), and the hooks that save the
 * workspace's state after each step and deliver the result at the end.
 */
async function repoWorkspaceHooks(
  store: Store,
  record: ThreadRecord,
  options: ResumeOptions,
): Promise<Pick<ThreadOptions, "workspace" | "workspaceHooks">> {
  const table = store.repoWorkspaces;
  const source = await table?.get(record.threadId);
  if (!table || !source)
    throw new ConfigError(`thread "${record.threadId}" works on a repository (${record.workspace}) that ${store.path} does not hold`);
  const env = options.settings.env;
  const repo = await RepoWorkspace.prepare(table, source, {
    env,
    secrets: store.secrets,
    warn: (message) => options.onEvent?.({ type: "warning", threadId: record.threadId, message }),
  });
  const task = record.task.split("\n")[0]!.slice(0, 200);
  return {
    workspace: repo.workspace,
    workspaceHooks: {
      stepped: (snapshots, tree) => repo.saveProgress(snapshots, tree),
      ended: async () => {
        const result = await repo.publish(`loopgraph ${record.threadId}${task ? `: ${task}` : ""}`, env);
        return result.pushError ? resultText(record.threadId, source, result, "") : undefined;
      },
    },
  };
}

/** `resumeRun` once the thread is claimed (`record`: as it was then). */
async function resumeClaimed(store: Store, thread: Thread, record: ThreadRecord, options: ResumeOptions): Promise<RunOutcome> {
  const { looper } = thread;
  // A thread killed after it was recorded and before its first checkpoint starts from its recorded input.
  const started = (await store.checkpoints.latestCheckpointId(record.threadId)) !== undefined;
  // A thread whose graph has ended runs again from its start when commands were sent to it since (e.g. `add: …` to an idle loop).
  // A chat's thread opened but never talked to has no checkpoint and no task: it has no turn to run either.
  // A finished run reached the graph's end (a fork or a resume that moves the head records its own outcome): no need
  // to compile the graph and decode its state to find that out.
  const ended =
    (started && record.status !== "running" && (record.status === "finished" || (await thread.ended()))) ||
    (looper !== undefined && !started && !record.task);
  const restart = ended && (await hasUnconsumedCommands(store, record.threadId));
  if (ended && !restart) {
    // A Mediator thread is done after each turn; resuming it continues the loop it started.
    if (looper && (await unfinishedThread(store, looper.threadId))) {
      const resumed = await looper.resume(options.answer as ApprovalAnswer | undefined);
      if (!looper.running) throw new ConfigError(`cannot continue the loop of thread "${record.threadId}": ${resumed}`);
      return await summariseLoop(thread, looper);
    }
    // A loop not started yet, with a task sent to it (`loopgraph send <chat> "start: …"`): it starts now.
    if (looper && options.answer === undefined && (await looper.takeUpQueued()) !== undefined && looper.running) {
      return await summariseLoop(thread, looper);
    }
    throw new ConfigError(`nothing to resume: ${endedThread(record)}`);
  }
  if (options.answer !== undefined && record.pause?.reason !== "input") {
    throw new ConfigError(`thread "${record.threadId}" is not waiting for an answer: resume it without --answer`);
  }
  await thread.markRunning();
  const ctx = thread.context();
  // An answer to an approval binds to the call it was asked about (see runToolCall).
  const answering =
    options.answer === undefined ? undefined : answerPaused(record.pause as PauseInfo | undefined, options.answer, options.call);
  if (answering) ctx.answering = answering.requests;
  thread.announce(ctx, { task: record.task, resumed: true, changed: { recordedHash: record.graphHash } });
  const input = !started ? firstInput(thread.graph, record.task) : restart ? {} : (answering?.command ?? null);
  return await followLoop(thread, await thread.execute(input, ctx));
}
