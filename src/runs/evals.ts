/**
 * The data of `loopgraph eval` the run store keeps: a suite's tasks (eval/suite.ts reads its
 * file), the variants they run with, the trials (task × variant × repetition, each a thread of
 * its own) and what each came to. eval/ builds on them; eval/types.ts re-exports them.
 */

/** Where a task's starting repository comes from. */
export type TaskRepo =
  /** A folder (absolute once loaded), copied fresh for every trial and made a git repository with one commit. */
  | { kind: "folder"; path: string }
  /** A git repository (a URL or a path), cloned for every trial at `ref` (default: its HEAD). */
  | { kind: "git"; url: string; ref?: string };

/** What a trial must show to pass, besides its run finishing. */
export interface TaskCheck {
  /** A shell command run in the finished workspace, in the sandbox: exit 0 passes. */
  command?: string;
  /** Files (workspace-relative) that must exist; a non-empty pattern must also match their text (a JavaScript regular expression). */
  files?: Record<string, string>;
  /** A JavaScript regular expression the run's final answer must match. */
  answer?: string;
}

export interface EvalTask {
  /** Unique in the suite: letters, digits, `-`, `_`, `.`. */
  id: string;
  repo: TaskRepo;
  /** The task text the graph is run with (`--task`). */
  task: string;
  check: TaskCheck;
  /** How long the trial (its run and its check) may take, in milliseconds. */
  timeoutMs: number;
  tags: string[];
  /** Programs the task's check needs (`python3`, say): without one on PATH, its trials are skipped, and the report says why. */
  requires: string[];
}

export interface EvalSuite {
  /** The suite file, absolute. */
  file: string;
  name: string;
  /** A hash of the suite file and every task folder it names: `eval --resume` refuses a suite changed since. */
  hash: string;
  tasks: EvalTask[];
}

/** One way of running the tasks: a graph with a model (undefined: the graph's own models). */
export interface EvalVariant {
  /** `A`, `B`, … in the order given. */
  label: string;
  /** The graph as given (a name or a path), and its file, absolute. */
  graph: string;
  graphFile: string;
  model?: string;
}

/** A variant in words: `A: coder-review with openai:gpt-4o` (its graph alone without a model). */
export function describeVariant(variant: EvalVariant): string {
  return `${variant.label}: ${variant.graph}${variant.model ? ` with ${variant.model}` : ""}`;
}

/** How a trial ended: passed, or why not. */
export type TrialOutcome =
  | "passed"
  /** The run finished, the check did not pass. */
  | "check-failed"
  /** The run failed (an error), or paused waiting for an answer nobody gives in an eval. */
  | "run-failed"
  /** A round limit, `max_visits` or a step limit ended the run before its work was judged done. */
  | "limit"
  /** The trial took longer than its task's timeout. */
  | "timeout"
  /** Not run: a program the task requires is missing. */
  | "skipped";

export const FAILURE_KINDS = ["check-failed", "run-failed", "limit", "timeout"] as const satisfies readonly TrialOutcome[];

export interface TrialKey {
  task: string;
  /** The variant's label. */
  variant: string;
  /** 1, 2, … up to `--repeat`. */
  repetition: number;
}

/** What a finished trial came to. */
export interface TrialResult extends TrialKey {
  threadId: string;
  outcome: TrialOutcome;
  /** One line: why it did not pass (the check's exit and last output line, the run's error, the missing program). */
  reason?: string;
  /** Loop rounds the run went through (0 for a graph without a loop). */
  rounds: number;
  tokens: { inputTokens: number; outputTokens: number };
  /** Wall time of the run and its check, in milliseconds. */
  wallMs: number;
  /** The check command's output, its last 4 KB. */
  checkOutput?: string;
  finishedAt: string;
}

