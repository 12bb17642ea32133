/**
 * Runs an eval's trials: each task of a suite × each variant × each repetition is a thread of its
 * own, run in a fresh workspace (the task's folder copied, or its repository cloned), then
 * checked there. Trials run in this process, `concurrency` at a time; every trial and its thread
 * are stored before any runs, and each result as soon as it is known, so a stopped eval (Ctrl-C,
 * a crash, `kill -9`) continues with `resumeEval` without running a finished trial again: a trial
 * whose thread was cut off mid-run resumes it from its last checkpoint.
 */
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { CancelledError, ConfigError } from "../errors.js";
import { latestValues, withStore, withTables, type StoreOptions } from "../store/store.js";
import { runGraph, resumeRun } from "../engine/runner.js";
import type { RunOutcome } from "../engine/run-types.js";
import type { Settings } from "../config/environment-settings.js";
import { git, LOOPGRAPH_IDENTITY } from "../git/run.js";
import type { GraphStateValue } from "../state/graph-state.js";
import { totalUsage, type TokenUsage } from "../state/usage.js";
import type { StoredTrial } from "../runs/evals.js";
import { asSeen } from "../runs/thread-registry.js";
import { checkTrial } from "./check.js";
import type { EvalRecord, EvalSuite, EvalTask, EvalVariant, TrialKey, TrialOutcome, TrialResult } from "./types.js";

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

export interface NewEval {
  suite: EvalSuite;
  variants: EvalVariant[];
  repeat: number;
  concurrency: number;
}

export interface EvalRun {
  record: EvalRecord;
  trials: StoredTrial[];
}

/** Records a new eval with all its trials, then runs them. */
export async function startEval(plan: NewEval, options: EvalRunOptions): Promise<EvalRun> {
  const now = new Date().toISOString();
  const record: EvalRecord = {
    id: `e-${randomBytes(4).toString("hex")}`,
    suiteFile: plan.suite.file,
    suiteName: plan.suite.name,
    suiteHash: plan.suite.hash,
    variants: plan.variants,
    tasks: plan.suite.tasks.map((task) => ({ id: task.id, tags: task.tags })),
    repeat: plan.repeat,
    concurrency: plan.concurrency,
    status: "running",
    createdAt: now,
    updatedAt: now,
  };
  const trials = plan.suite.tasks.flatMap((task) =>
    plan.variants.flatMap((variant) =>
      Array.from({ length: plan.repeat }, (_, i) => {
        const key = { task: task.id, variant: variant.label, repetition: i + 1 };
        return { ...key, threadId: trialThreadId(record.id, key) };
      }),
    ),
  );
  await withTables(options.store, "create", (tables) => tables.evals.create(record, trials));
  return runTrials(record, plan.suite, options);
}

/** Continues a stopped eval: its trials without a result run (or resume), the others are kept. */
export async function resumeEval(evalId: string, suite: EvalSuite, options: EvalRunOptions): Promise<EvalRun> {
  const record = await withTables(options.store, "write", async (tables) => {
    const found = await tables.evals.get(evalId);
    if (!found) throw new ConfigError(`no eval "${evalId}" in ${tables.path}: see loopgraph eval --list`);
    if (found.suiteHash !== suite.hash) {
      throw new ConfigError(
        `the suite ${found.suiteFile} (or a task folder it names) changed since eval ${evalId} started: its trials would not be comparable; start a new eval`,
      );
    }
    await tables.evals.setStatus(evalId, "running");
    return found;
  });
  return runTrials(record, suite, options);
}

/** A trial's thread: the eval's id, the variant and repetition, the task. */
export function trialThreadId(evalId: string, key: TrialKey): string {
  return `${evalId}-${key.variant}${key.repetition}-${key.task}`;
}

async function runTrials(record: EvalRecord, suite: EvalSuite, options: EvalRunOptions): Promise<EvalRun> {
  const stored = await withTables(options.store, "read", (tables) => tables.evals.trials(record.id));
  const pending = stored.filter((trial) => !trial.result);
  let done = stored.length - pending.length;
  const results = new Map<string, TrialResult>();
  const next = () => pending.shift();
  const worker = async (): Promise<void> => {
    for (let trial = next(); trial && !options.signal.aborted; trial = next()) {
      const result = await runTrial(record, suite, trial, options);
      if (!result) continue;
      await withTables(options.store, "write", (tables) => tables.evals.finishTrial(record.id, result));
      results.set(trial.threadId, result);
      done += 1;
      options.onTrial?.(result, done, stored.length);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(record.concurrency, pending.length)) }, worker));
  } catch (error) {
    // A trial that cannot start at all (a model without its key, a graph that no longer loads)
    // stops the eval, resumable once that is mended.
    await withTables(options.store, "write", (tables) => tables.evals.setStatus(record.id, "stopped"));
    throw error;
  }
  const status = done === stored.length ? "finished" : "stopped";
  await withTables(options.store, "write", (tables) => tables.evals.setStatus(record.id, status));
  const trials = stored.map((trial) => {
    const result = results.get(trial.threadId) ?? trial.result;
    return result ? { ...trial, result } : trial;
  });
  return { record: { ...record, status }, trials };
}

