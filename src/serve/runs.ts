/**
 * The LangGraph server's runs, as loopgraph runs them: a new thread's first run is `run`, an
 * answer to its approval (`command: {resume}`) or a run with no input is `resume`, a run from an
 * earlier checkpoint is a fork (`replay --from`). Each runs in this process with the user's
 * settings, exactly as the CLI would run it (the same trust, sandbox and approval rules; an API
 * client may ask for a stricter approval mode, never a looser one), and owns its thread as any
 * run does: `inspect`, the web inspector and `resume` see it as any other.
 *
 * A run's record (its id, status and what it streamed) is kept by this server while it lives;
 * the thread and its checkpoints are in the store for good.
 */
import { randomUUID } from "node:crypto";
import { RunControl } from "@langchain/langgraph";
import type { Settings } from "../config/environment-settings.js";
import { CancelledError } from "../errors.js";
import { approvalFromEnvironment } from "../config/environment-settings.js";
import type { CommonRunOptions, RunOutcome } from "../engine/run-types.js";
import { enqueueRun, resumeRun, runGraph } from "../engine/runner.js";
import { stopQueuedRun } from "../engine/worker.js";
import type { GraphListing } from "../graph/index.js";
import { forkRun } from "../replay/fork.js";
import type { ApprovalAnswer } from "../runtime/approval.js";
import type { RunEvent } from "../runtime/events.js";
import { isRunningElsewhere, type ThreadRecord } from "../runs/thread-registry.js";
import { runningMessage } from "../engine/thread.js";
import { APPROVAL_MODES, type ApprovalMode } from "../state/thread.js";
import { withTables, type StoreOptions } from "../store/store.js";
import { HttpError } from "../ui/http.js";
import { runnableGraphFile } from "./assistants.js";
import { CheckpointFollower, EventTranslator, interruptParts, STREAM_MODES, type StreamMode, type StreamPart } from "./stream.js";
import { interruptsOf, waitingRecord } from "./threads.js";

/** LangGraph's run statuses. */
export type ServedRunStatus = "pending" | "running" | "success" | "error" | "interrupted";

/** Where and how this server runs: the store, the project folder, the user's settings. */
export interface RunPlace {
  store: StoreOptions;
  cwd: string;
  settings: Settings;
  /** `serve --model`: the model of new threads (else the user's configured one). */
  model?: string;
  /** `serve --queue`: new threads' runs are queued for the PostgreSQL store's workers instead of run here. */
  queue?: boolean;
}

/** How a planned run ends: its loopgraph status, and why it did not finish. */
type Ended = Pick<RunOutcome, "status" | "error">;

/**
 * A planned run, started with the run options and a way to look for the checkpoints it wrote
 * meanwhile; `leaving` is aborted when the server stops following a run a worker runs.
 */
export type RunStarter = (options: CommonRunOptions, follow: () => Promise<void>, leaving: AbortSignal) => Promise<Ended>;

/** A checked run request: how to start it, and whether a worker runs it (the server only follows it). */
export interface PlannedRun {
  start: RunStarter;
  queued: boolean;
}

/** What a client asked a run to do, checked (see `planRun`). */
export interface RunRequest {
  threadId: string;
  assistantId: string;
  body: Record<string, unknown>;
}

/** A run of this server: its record, and what it streamed, for whoever joins it. */
export class ServedRun {
  readonly runId = randomUUID();
  readonly createdAt = new Date().toISOString();
  updatedAt = this.createdAt;
  status: ServedRunStatus = "pending";
  /** The last `values` (with `__interrupt__` when it paused), or the error: what `wait` and `join` answer. */
  result: Record<string, unknown> = {};
  private readonly parts: StreamPart[] = [];
  private readonly listeners = new Set<() => void>();
  private ended = false;
  private readonly control = new RunControl();
  private readonly abort = new AbortController();
  readonly done: Promise<void>;
  private markDone: () => void = () => undefined;
  private readonly stopFollowing = new AbortController();
  /** A worker runs it (`serve --queue`): the server only follows it, and a server that stops leaves it running. */
  queued = false;

