import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import { RunControl } from "@langchain/langgraph";
import { CancelledError } from "../errors.js";
import { formatStatus, initialLooperSnapshot } from "../nodes/looper/index.js";
import type { LooperCommand } from "../state/looper.js";
import { AUTO_PREFIX } from "../nodes/looper/node.js";
import { isRunningElsewhere, type ThreadRecord } from "../runs/thread-registry.js";
import { latestValues, withStore, withTables, type StoreOptions } from "../store/store.js";
import type { Settings } from "../config/environment-settings.js";
import {
  firstQueuedTask,
  hasQueuedTask,
  hasUnconsumedCommands,
  looperStatus,
  type LooperStatus,
  loopThreadOf,
  NOTHING_TO_STOP,
  startsLoop,
} from "./commands.js";
import { eventBus, messageTopic, type ThreadMessage } from "../runtime/event-bus.js";
import type { EventSink } from "../runtime/events.js";
import type { ResumeOptions, RunOptions, RunOutcome } from "./run-types.js";
import type { ThreadSettings } from "../state/thread.js";
import type { LoopProgress, LooperHandle } from "../runtime/context.js";
import type { ApprovalAnswer } from "../runtime/approval.js";

export interface LoopSupervisorOptions {
  /** The Mediator's thread; the loop runs in `<thread>.loop`. */
  mediatorThreadId: string;
  /** Graph file of the loop (it has a looper node). */
  graphFile: string;
  workspace: string;
  settings: ThreadSettings;
  maxRounds?: number;
  /** `--no-sandbox` of the chat or run that owns the loop. */
  noSandbox?: boolean;
  /** The store of the Mediator's thread; the loop's thread lives in the same one. */
  store: StoreOptions;
  /** The settings of the command that runs the Mediator (src/config): the loop runs with them too. */
  commandSettings: Settings;
  /** Events of the loop's runs (the `run` command prints them; `chat` follows the message bus instead). */
  onEvent?: EventSink;
  /** Drains the loop's runs (Ctrl-C of `run`); by default the supervisor's own, see {@link LoopSupervisor.drain}. */
  control?: RunControl;
  /** Cancels the loop's step in flight (Ctrl-C of `run`); by default the supervisor's own, see {@link LoopSupervisor.drain}. */
  signal?: AbortSignal;
  /** `--model-timeout` of the chat or run that owns the loop (milliseconds). */
  modelTimeoutMs?: number;
  // The runner's entry points, passed in so that the runner and the supervisor do not import each other.
  run: (options: RunOptions) => Promise<RunOutcome>;
  resume: (options: ResumeOptions) => Promise<RunOutcome>;
}

/**
 * Runs a Mediator's Looper in the background of this process, as the linked thread
 * `<thread>.loop`: that thread has its own checkpoints, so it stays inspectable and resumable
 * on its own (`loopgraph resume <thread>.loop`). One loop runs per thread at a time. Commands
 * for a running loop go through the thread's inbox, as from `loopgraph send`, so they are
 * applied exactly once whichever process runs the loop.
 */
export class LoopSupervisor implements LooperHandle {
  readonly threadId: string;
  private active?: Promise<RunOutcome>;
  private lastOutcome?: RunOutcome;
  private readonly control: RunControl;
  /** Aborts the loop's step in flight when the supervisor owns the signal (see `drain`). */
  private readonly cancel = new AbortController();
  private readonly signal: AbortSignal;
  private readonly settledHandlers = new Set<(outcome: RunOutcome) => void>();

  constructor(private readonly options: LoopSupervisorOptions) {
    this.threadId = loopThreadOf(options.mediatorThreadId);
    this.control = options.control ?? new RunControl();
    this.signal = options.signal ?? this.cancel.signal;
  }

  /** Whether a run of the loop is in progress in this process. */
  get running(): boolean {
    return this.active !== undefined;
  }

  /** How the loop's last run in this process ended. */
  get outcome(): RunOutcome | undefined {
    return this.lastOutcome;
  }

  /** Follows the loop's message log as it is written (the event bus topic `message:<loop thread>`), `[AUTO]` progress included. */
  onMessage(handler: (message: ThreadMessage) => void): () => void {
    return eventBus.subscribe(messageTopic(this.threadId), handler);
  }

