import { isRunning, subStateOf } from "./machine.js";
import type { AttemptState, LooperSnapshot, LooperSubState } from "../../state/looper.js";
import { contextNote, leadOf } from "../judge/next-task.js";

export interface StatusOptions {
  /** The current (or last) round's task: the graph state's `task` channel; the snapshot keeps none. */
  task?: string;
  /**
   * `add_pending` tasks sent from other processes that the loop has not consumed yet. They
   * count as pending: the loop takes them in, in this order, at its next step.
   */
  queued?: string[];
  /** A stop command waits in the inbox, not consumed yet: a running loop shows as stopping. */
  stopping?: boolean;
}

/** `loopgraph status --json`. */
export interface LooperStatusJson {
  state: "IDLE" | "RUNNING";
  /** The current round's task; while idle, the last loop's. */
  task: string;
  round: number;
  maxRounds: number;
  subState: LooperSubState | null;
  /** The loop's pending queue, then the queued tasks. */
  pending: string[];
  /** A stop was accepted (queued or applied) and the loop, still running, has not ended yet. */
  shouldStop: boolean;
  endReason?: string;
  /** Best-of-N rounds: each attempt of the current (or last) round. */
  attempts?: AttemptState[];
}

/**
 * The status block, e.g. while running:
 *
 * ```
 * [Looper status]
 * state: RUNNING
 * task: optimise the landing page
 * round: 2/5
 * sub-state: WAITING_REVIEW
 * pending: 2 ("add login", "add sign-up")
 * ```
 *
 * With a stop accepted and not applied yet, the state line reads `state: RUNNING (stopping)`.
 * While idle: `state: IDLE`, then, once a loop has run, `last task: …` and
 * `last: ended after round 2/5: round limit`, then `pending: …`. Pending counts the queued tasks
 * too; one line per field (tasks are put on one line, pending tasks quoted as JSON strings).
 */
export function formatStatus(snapshot: LooperSnapshot, options: StatusOptions = {}): string {
  const { context } = snapshot;
  const task = options.task ?? "";
  const subState = subStateOf(snapshot);
  const lines = ["[Looper status]"];
  if (subState) {
    lines.push(
      isStopping(snapshot, options) ? "state: RUNNING (stopping)" : "state: RUNNING",
      `task: ${shownTask(task)}`,
      `round: ${context.round}/${context.maxRounds}`,
      `sub-state: ${subState}`,
    );
  } else {
    lines.push("state: IDLE");
    if (context.round > 0) {
      lines.push(
        `last task: ${shownTask(task)}`,
        `last: ended after round ${context.round}/${context.maxRounds}: ${context.endReason ?? "unknown reason"}`,
      );
    }
  }
  lines.push(`pending: ${describePending(allPending(snapshot, options))}`);
  for (const attempt of snapshot.attempts ?? []) lines.push(describeAttempt(attempt));
  return lines.join("\n");
}

export function statusJson(snapshot: LooperSnapshot, options: StatusOptions = {}): LooperStatusJson {
  const { context } = snapshot;
  return {
    state: isRunning(snapshot) ? "RUNNING" : "IDLE",
    task: options.task ?? "",
    round: context.round,
    maxRounds: context.maxRounds,
    subState: subStateOf(snapshot) ?? null,
    pending: allPending(snapshot, options),
    shouldStop: isStopping(snapshot, options),
    ...(context.endReason === undefined ? {} : { endReason: context.endReason }),
    ...(snapshot.attempts && { attempts: snapshot.attempts }),
  };
}

/** `attempt 2: succeeded · review normal · check passed · picked`. */
function describeAttempt(attempt: AttemptState): string {
  const parts = [
    attempt.coder,
    ...(attempt.review ? [`review ${attempt.review}`] : []),
    ...(attempt.check ? [`check ${attempt.check}`] : []),
    ...(attempt.picked ? ["picked"] : []),
  ];
  return `attempt ${attempt.attempt}: ${parts.join(" · ")}`;
}

function isStopping(snapshot: LooperSnapshot, options: StatusOptions): boolean {
  return isRunning(snapshot) && (snapshot.context.shouldStop || options.stopping === true);
}

function allPending(snapshot: LooperSnapshot, options: StatusOptions): string[] {
  return [...snapshot.context.pending, ...(options.queued ?? [])];
}

function describePending(pending: string[]): string {
  if (pending.length === 0) return "0";
  return `${pending.length} (${pending.map((task) => JSON.stringify(task)).join(", ")})`;
}

/** A task on one line: the context a Judge appended to it is named, not repeated. */
function shownTask(task: string): string {
  return `${oneLine(leadOf(task))}${contextNote(task)}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}