  constructor(
    readonly threadId: string,
    readonly assistantId: string,
    readonly metadata: Record<string, unknown>,
    readonly modes: ReadonlySet<StreamMode>,
  ) {
    this.done = new Promise((resolve) => (this.markDone = resolve));
  }

  get active(): boolean {
    return !this.ended;
  }

  /** Stops the run at once, as Ctrl-C stops `loopgraph run`: checkpointed, `interrupted`, resumable. */
  cancel(): void {
    this.control.requestDrain("cancelled through the API");
    // A CancelledError, as Ctrl-C's: the step in flight ends without a result and the run is `interrupted`, not failed.
    this.abort.abort(new CancelledError("cancelled through the API"));
  }

  /** The server stops following a run a worker runs: it goes on there. */
  leave(): void {
    this.stopFollowing.abort();
  }

  get leaving(): AbortSignal {
    return this.stopFollowing.signal;
  }

  options(): Pick<CommonRunOptions, "control" | "signal"> {
    return { control: this.control, signal: this.abort.signal };
  }

  publish(part: StreamPart): void {
    this.parts.push(part);
    for (const wake of this.listeners) wake();
  }

  end(status: ServedRunStatus): void {
    this.status = status;
    this.updatedAt = new Date().toISOString();
    this.ended = true;
    for (const wake of this.listeners) wake();
    this.markDone();
  }

  /** Everything the run streamed, from its start, then what it streams until it ends (`signal`: the reader left). */
  async *stream(signal?: AbortSignal): AsyncGenerator<StreamPart> {
    let next = 0;
    for (;;) {
      while (next < this.parts.length) yield this.parts[next++]!;
      if (this.ended || signal?.aborted) return;
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.listeners.delete(wake);
          signal?.removeEventListener("abort", wake);
          resolve();
        };
        this.listeners.add(wake);
        signal?.addEventListener("abort", wake, { once: true });
      });
    }
  }

  json(): Record<string, unknown> {
    return {
      run_id: this.runId,
      thread_id: this.threadId,
      assistant_id: this.assistantId,
      created_at: this.createdAt,
      updated_at: this.updatedAt,
      status: this.status,
      metadata: this.metadata,
      multitask_strategy: "reject",
      kwargs: { stream_mode: [...this.modes] },
    };
  }
}

/** How a loopgraph run's outcome reads as a LangGraph run's status: only a finished run is `success`. */
function statusOf(outcome: Ended): ServedRunStatus {
  if (outcome.status === "finished") return "success";
  return outcome.status === "paused" || outcome.status === "interrupted" ? "interrupted" : "error";
}

/** The stream modes asked for (`values` when none); a mode loopgraph does not give is refused by name. */
export function streamModes(body: Record<string, unknown>): Set<StreamMode> {
  const asked = body.stream_mode === undefined || body.stream_mode === null ? [] : [body.stream_mode].flat();
  const modes = new Set<StreamMode>();
  for (const mode of asked) {
    if (!(STREAM_MODES as readonly unknown[]).includes(mode))
      throw new HttpError(501, `stream mode ${JSON.stringify(mode)} is not supported by loopgraph serve: use ${STREAM_MODES.join(", ")}`);
    modes.add(mode as StreamMode);
  }
  if (modes.size === 0) modes.add("values");
  return modes;
}

/** Options LangGraph's runs take that loopgraph does not: refused by name when set, so nothing is silently ignored. */
const UNSUPPORTED_RUN_FIELDS = ["interrupt_before", "interrupt_after", "webhook", "after_seconds", "feedback_keys", "context"] as const;

/** How strict each approval mode is: a client may ask for one at least as strict as the user's. */
const STRICTNESS: readonly ApprovalMode[] = ["auto", "auto-edit", "ask", "deny"];

/**
 * Checks a run request against the thread as it stands and returns how to start it; every
 * refusal is an HTTP error before anything runs.
 */
