import { randomBytes } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { cancelledByUser, ConfigError, ExitCode } from "../errors.js";
import { approvalFromEnvironment, modeFromEnvironment } from "../config/environment-settings.js";
import type { GraphDefinition } from "../format/types.js";
import { graphChangedWarning, graphFingerprint } from "../graph/fingerprint.js";
import { loadGraph } from "../graph/load.js";
import { trustedGraphMcpServers } from "../graph/mcp-servers.js";
import type { ChatModel } from "../models/types.js";
import { mediatorKind } from "../nodes/mediator/kind.js";
import type { MediatorNodeDefinition } from "../nodes/mediator/definition.js";
import { AUTO_PREFIX } from "../nodes/looper/node.js";
import { nodeKinds } from "../nodes/registry.js";
import { applicableGraphRules, loadUserPolicy } from "../policy/index.js";
import { isRepoWorkspace } from "../runs/repo-workspaces.js";
import { projectRoot, STATE_DIR } from "../project.js";
import { ensureStateDir } from "../runs/state-dir.js";
import { storeError, type Store } from "../store/store.js";
import { isRunningElsewhere, ownerText, type ThreadRecord } from "../runs/thread-registry.js";
import { isApprovalRequest } from "../runtime/approval.js";
import { createModelCache, nodeModelSpec, noModelMessage, type EffectRequest, type RunContext } from "../runtime/context.js";
import { eventBus } from "../runtime/event-bus.js";
import type { EventSink, RunEvent } from "../runtime/events.js";
import { nodesOfKind } from "../runtime/node-kind.js";
import { createRecorder } from "../runtime/recorder.js";
import type { SnapshotRepository } from "../snapshots/shadow-repo.js";
import { createToolStepSnapshots } from "../snapshots/tool-step-hook.js";
import { availableSandbox, type Sandbox } from "../tools/sandbox.js";
import { McpHub } from "../tools/mcp.js";
import type { Hook } from "../tools/hook-config.js";
import type { DeclaredSubagent } from "../tools/subagent-config.js";
import { outputSchemaProblem } from "../tools/complete-task.js";
import type { ToolContext } from "../tools/types.js";
import { hooksOf, runEventHooks } from "../runtime/hooks.js";
import type { McpServer } from "../tools/mcp-servers.js";
import type { GraphStateValue } from "../state/graph-state.js";
import type { PolicyRule } from "../state/rules.js";
import type { CoderMode, ThreadSettings } from "../state/thread.js";
import { compileGraph, type CompileOptions, type RunnableGraph } from "./compile.js";
import { trackActiveRun } from "./active-runs.js";
import type { LoopSupervisor } from "./loop-supervisor.js";
import { answerPaused } from "./answers.js";
import { EXIT_CODES, failureOutcome, settledOutcome, stepLimit, storeStopOutcome } from "./outcome.js";
import type { CommonRunOptions, RunOutcome } from "./run-types.js";
import { commitBranchWorktrees, removeBranchWorktrees, threadFolderParts } from "../git/worktrees/index.js";
import { mergeByName } from "../tools/merge-by-name.js";

const THREAD_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Makes the Looper that runs a mediator graph's loop as the linked thread `<thread>.loop` (see runner.ts). */
export type LooperFactory = (thread: Thread, mediator: MediatorNodeDefinition) => LoopSupervisor;

export interface NewThreadOptions extends CommonRunOptions {
  /** The new thread's id (default `<graph>-<time>-<random>`). */
  threadId?: string;
  /** Directory the nodes work in (default the current one). */
  workspace?: string;
}

/** A new thread's id, workspace and settings, checked. */
export interface NewThread {
  threadId: string;
  workspace: string;
  settings: ThreadSettings;
}

/** What a thread whose workspace is a clone of a repository (repo-workspace.ts) does beside its steps. */
export interface WorkspaceHooks {
  /** A file-changing tool step ended; `tree` is the workspace's snapshot then. */
  stepped(snapshots: SnapshotRepository, tree: string): Promise<void>;
  /** The run ended (not paused, not interrupted): delivers its result; returns a warning for the user, if any. A failure fails the run. */
  ended(): Promise<string | undefined>;
}