export interface EvalRecord {
  /** `e-` and 8 hex digits. */
  id: string;
  suiteFile: string;
  suiteName: string;
  suiteHash: string;
  variants: EvalVariant[];
  /** The suite's tasks the eval runs, in its order, with their tags (the report groups by them). */
  tasks: { id: string; tags: string[] }[];
  repeat: number;
  concurrency: number;
  /** `running` while its process works on it; `stopped` after Ctrl-C or a crash seen by `--resume`; `finished` with every trial done. */
  status: "running" | "stopped" | "finished";
  /** `eval --queue`: the trials run on the PostgreSQL store's workers, their checks in the eval's process. */
  queue?: true;
  createdAt: string;
  updatedAt: string;
}

/** A trial as the store holds it: its thread from the start, its result once it has one. */
export interface StoredTrial extends TrialKey {
  threadId: string;
  result?: TrialResult;
}

/**
 * The evals of the run store and their trials (SQLite: store/sqlite/evals.ts; PostgreSQL:
 * store/postgres/evals.ts). Every trial is written, with its thread's id, before any runs, so
 * `eval --resume` finds each trial's thread whatever stopped the eval; a trial's result is
 * written once, when it has one.
 */
export interface EvalTable {
  create(record: EvalRecord, trials: readonly (TrialKey & { threadId: string })[]): Promise<void>;
  get(evalId: string): Promise<EvalRecord | undefined>;
  /** Every eval, newest first. */
  list(): Promise<EvalRecord[]>;
  setStatus(evalId: string, status: EvalRecord["status"]): Promise<void>;
  finishTrial(evalId: string, result: TrialResult): Promise<void>;
  /** The eval's trials, in the order they were planned. */
  trials(evalId: string): Promise<StoredTrial[]>;
  /** The eval a trial's thread belongs to. */
  evalOfThread(threadId: string): Promise<string | undefined>;
  /** Forgets the eval and its trials; the trials' threads are the caller's to delete. */
  delete(evalId: string): Promise<void>;
}

/** An eval's row (the same columns in both stores). */
export interface EvalRow {
  eval_id: string;
  suite_file: string;
  suite_name: string;
  suite_hash: string;
  variants: string;
  /** The tasks as JSON: their list, or for a queued eval `{ "tasks": [...], "queue": true }`. */
  tasks: string;
  repeat: number;
  concurrency: number;
  status: string;
  created_at: string;
  updated_at: string;
}

export interface TrialRow {
  eval_id: string;
  seq: number;
  task: string;
  variant: string;
  repetition: number;
  thread_id: string;
  result: string | null;
}

export function evalOfRow(row: EvalRow): EvalRecord {
  const tasks = JSON.parse(row.tasks) as EvalRecord["tasks"] | { tasks: EvalRecord["tasks"]; queue: true };
  return {
    id: row.eval_id,
    suiteFile: row.suite_file,
    suiteName: row.suite_name,
    suiteHash: row.suite_hash,
    variants: JSON.parse(row.variants) as EvalVariant[],
    tasks: Array.isArray(tasks) ? tasks : tasks.tasks,
    repeat: Number(row.repeat),
    concurrency: Number(row.concurrency),
    status: row.status as EvalRecord["status"],
    ...(!Array.isArray(tasks) && tasks.queue && { queue: true as const }),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** An eval's row values, in the columns' order of EvalRow. */
export function evalRowValues(record: EvalRecord): unknown[] {
  return [
    record.id,
    record.suiteFile,
    record.suiteName,
    record.suiteHash,
    JSON.stringify(record.variants),
    JSON.stringify(record.queue ? { tasks: record.tasks, queue: true } : record.tasks),
    record.repeat,
    record.concurrency,
    record.status,
    record.createdAt,
    record.updatedAt,
  ];
}

export function trialOfRow(row: TrialRow): StoredTrial {
  return {
    task: row.task,
    variant: row.variant,
    repetition: Number(row.repetition),
    threadId: row.thread_id,
    ...(row.result !== null ? { result: JSON.parse(row.result) as TrialResult } : {}),
  };
}