export async function planRun(request: RunRequest, listing: GraphListing, place: RunPlace): Promise<PlannedRun> {
  const { body, threadId } = request;
  for (const field of UNSUPPORTED_RUN_FIELDS) {
    const value = body[field];
    if (value !== undefined && value !== null && !(Array.isArray(value) && value.length === 0) && !isEmptyObject(value))
      throw new HttpError(501, `${field} is not supported by loopgraph serve (see docs/serve.md)`);
  }
  const approval = approvalAsked(body, place.settings);
  // Checked now, as `loopgraph run <name>` here would pick it (an untrusted project graph is not run): a refusal is the answer.
  runnableGraphFile(listing, place.cwd, place.settings.env);
  const record = await withTables(place.store, "read", (tables) => tables.threads.get(threadId));
  if (record?.status === "queued") throw new HttpError(409, `thread "${threadId}" waits in the queue for a worker: wait for its run`);
  // One owner per thread: a run elsewhere (a terminal, a worker) is not joined by a second one.
  if (record && isRunningElsewhere(record)) throw new HttpError(409, `${runningMessage(record)}, or wait for it`);
  if (record && record.graphName !== listing.name)
    throw new HttpError(409, `thread "${threadId}" runs graph "${record.graphName}", not assistant "${listing.name}"`);
  const command = body.command as { resume?: unknown } | undefined | null;
  const from = checkpointOf(body);
  const task = taskOf(body.input);
  const common = (options: CommonRunOptions) => ({ ...options, ...(approval && { approval }) });

  if (command?.resume !== undefined) {
    if (!record) throw new HttpError(404, `no thread "${threadId}" to resume: it has not run yet`);
    const waiting = await withTables(place.store, "read", (tables) => waitingRecord(tables, record));
    const { answer, call } = answerOf(command.resume, waiting);
    return here((options) => resumeRun({ ...common(options), threadId, answer, ...(call !== undefined && { call }) }));
  }
  if (command !== undefined && command !== null && Object.keys(command).length > 0)
    throw new HttpError(501, "a command other than {resume} (goto, update) is not supported by loopgraph serve: fork with updateState");
  if (!record) {
    if (from !== undefined) throw new HttpError(404, `no thread "${threadId}" to run from checkpoint ${from}`);
    const model = place.model !== undefined ? { model: place.model } : {};
    if (place.queue) {
      const queued = { graph: listing.name, threadId, task: task ?? "", ...model, ...(approval && { approval }) };
      return { start: (options, follow, leaving) => queuedRun(place, queued, { cancel: options.signal, leaving }, follow), queued: true };
    }
    // By name, as the CLI runs it: the trust rules pick the file, and the run says what it did not use.
    return here((options) => runGraph({ ...common(options), graph: listing.name, threadId, task: task ?? "", ...model }));
  }
  if (task !== undefined)
    throw new HttpError(
      409,
      `thread "${threadId}" already has its task: start a new thread for a new task, or run with no input to continue it`,
    );
  if (from !== undefined) return here((options) => forkRun({ ...common(options), threadId, from }));
  return here((options) => resumeRun({ ...common(options), threadId }));
}

/** A run this server runs itself. */
const here = (start: RunStarter): PlannedRun => ({ start, queued: false });

const isEmptyObject = (value: unknown): boolean =>
  value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 0;

/** `config.configurable.approval`: a mode at least as strict as the user's setting. */
function approvalAsked(body: Record<string, unknown>, settings: Settings): ApprovalMode | undefined {
  const configurable = (body.config as { configurable?: Record<string, unknown> } | undefined)?.configurable;
  const asked = configurable?.approval;
  if (asked === undefined) return undefined;
  if (!(APPROVAL_MODES as readonly unknown[]).includes(asked))
    throw new HttpError(422, `configurable.approval must be one of ${APPROVAL_MODES.join(", ")}`);
  const users = approvalFromEnvironment(settings.env) ?? "ask";
  if (STRICTNESS.indexOf(asked as ApprovalMode) < STRICTNESS.indexOf(users))
    throw new HttpError(403, `approval "${asked}" is looser than this user's "${users}": an API client may only ask for a stricter mode`);
  return asked as ApprovalMode;
}

/** `checkpoint_id` (or `checkpoint.checkpoint_id`): run from that checkpoint, as a fork. */
function checkpointOf(body: Record<string, unknown>): string | undefined {
  const id = body.checkpoint_id ?? (body.checkpoint as { checkpoint_id?: unknown } | undefined)?.checkpoint_id;
  if (id === undefined || id === null) return undefined;
  if (typeof id !== "string" || id === "") throw new HttpError(422, "checkpoint_id must be a checkpoint's id");
  return id;
}