  /** Calls `handler` each time a run of the loop ends (finished, paused, interrupted or failed). */
  onSettled(handler: (outcome: RunOutcome) => void): () => void {
    this.settledHandlers.add(handler);
    return () => this.settledHandlers.delete(handler);
  }

  /** Starts a loop on `task`; returns at once with what happened, for the Mediator to tell. */
  async start(task: string): Promise<string> {
    if (this.running) return `already running: a loop runs in this thread; its task is unchanged.\n${await this.status()}`;
    const record = await this.record();
    if (!record) {
      await this.launch(() => this.options.run({ ...this.runSettings(), graph: this.options.graphFile, task, threadId: this.threadId }));
      return this.started(task);
    }
    if (isRunningElsewhere(record)) return `already running in process ${record.pid}: ${await this.status()}`;
    if (await this.isLoopRunning(record)) {
      void this.resumeLoop();
      return `already running: the loop of thread ${this.threadId} was interrupted and is resumed now; its task is unchanged.\n${await this.status()}`;
    }
    await this.post({ command: "start", task });
    await this.resumeLoop();
    return this.started(task);
  }

  /** What `start` answers: the run may already have failed (e.g. a bad model setting). */
  private started(task: string): string {
    if (!this.running && this.lastOutcome?.status === "failed")
      return `the loop could not start: ${this.lastOutcome.error ?? "unknown error"}`;
    return `started: the loop runs in the background (thread ${this.threadId}) on: ${task}`;
  }

  /** Adds a task for after the current round; with no loop running, starts one. */
  async addPending(task: string): Promise<string> {
    const record = this.running ? undefined : await this.record();
    if (!this.running && !(await this.isLoopRunning(record))) return this.start(task);
    await this.post({ command: "add_pending", task });
    if (!this.running && record && !isRunningElsewhere(record)) void this.resumeLoop();
    return `queued: "${task}" is taken up at the loop's next Judge.`;
  }

  /** Asks the loop to stop after the step in progress. */
  async stop(): Promise<string> {
    const record = this.running ? undefined : await this.record();
    if (!this.running && !(await this.isLoopRunning(record))) return NOTHING_TO_STOP;
    await this.post({ command: "stop" });
    return this.running || isRunningElsewhere(record!)
      ? "stopping: the loop ends after the step in progress."
      : `stop queued: the loop of thread ${this.threadId} is not running now; it stops as soon as it is resumed.`;
  }

  /** The status block, read from the store: no model call. */
  async status(): Promise<string> {
    const record = await this.record();
    if (!record) return formatStatus(initialLooperSnapshot());
    const { text, json } = await looperStatus(this.threadId, this.options.store);
    return `${text}\n${describeRun(record, this.active !== undefined, json)}`;
  }

  /** The loop's `[AUTO]` progress lines after the first `since`, from its message log. */
  async progress(since: number): Promise<LoopProgress> {
    const values = await withStore(this.options.store, "read", (store) => latestValues(store, this.threadId));
    const messages = (values.messages ?? []) as { content: unknown }[];
    const auto = messages.flatMap((message) =>
      typeof message.content === "string" && message.content.startsWith(AUTO_PREFIX) ? [message.content] : [],
    );
    return { lines: auto.slice(since), total: auto.length };
  }

  /**
   * Takes up commands sent to the loop from another process (`loopgraph send <chat> "start: …"`)
   * while it does not run here: a loop not started yet starts on the first task sent (the chat
   * took it from the inbox); an existing one is continued, and reads them from its inbox.
   * Returns a line for the user, or undefined when there is nothing to take up.
   */
  async takeUpQueued(): Promise<string | undefined> {
    if (this.running) return undefined;
    const record = await this.record();
    if (record) {
      // A lone `stop` for a loop that does not run is no reason to run it.
      if (isRunningElsewhere(record) || record.status === "paused" || !(await this.hasQueuedTask()) || this.running) return undefined;
      void this.resumeLoop();
      return `taking up the commands sent to the loop: it runs in the background (thread ${this.threadId}).`;
    }
    const first = await withStore(this.options.store, "write", async (store) => {
      const entries = await store.inbox.after(this.threadId, 0);
      const at = entries.findIndex((entry) => startsLoop(entry.command));
      // A stop sent before any start has nothing to stop; the first task is taken from the inbox to start the loop on.
      for (const entry of entries.slice(0, at < 0 ? entries.length : at + 1)) await store.inbox.remove(entry.id);
      return at < 0 ? undefined : entries[at]!.command;
    });
    if (!first || !("task" in first) || this.running) return undefined;
    return this.start(first.task);
  }

