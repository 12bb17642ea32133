/** The Looper's lifecycle, shared by the machine, the looper node and `status`. */

export type LooperSubState = "WAITING_CODER" | "WAITING_REVIEW" | "JUDGE";

/** `IDLE`, or `{ RUNNING: <sub-state> }`: XState's state value of the lifecycle machine. */
export type LooperStateValue = "IDLE" | { RUNNING: LooperSubState };

/**
 * The machine's context. It holds no task: the current round's task is the graph state's `task`
 * channel (the looper node writes it when a round begins), so a large task is stored once, not at
 * every step.
 */
export interface LooperContext {
  /** Current round, from 1; 0 before the first start. */
  round: number;
  maxRounds: number;
  /** Queued tasks, drained in one go at JUDGE. */
  pending: string[];
  shouldStop: boolean;
  /** Why the last loop ended: "stopped by user", "round limit", or the Judge's reason. */
  endReason?: string;
}

/** What the graph state stores: plain JSON, restored into the machine with `resolveState`. */
export interface LooperSnapshot {
  value: LooperStateValue;
  context: LooperContext;
  /** Best-of-N rounds: each attempt of the current (or last) round, as far as it got. */
  attempts?: AttemptState[];
}

/** One attempt of a best-of-N round, for `status`. */
export interface AttemptState {
  /** From 1. */
  attempt: number;
  coder: "working" | "succeeded" | "failed";
  review?: ReviewResult["rating"];
  /** The review's check command, when it has one. */
  check?: "passed" | "failed";
  /** The Judge picked it (and the Looper applied it). */
  picked?: true;
}

/** Commands from the user (any terminal) or the Mediator. */
export type LooperCommand =
  | { command: "start"; task: string }
  | { command: "stop" }
  | { command: "status" }
  | { command: "add_pending"; task: string };

/** Outcomes the looper node feeds into the machine after each phase. */
export type LooperEvent =
  | { type: "START"; task: string; maxRounds: number }
  | { type: "ADD_PENDING"; task: string; maxRounds: number }
  | { type: "STOP" }
  | { type: "STATUS" }
  | { type: "CODER_DONE"; ok: boolean }
  | { type: "REVIEW_DONE" }
  | { type: "JUDGE_CONTINUE"; nextTask: string; consumedPending: number }
  | { type: "JUDGE_TERMINATE"; reason: string; consumedPending: number };

/** The Review node's result, written to `outputs.<review node>`. */
export interface ReviewResult {
  rating: "normal" | "warning" | "critical";
  comments: string[];
  /** The three checks every review runs, and the node's `check` command when it has one. */
  checks: Record<"specs_breakdown" | "task_log" | "git_diff", ReviewCheckResult> & { command?: CommandCheckResult };
}

/** The review's check command: run in the reviewed folder; it passed when it exited 0. */
export interface CommandCheckResult extends ReviewCheckResult {
  command: string;
  passed: boolean;
  /** Null when it did not exit by itself (a timeout) or did not run (`error` says why). */
  exitCode: number | null;
}

export interface ReviewCheckResult {
  ok: boolean;
  rating?: ReviewResult["rating"];
  comments: string[];
  /** Why the check itself failed (it did not sink the others). */
  error?: string;
}

/** The Judge node's result, written to `outputs.<judge node>`. */
export type JudgeResult = (
  | { decision: "continue"; nextTask: string }
  | { decision: "terminate"; reason: string }
  /** Over the attempts of a mapped coder: the one to apply (`attempt` from 1, `index` its instance's from 0). */
  | { decision: "pick"; attempt: number; index: number; branch?: string; reason: string }
) & {
  /** How many pending messages (from the front of the queue) the decision took in. */
  consumedPending: number;
  /** "model": valid model output; "rule": a guard overrode the model; "fallback": invalid output twice. */
  source: "model" | "rule" | "fallback";
  /** What happened on the way (repair retry, fallback, guard), for the message log. */
  notes: string[];
};