/**
 * A run's task from its input: `{task}`, or the text of the last human message of `{messages}`
 * (what a chat client such as `useStream` sends). No input: undefined.
 */
export function taskOf(input: unknown): string | undefined {
  if (input === undefined || input === null) return undefined;
  if (typeof input !== "object" || Array.isArray(input)) throw new HttpError(422, "input must be an object: {task} or {messages}");
  const { task, messages, ...rest } = input as Record<string, unknown>;
  if (Object.keys(rest).length > 0)
    throw new HttpError(422, `input takes task or messages, not ${Object.keys(rest).join(", ")}: a loopgraph run starts from its task`);
  if (typeof task === "string") return task;
  if (task !== undefined) throw new HttpError(422, "input.task must be text");
  if (messages === undefined) return undefined;
  const human = [messages]
    .flat()
    .filter((message): message is Record<string, unknown> => message !== null && typeof message === "object")
    .filter((message) => message.type === "human" || message.role === "user" || message.role === "human")
    .at(-1);
  const text = human ? contentText(human.content) : undefined;
  if (text === undefined) throw new HttpError(422, "input.messages holds no human message with text: the run's task is its text");
  return text;
}

function contentText(content: unknown): string | undefined {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  const texts = content.flatMap((part) => (part && typeof part === "object" && typeof part.text === "string" ? [part.text as string] : []));
  return texts.length > 0 ? texts.join("") : undefined;
}

/**
 * `command.resume` as the answer `loopgraph resume` gives: `"approve"`, `"reject"`, or
 * `{decision: "approve" | "reject", reason?, args?, set?}`; for a question that is not an
 * approval, its text. With several questions pending, `{<interrupt id>: answer}` names the one.
 * `always` is not taken from a client: it widens what the thread allows, which only the user decides.
 */
export function answerOf(resume: unknown, record: ThreadRecord): { answer: ApprovalAnswer | string; call?: string } {
  const interrupts = interruptsOf(record);
  if (interrupts.length === 0) throw new HttpError(409, `thread "${record.threadId}" is not waiting for an answer (${record.status})`);
  let value = resume;
  let call: string | undefined;
  const ids = new Set(interrupts.map((interrupt) => interrupt.id));
  if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).every((key) => ids.has(key))) {
    const keys = Object.keys(value);
    if (keys.length !== 1) throw new HttpError(422, "answer one question a run: {<interrupt id>: answer}");
    call = keys[0]!;
    value = (value as Record<string, unknown>)[call];
  }
  const question = interrupts.find((interrupt) => interrupt.id === call)?.value ?? interrupts[0]!.value;
  if ((question as { kind?: unknown } | undefined)?.kind !== "approval") {
    if (typeof value !== "string") throw new HttpError(422, "answer this question with text");
    return { answer: value, ...(call !== undefined && { call }) };
  }
  return { answer: approvalAnswer(value), ...(call !== undefined && { call }) };
}

function approvalAnswer(value: unknown): ApprovalAnswer {
  if (value === "approve" || value === "reject") return { decision: value };
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new HttpError(422, 'answer an approval with "approve", "reject" or {decision, reason?, args?, set?}');
  const { decision, reason, args, set } = value as Record<string, unknown>;
  if (decision === "always")
    throw new HttpError(
      403,
      '"always" widens what the thread allows and is not taken through the API: approve this call, or add a policy rule',
    );
  if (decision !== "approve" && decision !== "reject") throw new HttpError(422, 'decision must be "approve" or "reject"');
  if (reason !== undefined && typeof reason !== "string") throw new HttpError(422, "reason must be text");
  if (args !== undefined && (args === null || typeof args !== "object" || Array.isArray(args)))
    throw new HttpError(422, "args must be the call's arguments as one object");
  if (set !== undefined && !isArgumentChanges(set)) throw new HttpError(422, "set must be a list of {path, value}");
  if (decision === "reject" && (args !== undefined || set !== undefined))
    throw new HttpError(422, "args and set change the call you approve: use them with approve");
  return {
    decision,
    ...(typeof reason === "string" && { reason }),
    ...(args !== undefined && { args: args as Record<string, unknown> }),
    ...(set !== undefined && { set }),
  };
}