  /** The inbox id of the first task (`start` or `add`) sent to the loop and not taken up yet: messages and commands share one sequence of ids. */
  async queuedTaskId(): Promise<number | undefined> {
    return withTables(this.options.store, "read", async (store) => (await firstQueuedTask(store, this.threadId))?.id);
  }

  /** Continues the loop's thread in the background (after a crash, Ctrl-C or a pause), optionally answering its approval. */
  async resume(answer?: ApprovalAnswer): Promise<string> {
    if (this.running) return "the loop is already running.";
    const record = await this.record();
    if (!record) return "no loop has been started in this thread yet.";
    if (isRunningElsewhere(record)) return `the loop runs in process ${record.pid}.`;
    if (answer !== undefined && record.pause?.reason !== "input") return "the loop is not waiting for an approval.";
    // A loop that went idle (finished, stopped, at its round limit) has nothing to resume, unless a command waits for it.
    const ended = record.status !== "running" && record.status !== "paused" && !(await this.isLoopRunning(record));
    if (answer === undefined && ended && !(await this.hasQueuedCommands())) {
      return record.status === "finished"
        ? "the loop has finished: nothing to resume."
        : `the loop has ended (${record.status}: ${record.error ?? "no reason"}): nothing to resume.`;
    }
    void this.resumeLoop(answer);
    return `resumed: the loop of thread ${this.threadId} runs in the background.`;
  }

  /** Resolves when the loop's run in this process (and any restart it needed) ends; at once when none runs. */
  async wait(): Promise<RunOutcome | undefined> {
    while (this.active !== undefined) await this.active;
    return this.lastOutcome;
  }

  /**
   * Stops the loop's run now, and waits for it (leaving `chat`): the step in flight ends without a
   * result (it re-runs on resume), the thread is recorded as interrupted with its last checkpoint.
   */
  async drain(): Promise<RunOutcome | undefined> {
    if (!this.running) return this.lastOutcome;
    this.control.requestDrain("the chat ended");
    this.cancel.abort(new CancelledError("the chat ended"));
    return this.wait();
  }

  private runSettings() {
    const { workspace, settings, maxRounds, noSandbox, store, commandSettings, modelTimeoutMs } = this.options;
    return {
      workspace,
      ...settings,
      maxRounds,
      noSandbox,
      modelTimeoutMs,
      db: store.db,
      cwd: store.cwd,
      settings: commandSettings,
      onEvent: this.onLoopEvent,
      control: this.control,
      signal: this.signal,
    };
  }

  private resumeLoop(answer?: ApprovalAnswer): Promise<void> {
    const { settings, maxRounds, noSandbox, store, commandSettings, modelTimeoutMs } = this.options;
    return this.launch(() =>
      this.options.resume({
        threadId: this.threadId,
        approval: settings.approval,
        ...(settings.mode && { mode: settings.mode }),
        maxRounds,
        noSandbox,
        modelTimeoutMs,
        db: store.db,
        cwd: store.cwd,
        settings: commandSettings,
        onEvent: this.onLoopEvent,
        control: this.control,
        signal: this.signal,
        answer,
      }),
    );
  }

  private firstStepDone?: () => void;
  private nodesStarted = 0;

  private readonly onLoopEvent: EventSink = (event) => {
    this.options.onEvent?.(event);
    // The second node starts once the first one's checkpoint is written (durability "sync").
    if (event.type === "node_started" && ++this.nodesStarted === 2) this.firstStepDone?.();
  };