export interface ThreadOptions {
  /** The Looper of a mediator graph (every caller that may run one passes it). */
  looper?: LooperFactory;
  /** The directory to work in instead of the recorded workspace (a repository's clone on this machine). */
  workspace?: string;
  workspaceHooks?: WorkspaceHooks;
  /**
   * A recorded replay: the model and the effects (tool calls, git and inbox reads, function
   * results) answer from the record; no model is configured or checked.
   */
  replay?: { model: ChatModel; effect: (request: EffectRequest) => Promise<unknown> };
  /** What was not used because the user does not trust it (a project graph found by name): said at the run's start. */
  trustNotes?: readonly string[];
}

export interface OpenOptions extends ThreadOptions {
  /** The graph, when the caller has loaded it already; default: the thread's graph file as it is now. */
  graph?: GraphDefinition;
  /** The message when another process runs the thread (default: stop it first). */
  inUse?: (record: ThreadRecord) => string;
  /** Once the thread is claimed: where it works on this machine when not in its recorded workspace (a repository's clone). */
  workspaceFor?: (claimed: ThreadRecord) => Promise<Pick<ThreadOptions, "workspace" | "workspaceHooks">>;
}

/** How a run of the thread is announced: `run_started`, and a warning when the graph's files changed since the thread began. */
export interface StartAnnouncement {
  task: string;
  resumed: boolean;
  forkedFrom?: string;
  /** The fingerprint recorded with the thread, and what a change means for this run. */
  changed?: { recordedHash?: string; consequence?: string };
}

/** Overrides of one execution (a chat turn has its own event sink and cancel signal). */
export type TurnOverrides = Pick<CommonRunOptions, "onEvent" | "signal">;

/** Scripted model files are recorded with absolute paths, so a resume works from any directory. */
export function absoluteModelSpec(spec: string | undefined, cwd: string): string | undefined {
  if (!spec?.startsWith("scripted:")) return spec;
  return `scripted:${resolve(cwd, spec.slice("scripted:".length))}`;
}

/** The user's declared fields with their defaults: the `vars` of a thread's first input. */
export function initialVars(graph: GraphDefinition): Record<string, unknown> {
  return Object.fromEntries(Object.entries(graph.state).map(([name, field]) => [name, field.default]));
}

/** The mediator node of a graph, if it has one. */
export function mediatorNodeOf(graph: GraphDefinition): MediatorNodeDefinition | undefined {
  return nodesOfKind(graph, mediatorKind)[0];
}

/** The one-line refusal (exit 2) of a thread another live process runs. */
export function runningMessage(record: ThreadRecord): string {
  return `thread "${record.threadId}" is running in ${ownerText(record)}: stop it first with Ctrl-C`;
}

