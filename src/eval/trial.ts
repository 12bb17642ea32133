/**
 * What every trial does whichever way its run goes (in the eval's process, run.ts, or on the
 * workers, queue.ts): its task's starting point made in a fresh folder, its run's figures and
 * final answer read from its thread's state, and the run's outcome turned into the trial's result
 * by the task's check (check.ts).
 */
import { cpSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Settings } from "../config/environment-settings.js";
import { latestValues, withStore, type StoreOptions } from "../store/store.js";
import type { RunOutcome } from "../engine/run-types.js";
import { CancelledError } from "../errors.js";
import { messageText } from "../runtime/model-session.js";
import { git, LOOPGRAPH_IDENTITY } from "../git/run.js";
import type { GraphStateValue } from "../state/graph-state.js";
import type { RunStatus } from "../state/thread.js";
import { totalUsage, type TokenUsage } from "../state/usage.js";
import type { StoredTrial } from "../runs/evals.js";
import type { ThreadRecord } from "../runs/thread-registry.js";
import { checkTrial } from "./check.js";
import type { EvalTask, EvalVariant, TrialOutcome, TrialResult } from "./types.js";

export interface EvalRunOptions {
  store: StoreOptions;
  settings: Settings;
  /** `--no-sandbox`: the runs' commands and the checks run without the OS sandbox, by the user's choice. */
  noSandbox?: boolean;
  /** Where the trials' workspaces are made: one folder per eval, one per trial in it. */
  workRoot: string;
  /** Ctrl-C: the trials in flight stop at once (their threads resumable), and no other starts. */
  signal: AbortSignal;
  /** Told each trial's result as it is stored, with how many of the eval's trials have one. */
  onTrial?: (result: TrialResult, done: number, total: number) => void;
}

/** A trial to run: its eval, task and variant. */
export interface TrialPlan {
  evalId: string;
  trial: StoredTrial;
  task: EvalTask;
  variant: EvalVariant;
  options: EvalRunOptions;
}

/** A trial under way: what it runs, and when its time started. */
export interface TrialJob extends TrialPlan {
  /** When the trial's time began (its timeout counts from there), in ms since the epoch. */
  started: number;
  /** Aborted once the trial's timeout has passed. */
  timedOut: AbortSignal;
  /** Ctrl-C or the timeout. */
  signal: AbortSignal;
}

/**
 * A signal aborted at `at` (ms since the epoch), at once when that is past, as Ctrl-C aborts a
 * run (a CancelledError: the run stops at its last checkpoint, resumable).
 */
