/**
 * The data of `loopgraph eval`: a suite of tasks (suite.ts reads its file), the variants it runs
 * them with, the trials (task × variant × repetition, each a thread of its own) and what each
 * trial came to. The store keeps evals and trials (store/…/evals.ts); report.ts turns them into
 * the report.
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
  repeat: number;
  concurrency: number;
  /** `running` while its process works on it; `stopped` after Ctrl-C or a crash seen by `--resume`; `finished` with every trial done. */
  status: "running" | "stopped" | "finished";
  createdAt: string;
  updatedAt: string;
}