function isArgumentChanges(value: unknown): value is { path: string; value: unknown }[] {
  return (
    Array.isArray(value) &&
    value.every(
      (item) => item && typeof item === "object" && typeof item.path === "string" && /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(item.path),
    )
  );
}

/** How often a queued run's thread is looked at while a worker runs it. */
const QUEUED_LOOK_MS = 500;

/**
 * A new thread's run queued for the workers (`run --queue`), followed here through the store
 * until it ends: its checkpoints stream as a worker writes them. Cancelled (`signal`), it is
 * stopped wherever it is (see stopQueuedRun) and waited for.
 */
async function queuedRun(
  place: RunPlace,
  spec: { graph: string; threadId: string; task: string; model?: string; approval?: ApprovalMode },
  signals: { cancel: AbortSignal | undefined; leaving: AbortSignal },
  follow: () => Promise<void>,
): Promise<Ended> {
  await enqueueRun({ ...spec, settings: place.settings, cwd: place.cwd, ...dbOf(place.store) });
  let stopping = false;
  for (;;) {
    await follow();
    const record = await withTables(place.store, "read", (tables) => tables.threads.get(spec.threadId));
    if (record && record.status !== "queued" && record.status !== "running")
      return { status: record.status, ...(record.error !== undefined && { error: record.error }) };
    if (signals.leaving.aborted) return { status: "interrupted", error: "the server stopped following it: it goes on on its worker" };
    if (signals.cancel?.aborted && !stopping) {
      stopping = true;
      await stopQueuedRun(spec.threadId, place.store, "cancelled through the API before a worker took it");
    }
    await new Promise((resolve) => setTimeout(resolve, QUEUED_LOOK_MS));
  }
}

/**
 * Runs it: streams its events and the checkpoints it writes, and records how it ended. A failure
 * of the run is its `error` part and status, never an exception out of here.
 */
export async function executeRun(run: ServedRun, { start }: PlannedRun, place: RunPlace): Promise<void> {
  const publish = (part: StreamPart) => {
    if (part.event !== "values" && part.event !== "updates") return run.publish(part);
    if (run.modes.has(part.event)) run.publish(part);
  };
  run.publish({ event: "metadata", data: { run_id: run.runId, attempt: 1 } });
  const follower = new CheckpointFollower(run.threadId, place.store, publish);
  const translator = new EventTranslator(run.runId, run.modes, publish);
  const onEvent = (event: RunEvent) => {
    translator.translate(event);
    // A step's start finds the state it starts from (the first: the run's input), its end what it wrote.
    if ((event.type === "node_started" || event.type === "node_finished") && event.threadId === run.threadId) void follower.look();
  };
  try {
    await follower.start();
    run.status = "running";
    const outcome = await start(
      { settings: place.settings, cwd: place.cwd, ...dbOf(place.store), onEvent, ...run.options() },
      () => follower.look(),
      run.leaving,
    );
    await follower.look();
    // A chat's run that ends paused waits on its loop's question: that is the interrupt.
    const record = await withTables(place.store, "read", async (tables) => {
      const own = await tables.threads.get(run.threadId);
      return own && waitingRecord(tables, own);
    });
    const pause = record ? interruptParts(record, follower.values, run.modes) : [];
    for (const part of pause) run.publish(part);
    run.result = pause.length > 0 && record ? { ...follower.values, __interrupt__: interruptsOf(record) } : follower.values;
    if (outcome.status === "failed" || outcome.status === "limited") fail(run, outcome.status, outcome.error ?? outcome.status);
    run.end(statusOf(outcome));
  } catch (error) {
    fail(run, error instanceof Error ? error.name : "Error", error instanceof Error ? error.message.split("\n")[0]! : String(error));
    run.end("error");
  }
}

function fail(run: ServedRun, kind: string, message: string): void {
  const error = { error: kind, message };
  run.result = { ...run.result, __error__: error };
  run.publish({ event: "error", data: error });
}

const dbOf = (store: StoreOptions): { db?: string } => (store.db !== undefined ? { db: store.db } : {});