  /** Starts a run of the loop; resolves once its first step is saved (or it has ended), so a status right after reflects it. */
  private launch(start: () => Promise<RunOutcome>): Promise<void> {
    this.nodesStarted = 0;
    const firstStep = new Promise<void>((resolve) => (this.firstStepDone = resolve));
    // Started from inside the Mediator's run, the loop would inherit its LangGraph context (and
    // checkpointer) through async local storage: it runs detached, as a run of its own.
    const run = AsyncLocalStorageProviderSingleton.getInstance()
      .run(undefined, start)
      .catch((error: unknown): RunOutcome => {
        if (this.options.commandSettings.env.LOOPGRAPH_DEBUG) console.error(error);
        const message = error instanceof Error ? error.message : String(error);
        return { threadId: this.threadId, status: "failed", exitCode: 1, error: message.split("\n")[0], state: {} as RunOutcome["state"] };
      })
      .then(async (outcome) => {
        this.lastOutcome = outcome;
        // A command posted while the run was ending is still waiting: the loop goes on with it.
        // (The run counts as active until then, so that `takeUpQueued` does not start it twice.)
        const goOn = outcome.status === "finished" && !this.control.drainRequested && (await this.hasQueuedCommands());
        this.active = undefined;
        if (goOn) {
          void this.resumeLoop();
        } else {
          // Outside the LangGraph context the loop was started from (a Mediator's turn): a handler may run a turn of its own.
          const detached = AsyncLocalStorageProviderSingleton.getInstance();
          for (const handler of this.settledHandlers) detached.run(undefined, () => handler(outcome));
        }
        return outcome;
      });
    this.active = run;
    return Promise.race([firstStep, run.then(() => undefined)]).finally(() => (this.firstStepDone = undefined));
  }

  private async record(): Promise<ThreadRecord | undefined> {
    return withStore(this.options.store, "read", async (store) => store.threads.get(this.threadId));
  }

  /** Whether the loop's lifecycle (of its thread's `record`) is RUNNING: it may be running, interrupted or crashed. */
  private async isLoopRunning(record: ThreadRecord | undefined): Promise<boolean> {
    if (!record) return false;
    const { json } = await looperStatus(this.threadId, this.options.store);
    return json.state === "RUNNING";
  }

  /** Whether a `start` or `add_pending` waits in the loop's inbox. */
  private async hasQueuedTask(): Promise<boolean> {
    return withTables(this.options.store, "read", (store) => hasQueuedTask(store, this.threadId));
  }

  private async hasQueuedCommands(): Promise<boolean> {
    return withTables(this.options.store, "read", (store) => hasUnconsumedCommands(store, this.threadId));
  }

  private async post(command: Exclude<LooperCommand, { command: "status" }>): Promise<void> {
    await withStore(
      this.options.store,
      "write",
      async (store) => void (await store.inbox.post(this.threadId, JSON.stringify(command), command)),
    );
  }
}

/**
 * The Looper's request for the Mediator's summary of an ended loop: its `[AUTO]` line, then on
 * lines of their own what the Mediator is to do (`chat --thread` shows only the `[AUTO]` line).
 */
export function loopEndRequest(loop: RunOutcome, instruction: string): string {
  return `${AUTO_PREFIX} ${loopEnding(loop)}\n${instruction}`;
}

/** How a loop's run ended, in words for the Mediator (its summary after the loop). */
export function loopEnding(loop: RunOutcome): string {
  const reason = (loop.state?.loopState as { context?: { endReason?: string } } | undefined)?.context?.endReason ?? "finished";
  return loop.status === "failed"
    ? `the loop failed: ${loop.error ?? "unknown error"}.`
    : loop.status === "finished"
      ? `the loop ended: ${reason}.`
      : `the loop ended without finishing the work: ${loop.error ?? reason}.`;
}

function describeRun(record: ThreadRecord, activeHere: boolean, loop: LooperStatus["json"]): string {
  if (activeHere) return `run: running in the background (thread ${record.threadId})`;
  if (isRunningElsewhere(record)) return `run: running in process ${record.pid} (thread ${record.threadId})`;
  switch (record.status) {
    case "finished":
      return `run: finished (thread ${record.threadId})`;
    case "paused":
      return record.pause?.reason === "input"
        ? `run: waiting for approval (thread ${record.threadId}): /approve or /reject in chat, or loopgraph resume ${record.threadId} --approve`
        : `run: paused (thread ${record.threadId}): loopgraph resume ${record.threadId}`;
    case "failed":
      return `run: failed (thread ${record.threadId}): ${record.error ?? "unknown error"}`;
    case "limited":
      return `run: ended by a limit (thread ${record.threadId}): ${record.error ?? "a limit"}`;
    default:
      // Stopped by the user: the loop ended, there is nothing to resume.
      if (loop.state === "IDLE" && loop.endReason !== undefined)
        return `run: ended, ${loop.endReason} (thread ${record.threadId}): nothing to resume; start: <task> begins a new loop`;
      return `run: interrupted (thread ${record.threadId}): /resume in chat, or loopgraph resume ${record.threadId}`;
  }
}
