/**
 * Runs an eval's trials: each task of a suite × each variant × each repetition is a thread of its
 * own, run in a fresh workspace (the task's folder copied, or its repository cloned), then
 * checked there. Trials run in this process, `concurrency` at a time (or, for an eval started
 * with `queue`, on the PostgreSQL store's workers, `concurrency` queued at a time: queue.ts); every
 * trial and its thread are stored before any runs, and each result as soon as it is known, so a
 * stopped eval (Ctrl-C, a crash, `kill -9`) continues with `resumeEval` without running a finished
 * trial again: a trial whose thread was cut off mid-run resumes it from its last checkpoint.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { ConfigError } from "../errors.js";
import { requireEval, withTables, type StoreOptions } from "../store/store.js";
import { namesResultBranch } from "../engine/repo-workspace.js";
import { requireQueueStore, runGraph, resumeRun } from "../engine/runner.js";
import type { RunOutcome } from "../engine/run-types.js";
import type { StoredTrial } from "../runs/evals.js";
import { asSeen } from "../runs/thread-registry.js";
import { queuedTrial } from "./queue.js";
import {
  deadline,
  endedOutcome,
  freshWorkspace,
  judgeRun,
  missingPrograms,
  trialResult,
  startJob,
  type EvalRunOptions,
  type TrialJob,
} from "./trial.js";
import type { EvalRecord, EvalSuite, EvalTask, EvalVariant, TrialKey, TrialResult } from "./types.js";

export type { EvalRunOptions } from "./trial.js";

export interface NewEval {
  suite: EvalSuite;
  variants: EvalVariant[];
  repeat: number;
  concurrency: number;
  /** `--queue`: the trials are queued for the PostgreSQL store's workers (queue.ts), not run here. */
  queue?: boolean;
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
    ...(plan.queue && { queue: true as const }),
    createdAt: now,
    updatedAt: now,
  };
  if (plan.queue) await checkQueueable(plan.suite.tasks, options.store);
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
    const found = await requireEval(tables, evalId);
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

/**
 * Refuses an eval that cannot be queued (`--queue`), before anything is recorded: a store other
 * than PostgreSQL, a task whose id cannot be part of the branch a trial's result is pushed to.
 */
export async function checkQueueable(tasks: readonly EvalTask[], store: StoreOptions): Promise<void> {
  requireQueueStore(store);
  for (const task of tasks) {
    if (!(await namesResultBranch(trialThreadId("e-00000000", { task: task.id, variant: "A", repetition: 1 })))) {
      throw new ConfigError(
        `task "${task.id}": a queued trial's result is pushed to the branch loopgraph/<its thread>, which this id cannot be part of (no "..", no "." or ".lock" at its end): rename the task`,
      );
    }
  }
}

/** A trial's thread: the eval's id, the variant and repetition, the task. */
export function trialThreadId(evalId: string, key: TrialKey): string {
  return `${evalId}-${key.variant}${key.repetition}-${key.task}`;
}

async function runTrials(record: EvalRecord, suite: EvalSuite, options: EvalRunOptions): Promise<EvalRun> {
  const stored = await withTables(options.store, "read", (tables) => tables.evals.trials(record.id));
  const pending = stored.filter((trial) => !trial.result);
  let done = stored.length - pending.length;
  const next = () => pending.shift();
  const worker = async (): Promise<void> => {
    for (let trial = next(); trial && !options.signal.aborted; trial = next()) {
      const result = await runTrial(record, suite, trial, options);
      if (!result) continue;
      await withTables(options.store, "write", (tables) => tables.evals.finishTrial(record.id, result));
      trial.result = result;
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
  return { record: { ...record, status }, trials: stored };
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
  const plan = { evalId: record.id, trial, task, variant, options };
  const missing = missingPrograms(task, options.settings.env);
  if (missing.length > 0) {
    const job = startJob(plan, Date.now(), new AbortController().signal);
    return trialResult(job, "skipped", { reason: `needs ${missing.join(", ")}, not found on PATH` });
  }
  if (record.queue) return queuedTrial(plan);

  const timeout = deadline(Date.now() + task.timeoutMs);
  const job = startJob(plan, Date.now(), timeout.signal);
  try {
    const workspace = join(options.workRoot, record.id, trial.threadId);
    const outcome = await runOrResume(job, workspace);
    if (options.signal.aborted) return undefined;
    return await judgeRun(job, outcome, workspace);
  } finally {
    timeout.clear();
  }
}

/** The trial's run: started in a fresh workspace, or (an eval resumed) its thread's outcome, resumed first when it was cut off. */
async function runOrResume({ trial, task, variant, options, signal }: TrialJob, workspace: string): Promise<RunOutcome> {
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
  if (seen.status === "finished" || seen.status === "failed" || seen.status === "limited")
    return endedOutcome(options, { ...seen, status: seen.status });
  return resumeRun({ ...common, threadId: trial.threadId });
}