function newThreadId(graphName: string): string {
  return `${graphName}-${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
}

/**
 * A thread: its graph, workspace and settings, the per-process services its nodes use, and how it
 * runs. Every way of running one (run, resume, chat, fork, recorded replay) opens or creates a
 * Thread, optionally edits its state, then executes it.
 */
export class Thread {
  readonly looper?: LoopSupervisor;
  private readonly cwd: string;
  private readonly env: NodeJS.ProcessEnv;
  private readonly userRules: PolicyRule[];
  /** Where the agent's commands run: chosen once per thread and process. */
  private readonly sandbox: Sandbox;
  /** The MCP servers of the graph (and the graphs in it) and of the config, the config's replacing a graph's of the same name. */
  private readonly mcpServers: McpServer[];
  /** The user's hooks (config files). */
  private readonly hooks: Hook[];
  /** The config files' subagent types, their output schemas checked. */
  private readonly subagents: DeclaredSubagent[];
  private readonly models: (spec: string) => ChatModel;
  /** The process groups the dead owner's commands left, killed by the claim (`open`): `announce` says so. */
  private leftovers: number[] = [];
  /** What the project holds that this run does not use, because the user does not trust it: `announce` says so. */
  private readonly untrusted: string[];
  /** The task the thread was started with (its record's; a new thread's once `record` wrote it). */
  private task?: string;

  private constructor(
    readonly store: Store,
    readonly graph: GraphDefinition,
    readonly threadId: string,
    readonly workspace: string,
    readonly settings: ThreadSettings,
    readonly options: CommonRunOptions,
    private readonly extra: ThreadOptions,
    /** The thread's record as it was when this process claimed it (`open`); undefined for a new thread. */
    readonly claimedFrom?: ThreadRecord,
  ) {
    this.cwd = options.cwd ?? process.cwd();
    this.env = options.settings.env;
    this.task = claimedFrom?.task;
    // A thread on a repository, recorded for a worker (`run --queue --repo`), has no directory here: it is only recorded.
    const local = !isRepoWorkspace(workspace);
    if (local) ensureStateDir(join(workspace, STATE_DIR));
    const policy = local ? loadUserPolicy(workspace, this.env) : { rules: [], network: false, read: [], write: [], ignored: [] };
    this.userRules = policy.rules;
    this.untrusted = [...(extra.trustNotes ?? []), ...policy.ignored];
    this.sandbox = availableSandbox(this.env, {
      noSandbox: options.noSandbox,
      network: policy.network,
      readable: policy.read,
      writable: policy.write,
    });
    this.models = createModelCache(this.cwd, this.env, { idleTimeoutMs: options.modelTimeoutMs, providers: options.settings.providers });
    try {
      this.mcpServers = mergeByName(trustedGraphMcpServers(graph, this.env, this.untrusted), options.settings.mcpServers);
      this.hooks = [...options.settings.hooks];
      this.subagents = [...options.settings.subagents];
      for (const agent of this.subagents) {
        const problem = agent.output === undefined ? undefined : outputSchemaProblem(agent.output);
        if (problem) throw new Error(`subagent type "${agent.name}" in ${agent.origin}: the output schema ${problem}`);
      }
    } catch (error) {
      throw new ConfigError((error as Error).message);
    }
    const mediator = mediatorNodeOf(graph);
    if (mediator && extra.looper) this.looper = extra.looper(this, mediator);
    if (!extra.replay) this.checkModels(graph, noModelMessage(graph.name, process.cwd()));
  }

  /**
   * The id, workspace and settings of a new thread of `graph`, checked (before anything is opened
   * or written: a bad input leaves no trace).
   */
  static newThread(graph: GraphDefinition, options: NewThreadOptions): NewThread {
    const cwd = options.cwd ?? process.cwd();
    if (options.threadId !== undefined && !THREAD_ID.test(options.threadId)) {
      throw new ConfigError(`invalid thread id "${options.threadId}": use letters, digits, ".", "_" or "-" (at most 128)`);
    }
    // Without --workspace, the project the command runs in (from a subdirectory too: see projectRoot).
    const workspace = options.workspace !== undefined ? resolve(cwd, options.workspace) : projectRoot(cwd);
    if (!statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) {
      throw new ConfigError(`workspace ${workspace} is not a directory: create it or pass --workspace DIR`);
    }
    return {
      threadId: options.threadId ?? newThreadId(graph.name),
      workspace,
      settings: {
        model: absoluteModelSpec(options.model ?? options.settings.env.LOOPGRAPH_MODEL, cwd),
        approval: options.approval ?? approvalFromEnvironment(options.settings.env) ?? "ask",
        ...modeSetting(options.mode ?? modeFromEnvironment(options.settings.env)),
      },
    };
  }

  /** A new thread of `graph` (see `newThread`), its models checked; nothing is written until `record`. */
  static prepare(store: Store, graph: GraphDefinition, thread: NewThread, options: CommonRunOptions, extra: ThreadOptions = {}): Thread {
    return new Thread(store, graph, thread.threadId, thread.workspace, thread.settings, options, extra);
  }

  /**
   * An existing thread, about to run again: claimed for this process first (one transaction with
   * the check that no other live process runs it; else a one-line error, exit 2), then its graph
   * as the files are now, with the recorded model and approval mode unless `--model` /
   * `--approval` override them. The record as it was when claimed is `claimedFrom`; a caller that
   * then does not run the thread gives it back with `release`.
   */
  static async open(store: Store, record: ThreadRecord, options: CommonRunOptions, extra: OpenOptions = {}): Promise<Thread> {
    const claim = await store.threads.claim(record.threadId);
    if (!claim) throw new ConfigError(`no thread "${record.threadId}" in ${store.path}: list threads with \`loopgraph inspect\``);
    if (!claim.claimed) throw new ConfigError(extra.inUse?.(claim.holder) ?? runningMessage(claim.holder));
    const before = claim.before;
    try {
      const graph = extra.graph ?? (await loadGraph(before.graphFile));
      const settings: ThreadSettings = {
        model: absoluteModelSpec(options.model, options.cwd ?? process.cwd()) ?? before.model,
        approval: options.approval ?? before.approval,
        ...modeSetting(options.mode ?? before.mode),
      };
      const local = { ...extra, ...(await extra.workspaceFor?.(before)) };
      const thread = new Thread(store, graph, before.threadId, local.workspace ?? before.workspace, settings, options, local, before);
      thread.leftovers = claim.killed;
      return thread;
    } catch (error) {
      await store.threads.release(before.threadId, before);
      throw error;
    }
  }

  /**
   * Records the new thread in the store, running in this process (or `queued`, for a worker);
   * an existing id is an error that says how to continue it.
   */
  async record(task: string, options: { queued?: boolean } = {}): Promise<void> {
    this.task = task;
    const existing = await this.store.threads.create(
      {
        threadId: this.threadId,
        graphFile: this.graph.file,
        graphHash: graphFingerprint(this.graph),
        graphName: this.graph.name,
        task,
        model: this.settings.model,
        approval: this.settings.approval,
        ...modeSetting(this.settings.mode),
        workspace: this.workspace,
      },
      options,
    );
    if (existing) {
      throw new ConfigError(
        isRunningElsewhere(existing)
          ? runningMessage(existing)
          : `thread "${this.threadId}" already exists: continue it with \`loopgraph resume ${this.threadId}\``,
      );
    }
  }

  /** Marks the thread running in this process, with its settings: a claim, refused (exit 2) when another live process runs it. */
  async markRunning(inUse: (record: ThreadRecord) => string = runningMessage): Promise<void> {
    const claim = await this.store.threads.markRunning(this.threadId, this.settings);
    if (claim && !claim.claimed) throw new ConfigError(inUse(claim.holder));
  }

  /** Gives back the thread claimed by `open` without running it: its record as it was then (if this process still holds it). */
  async release(): Promise<void> {
    if (this.claimedFrom) await this.store.threads.release(this.threadId, this.claimedFrom);
  }

  /** The services of one execution: the thread's long-lived ones, with the turn's event sink and cancel signal. */
  context(turn: TurnOverrides = {}): RunContext {
    if (isRepoWorkspace(this.workspace)) {
      throw new ConfigError(
        `thread "${this.threadId}" works on a clone of a repository (${this.workspace}) that a worker makes: run it with \`loopgraph worker\` or \`loopgraph resume\``,
      );
    }
    const emit = publishingMessages(turn.onEvent ?? this.options.onEvent);
    const { threadId, workspace } = this;
    return {
      threadId,
      ...(this.task !== undefined && { task: this.task }),
      workspace,
      env: this.env,
      settings: this.settings,
      maxRounds: this.options.maxRounds,
      ...(this.options.attempts !== undefined && { attempts: this.options.attempts }),
      readInbox: (cursor) => this.store.inbox.after(threadId, cursor),
      emit,
      snapshots: createToolStepSnapshots({
        threadId,
        workspace,
        log: this.store.snapshots,
        warn: (message) => emit({ type: "warning", threadId, message }),
        secrets: this.store.secrets,
        ...(this.extra.workspaceHooks ? { stepped: this.extra.workspaceHooks.stepped } : {}),
      }),
      userRules: this.userRules,
      model: this.extra.replay ? () => this.extra.replay!.model : this.models,
      signal: turn.signal ?? this.options.signal ?? new AbortController().signal,
      record: createRecorder(this.store.recordings, threadId, this.store.secrets),
      sandbox: this.sandbox,
      secrets: this.store.secrets,
      commandGroups: {
        started: (pgid) => this.store.threads.commandStarted(threadId, pgid),
        ended: (pgid) => this.store.threads.commandEnded(threadId, pgid),
      },
      ...(this.extra.replay ? { replayEffect: this.extra.replay.effect } : {}),
      ...(this.looper ? { looper: this.looper } : {}),
      // Connected when a Coder first needs a server's tools; closed when the execution ends.
      ...(this.mcpServers.length > 0 ? { mcp: new McpHub(this.mcpServers, { workspace, sandbox: this.sandbox, env: this.env }) } : {}),
      ...(this.hooks.length > 0 ? { hooks: this.hooks } : {}),
      ...(this.subagents.length > 0 ? { subagents: this.subagents } : {}),
      ...(this.options.settings.planning ? { planning: this.options.settings.planning } : {}),
    };
  }

  /** Emits `run_started`, and a warning when the graph's files changed since the thread began. */
  announce(ctx: RunContext, start: StartAnnouncement): void {
    const forked = start.forkedFrom === undefined ? {} : { forkedFrom: start.forkedFrom };
    const sandbox = (ctx.sandbox ?? this.sandbox).name;
    ctx.emit({
      type: "run_started",
      threadId: this.threadId,
      graph: this.graph.name,
      task: start.task,
      resumed: start.resumed,
      ...forked,
      sandbox,
    });
    for (const warning of [...this.untrusted, ...droppedGraphAllows(this.graph, this.workspace)])
      ctx.emit({ type: "warning", threadId: this.threadId, message: warning });
    if (this.leftovers.length > 0) {
      const groups = this.leftovers.join(", ");
      const owner = this.claimedFrom?.pid;
      ctx.emit({
        type: "warning",
        threadId: this.threadId,
        message: `killed what the commands of process ${owner}, which ran the thread and is gone, left running (process group ${groups})`,
      });
      this.leftovers = [];
    }
    if (!start.changed) return;
    const changed = graphChangedWarning(start.changed.recordedHash, this.graph, start.changed.consequence);
    if (changed) ctx.emit({ type: "warning", threadId: this.threadId, message: changed });
  }

  /** Whether the thread's graph has reached its end (its latest checkpoint has nothing left to run). */
  async ended(): Promise<boolean> {
    const compiled = await this.compile(this.context());
    const snapshot = await compiled.getState({ configurable: { thread_id: this.threadId } });
    // A task whose writes are stored is not in `next`, yet the graph goes on with them (a write of
    // the checkpoint after them failed: a full store): only no task at all is the end.
    return snapshot.next.length === 0 && snapshot.tasks.length === 0;
  }

  /** Compiles the graph with the thread's checkpointer. */
  compile(ctx: RunContext, options: CompileOptions = {}): Promise<RunnableGraph> {
    return compileGraph(this.graph, ctx, this.store.saver, options);
  }

  /**
   * Runs the graph from `input` (null: on from the thread's newest checkpoint) until it ends or
   * pauses; approvals are answered in this process when the options say how. Records how it ended.
   * An abort of the run's signal (Ctrl-C) ends the step in flight without a result: `interrupted`.
   */
  async execute(input: unknown, ctx: RunContext = this.context(), compile: CompileOptions = {}): Promise<RunOutcome> {
    const { threadId } = this;
    const untrack = trackActiveRun({
      threadId,
      interrupt: async (reason) => {
        await this.store.threads.markEnded(threadId, "interrupted", reason);
        ctx.emit({ type: "run_finished", threadId, status: "interrupted", outcome: "interrupted", exitCode: ExitCode.Interrupted, reason });
      },
    });
    try {
      return await this.executeTracked(input, ctx, compile);
    } finally {
      untrack();
      await ctx.mcp?.close();
    }
  }

  private async executeTracked(input: unknown, ctx: RunContext, compile: CompileOptions): Promise<RunOutcome> {
    const { graph, threadId, options } = this;
    const compiled = await this.compile(ctx, compile);
    const config = {
      configurable: { thread_id: threadId },
      recursionLimit: stepLimit(graph, options.maxRounds),
      // Each step's checkpoint is written before the next step starts: a crash loses at most the step in flight.
      durability: "sync" as const,
      ...(options.control ? { control: options.control } : {}),
    };
    let outcome: Omit<RunOutcome, "state">;
    let state: GraphStateValue | undefined;
    let next = input;
    await this.sessionHooks(ctx, { event: "session_start", resumed: input === null });
    for (;;) {
      state = undefined;
      try {
        // Progress is reported by the nodes themselves; draining the stream drives the run. The
        // "custom" mode carries only what a node writes to its stream writer (none of ours do), so
        // LangGraph does not map every step's writes into updates nobody reads (~6% of a step).
        const stream = await compiled.stream(next as never, { ...config, streamMode: "custom" });
        for await (const _chunk of stream) {
          // Nothing to do with a chunk.
        }
        ({ state, ...outcome } = await settledOutcome(compiled, config, graph, threadId, (id) => this.visitsAt(id)));
      } catch (error) {
        outcome = this.storeStopped(error) ?? failureOutcome(error, graph, threadId, stepLimit(graph, options.maxRounds), ctx.signal);
      }
      const request = outcome.pause?.value;
      if (!options.askApproval || !isApprovalRequest(request)) break;
      const answer = await options.askApproval(request, ctx.signal);
      if (!answer) break;
      // The answer is for this request's call (the first of several pending: the others ask again), whatever the policy says when the step runs again.
      const first = outcome.pause?.pending?.[0];
      const answering = answerPaused(outcome.pause, answer, first?.id);
      ctx.answering = answering.requests;
      next = answering.command;
    }
    // A store gone away has no state to read: the outcome says the run stopped, and where.
    state ??= outcome.storeLost ? ({} as GraphStateValue) : ((await compiled.getState(config)).values as GraphStateValue);
    if (this.extra.workspaceHooks && outcome.status !== "paused" && (outcome.status !== "interrupted" || outcome.ended)) {
      // The result is delivered before the thread is marked ended: whoever waits for the end finds it.
      try {
        const warning = await this.extra.workspaceHooks.ended();
        if (warning) ctx.emit({ type: "warning", threadId, message: warning });
      } catch (error) {
        const reason = `the run's result could not be kept: ${(error as Error).message.split("\n")[0]}`;
        outcome = {
          ...outcome,
          status: "failed",
          exitCode: EXIT_CODES.failed,
          error: outcome.error ? `${outcome.error}; ${reason}` : reason,
        };
      }
    }
    await this.removeWorktrees(ctx, outcome.status);
    try {
      await this.store.threads.markEnded(threadId, outcome.status, outcome.error, outcome.pause);
    } catch (error) {
      // The lock is still held (or the disk still full): the record keeps "running" with this
      // process, which readers see as interrupted once it is gone; the message says how to continue either way.
      const stopped = this.storeStopped(error);
      if (!stopped) throw error;
      if (outcome.status !== "interrupted") outcome = stopped;
    }
    const ending = { status: outcome.status, exitCode: outcome.exitCode, ...(outcome.error && { reason: outcome.error }) };
    await this.sessionHooks(ctx, outcome.status === "failed" ? { event: "error", ...ending } : { event: "stop", ...ending });
    if (outcome.status === "failed" && outcome.error) ctx.emit({ type: "error", threadId, message: outcome.error });
    if (outcome.pause) ctx.emit({ type: "interrupt", threadId, ...outcome.pause });
    const finished: RunEvent = {
      type: "run_finished",
      threadId,
      status: outcome.status,
      outcome: outcome.status,
      exitCode: outcome.exitCode,
    };
    ctx.emit(outcome.error ? { ...finished, reason: outcome.error } : finished);
    return { ...outcome, state };
  }

  /**
   * At the run's end (not a pause or an interruption, which a resume continues), the folders of
   * its coders' branch worktrees are committed on their branches and go; the branches stay until
   * `threads prune`. A folder that cannot go is a warning, never the run's failure.
   */
  private async removeWorktrees(ctx: RunContext, status: RunOutcome["status"]): Promise<void> {
    if (this.extra.replay || status === "paused" || status === "interrupted") return;
    // Most runs made none: nothing to check then.
    if (!existsSync(join(this.workspace, ...threadFolderParts(this.threadId)))) return;
    try {
      // What a visit cut short by the failure changed is kept on its branch, which a resume continues from.
      await commitBranchWorktrees(this.workspace, this.threadId, `loopgraph: the run ended (${status})`, this.store.secrets);
      await removeBranchWorktrees(this.workspace, this.threadId);
    } catch (error) {
      ctx.emit({ type: "warning", threadId: this.threadId, message: (error as Error).message });
    }
  }

  /**
   * The outcome of a run its store stopped (locked beyond the busy timeout, its disk full): at its
   * last checkpoint, resumable. Any other failure of the store (damaged, read-only) is thrown as
   * its one-line error (exit 2), as every command says it; other errors are the run's own (undefined).
   */
  private storeStopped(error: unknown): Omit<RunOutcome, "state"> | undefined {
    const stopped = storeStopOutcome(error, this.store.path, this.threadId, this.env);
    if (stopped) return stopped;
    const unusable = storeError(this.store.path, error);
    if (unusable !== error) throw unusable;
    return undefined;
  }

  /**
   * The user's hooks at the start or end of an execution, given the thread, graph and workspace
   * with the event's own fields. Not run in a recorded replay (it performs nothing); a hook that
   * fails is a warning (a `hook` event), never the run's failure.
   */
  private async sessionHooks(
    ctx: RunContext,
    event: { event: "session_start" | "stop" | "error" } & Record<string, unknown>,
  ): Promise<void> {
    if (this.extra.replay) return;
    const hooks = hooksOf(ctx, event.event);
    if (hooks.length === 0) return;
    const { threadId, workspace } = this;
    // The end's hooks run also when the run was interrupted (Ctrl-C): with a signal of their own.
    const signal = event.event === "session_start" ? ctx.signal : new AbortController().signal;
    const tools = (): ToolContext => ({
      workspace,
      env: this.env,
      artifactsDir: join(workspace, STATE_DIR, "artifacts", threadId),
      sandbox: ctx.sandbox ?? this.sandbox,
      signal,
      ...(ctx.secrets && { secrets: ctx.secrets }),
      ...(ctx.commandGroups && { commandGroups: ctx.commandGroups }),
    });
    try {
      await runEventHooks({ ...ctx, signal }, hooks, { ...event, thread: threadId, graph: this.graph.name, workspace }, tools);
    } catch (error) {
      // Ctrl-C during a session_start hook: the run that follows stops at once, as interrupted.
      if (!cancelledByUser(ctx.signal)) throw error;
    }
  }

  /** The `visits` channel of one of the thread's root checkpoints, read alone; undefined where it is not stored as plain JSON. */
  private async visitsAt(checkpointId: string): Promise<Record<string, number> | undefined> {
    try {
      return (
        ((await this.store.checkpoints.plainChannels(this.threadId, ["visits"], checkpointId)).visits as
          | Record<string, number>
          | undefined) ?? {}
      );
    } catch {
      return undefined;
    }
  }

  /** Fails fast (exit 2) when a node has no model or a model cannot be configured (e.g. a missing key). */
  private checkModels(graph: GraphDefinition, missing: string): void {
    for (const node of Object.values(graph.nodes)) {
      const kind = nodeKinds.of(node);
      if (kind.usesModel) this.models(nodeModelSpec(node, graph, this.settings, missing));
      const nested = [...(kind.inlineGraph ? [kind.inlineGraph(node)] : []), ...(kind.linkedGraphs?.(node) ?? [])];
      for (const inner of nested) this.checkModels(inner, missing);
    }
  }
}