export function deadline(at: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const timeUp = () => controller.abort(new CancelledError("the trial took longer than its timeout"));
  const left = at - Date.now();
  if (left <= 0) timeUp();
  const timer = setTimeout(timeUp, Math.max(0, left));
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/** The trial under way since `started`: its timeout aborts `timedOut`. */
export function startJob(plan: TrialPlan, started: number, timedOut: AbortSignal): TrialJob {
  return { ...plan, started, timedOut, signal: AbortSignal.any([plan.options.signal, timedOut]) };
}

/** The trial's result: its outcome, with the facts known (none: no round, no token). */
export function trialResult(job: TrialJob, outcome: TrialOutcome, facts: Partial<TrialResult> = {}): TrialResult {
  return {
    task: job.trial.task,
    variant: job.trial.variant,
    repetition: job.trial.repetition,
    threadId: job.trial.threadId,
    outcome,
    rounds: 0,
    tokens: { inputTokens: 0, outputTokens: 0 },
    wallMs: Date.now() - job.started,
    finishedAt: new Date().toISOString(),
    ...facts,
  };
}

/** The result of a trial whose time ran out. */
export function timedOutResult(job: TrialJob, facts: Partial<TrialResult> = {}): TrialResult {
  return trialResult(job, "timeout", { ...facts, reason: `longer than ${Math.round(job.task.timeoutMs / 1000)} s` });
}

/**
 * What a trial whose run ended came to: the run's outcome, then, for a finished run, the task's
 * check in `workspace`. `prepare` readies the workspace first and returns why it cannot be (a
 * `run-failed`). Undefined when the eval was stopped (Ctrl-C) meanwhile.
 */
export async function judgeRun(
  job: TrialJob,
  outcome: RunOutcome,
  workspace: string,
  prepare?: () => Promise<string | undefined>,
): Promise<TrialResult | undefined> {
  const facts = { rounds: roundsOf(outcome.state), tokens: tokensOf(outcome.state) };
  if (job.timedOut.aborted) return timedOutResult(job, facts);
  if (outcome.status !== "finished")
    return trialResult(job, outcome.status === "limited" ? "limit" : "run-failed", { ...facts, reason: whyNot(outcome) });
  const unprepared = await prepare?.();
  if (unprepared !== undefined) return trialResult(job, "run-failed", { ...facts, reason: unprepared });
  const check = await checkTrial(job.task.check, {
    workspace,
    env: job.options.settings.env,
    noSandbox: job.options.noSandbox,
    answer: finalAnswer(outcome.state),
    timeoutMs: Math.max(1, job.task.timeoutMs - (Date.now() - job.started)),
    signal: job.signal,
  });
  if (job.options.signal.aborted) return undefined;
  if (job.timedOut.aborted) return timedOutResult(job, facts);
  return trialResult(job, check.passed ? "passed" : "check-failed", {
    ...facts,
    ...(check.reason && { reason: check.reason }),
    ...(check.output && { checkOutput: check.output }),
  });
}

/** The outcome of a thread whose run has ended, as its record and last state tell it. */
export async function endedOutcome(options: EvalRunOptions, record: ThreadRecord & { status: RunStatus }): Promise<RunOutcome> {
  const state = (await withStore(options.store, "read", (store) => latestValues(store, record.threadId))) as GraphStateValue;
  return {
    threadId: record.threadId,
    status: record.status,
    exitCode: 0,
    state,
    ...(record.error && { error: record.error }),
    ...(record.pause && { pause: record.pause as RunOutcome["pause"] }),
  };
}

/** The task's starting point in `workspace`, made anew: its folder copied and committed, or its repository cloned at its ref. */
export async function freshWorkspace(task: EvalTask, workspace: string): Promise<void> {
  rmSync(workspace, { recursive: true, force: true });
  mkdirSync(workspace, { recursive: true });
  if (task.repo.kind === "folder") {
    // The suite's loader refused links in task folders; copied as they are, never followed.
    cpSync(task.repo.path, workspace, { recursive: true, verbatimSymlinks: true, errorOnExist: true, force: false });
    await git(["init", "-q", "-b", "main"], { cwd: workspace });
    await git(["add", "-A"], { cwd: workspace });
    await git(["commit", "-q", "--allow-empty", "-m", `eval: the starting point of task ${task.id}`], {
      cwd: workspace,
      env: LOOPGRAPH_IDENTITY,
    });
    return;
  }
  await git(["clone", "-q", "--no-hardlinks", "--", task.repo.url, workspace], { cwd: join(workspace, "..") });
  if (task.repo.ref !== undefined) await git(["checkout", "-q", "--detach", task.repo.ref], { cwd: workspace });
}

/** The programs of the task's `requires` that are not on PATH. */
export function missingPrograms(task: EvalTask, env: NodeJS.ProcessEnv): string[] {
  const dirs = (env.PATH ?? "").split(":").filter((dir) => dir !== "");
  return task.requires.filter((program) => !dirs.some((dir) => existsSync(join(dir, program))));
}

function roundsOf(state: GraphStateValue | undefined): number {
  const round = (state?.loopState as { context?: { round?: unknown } } | undefined)?.context?.round;
  return typeof round === "number" ? round : 0;
}

function tokensOf(state: GraphStateValue | undefined): TokenUsage {
  const usage = state?.usage as Record<string, TokenUsage> | undefined;
  return usage ? totalUsage(usage) : { inputTokens: 0, outputTokens: 0 };
}

/** The run's final answer: the text of the last message of its history. */
function finalAnswer(state: GraphStateValue | undefined): string {
  const last = state?.messages?.at(-1);
  return last ? messageText(last) : "";
}

function whyNot(outcome: RunOutcome): string {
  if (outcome.status === "paused") {
    return outcome.pause?.reason === "input"
      ? "paused for an approval nobody gives in an eval (a command with no sandbox to run in? install bubblewrap, or pass --no-sandbox)"
      : "paused at a breakpoint";
  }
  return outcome.error ?? outcome.status;
}