/** One trial: its result, or undefined when the eval was stopped before it had one. */
async function runTrial(
  record: EvalRecord,
  suite: EvalSuite,
  trial: StoredTrial,
  options: EvalRunOptions,
): Promise<TrialResult | undefined> {
  const task = suite.tasks.find((candidate) => candidate.id === trial.task);
  const variant = record.variants.find((candidate) => candidate.label === trial.variant);
  if (!task || !variant)
    throw new ConfigError(`eval ${record.id}: trial ${trial.threadId} names a task or variant the suite no longer has`);
  const started = Date.now();
  const finish = (outcome: TrialOutcome, facts: Partial<TrialResult> = {}): TrialResult => ({
    task: trial.task,
    variant: trial.variant,
    repetition: trial.repetition,
    threadId: trial.threadId,
    outcome,
    rounds: 0,
    tokens: { inputTokens: 0, outputTokens: 0 },
    wallMs: Date.now() - started,
    finishedAt: new Date().toISOString(),
    ...facts,
  });
  const missing = task.requires.filter((program) => !onPath(program, options.settings.env));
  if (missing.length > 0) return finish("skipped", { reason: `needs ${missing.join(", ")}, not found on PATH` });

  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new CancelledError(`the trial took longer than its timeout`)), task.timeoutMs);
  const signal = AbortSignal.any([options.signal, timeout.signal]);
  try {
    const workspace = join(options.workRoot, record.id, trial.threadId);
    const outcome = await runOrResume(trial, task, variant, workspace, signal, options);
    if (options.signal.aborted) return undefined;
    const facts = { rounds: roundsOf(outcome.state), tokens: tokensOf(outcome.state) };
    if (timeout.signal.aborted) return finish("timeout", { ...facts, reason: `longer than ${Math.round(task.timeoutMs / 1000)} s` });
    if (outcome.status !== "finished")
      return finish(outcome.status === "limited" ? "limit" : "run-failed", { ...facts, reason: whyNot(outcome) });
    const check = await checkTrial(task.check, {
      workspace,
      env: options.settings.env,
      noSandbox: options.noSandbox,
      answer: finalAnswer(outcome.state),
      timeoutMs: Math.max(1, task.timeoutMs - (Date.now() - started)),
      signal,
    });
    if (options.signal.aborted) return undefined;
    if (timeout.signal.aborted) return finish("timeout", { ...facts, reason: `longer than ${Math.round(task.timeoutMs / 1000)} s` });
    return finish(check.passed ? "passed" : "check-failed", {
      ...facts,
      ...(check.reason && { reason: check.reason }),
      ...(check.output && { checkOutput: check.output }),
    });
  } finally {
    clearTimeout(timer);
  }
}

/** The trial's run: started in a fresh workspace, or (an eval resumed) its thread's outcome, resumed first when it was cut off. */
async function runOrResume(
  trial: StoredTrial,
  task: EvalTask,
  variant: EvalVariant,
  workspace: string,
  signal: AbortSignal,
  options: EvalRunOptions,
): Promise<RunOutcome> {
  const common = {
    db: options.store.db,
    cwd: options.store.cwd,
    settings: options.settings,
    approval: "auto" as const,
    noSandbox: options.noSandbox,
    signal,
    ...(variant.model !== undefined && { model: variant.model }),
  };
  const thread = await withTables(options.store, "read", (tables) => tables.threads.get(trial.threadId));
  if (!thread) {
    await freshWorkspace(task, workspace);
    return runGraph({ ...common, graph: variant.graphFile, task: task.task, threadId: trial.threadId, workspace });
  }
  const seen = asSeen(thread);
  if (seen.status === "finished" || seen.status === "failed" || seen.status === "limited") {
    const state = (await withStore(options.store, "read", (store) => latestValues(store, trial.threadId))) as GraphStateValue;
    return { threadId: trial.threadId, status: seen.status, exitCode: 0, state, ...(seen.error && { error: seen.error }) };
  }
  return resumeRun({ ...common, threadId: trial.threadId });
}

/** The task's starting point in `workspace`, made anew: its folder copied and committed, or its repository cloned at its ref. */
async function freshWorkspace(task: EvalTask, workspace: string): Promise<void> {
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

function onPath(program: string, env: NodeJS.ProcessEnv): boolean {
  return (env.PATH ?? "").split(":").some((dir) => dir !== "" && existsSync(join(dir, program)));
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
  const messages = (state?.messages ?? []) as { content?: unknown }[];
  const content = messages.at(-1)?.content;
  if (typeof content === "string") return content;
  return Array.isArray(content) ? content.map((part) => (part as { text?: string }).text ?? "").join("") : "";
}

function whyNot(outcome: RunOutcome): string {
  if (outcome.status === "paused") {
    return outcome.pause?.reason === "input"
      ? "paused for an approval nobody gives in an eval (a command with no sandbox to run in? install bubblewrap, or pass --no-sandbox)"
      : "paused at a breakpoint";
  }
  return outcome.error ?? outcome.status;
}