/** A warning for each graph file (the graph's and its nested ones') inside the workspace whose allow rules are not applied. */
function droppedGraphAllows(graph: GraphDefinition, workspace: string, seen = new Set<string>()): string[] {
  if (seen.has(graph.file)) return [];
  seen.add(graph.file);
  const { dropped } = applicableGraphRules(graph.file, graph.policy, workspace);
  const own =
    dropped.length === 0
      ? []
      : [
          `${graph.file} is inside the workspace, where the agent can change it: its ${dropped.length} allow rule${dropped.length === 1 ? " is" : "s are"} ` +
            "not applied (put allow rules in .loopgraph/policy.yaml or ~/.config/loopgraph/policy.yaml, which the agent cannot write)",
        ];
  const nested = Object.values(graph.nodes).flatMap((node) => {
    const kind = nodeKinds.of(node);
    return [...(kind.inlineGraph ? [kind.inlineGraph(node)] : []), ...(kind.linkedGraphs?.(node) ?? [])];
  });
  return [...own, ...nested.flatMap((inner) => droppedGraphAllows(inner, workspace, seen))];
}

/** Passes every event on, and publishes complete messages on the bus topic `message:<thread>`. */
function publishingMessages(onEvent: EventSink | undefined): EventSink {
  return (event) => {
    onEvent?.(event);
    if (event.type === "message" && event.content !== undefined) {
      eventBus.publish({
        threadId: event.threadId,
        node: event.node,
        content: event.content,
        auto: event.content.startsWith(AUTO_PREFIX),
        at: new Date().toISOString(),
      });
    }
  };
}

const modeSetting = (mode: CoderMode | undefined): { mode?: CoderMode } => (mode ? { mode } : {});
