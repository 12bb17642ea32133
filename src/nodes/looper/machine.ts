import { assign, initialTransition, setup, transition, type SnapshotFrom } from "xstate";
import { briefTask } from "../judge/next-task.js";
import type { LooperContext, LooperEvent, LooperSnapshot, LooperSubState } from "../../state/looper.js";

/** The round limit when neither the graph nor `--max-rounds` sets one. */
export const DEFAULT_MAX_ROUNDS = 5;

export const STOPPED_BY_USER = "stopped by user";
export const ROUND_LIMIT = "round limit";

export interface LooperInput {
  maxRounds?: number;
}

/**
 * The Looper's lifecycle: `IDLE → RUNNING{WAITING_CODER → WAITING_REVIEW → JUDGE} → IDLE`.
 * Events a state does not accept change nothing. A STOP only sets `shouldStop`; the eventless
 * transition on RUNNING then ends the loop in the same step, whatever the sub-state.
 */
export const looperMachine = setup({
  types: {
    context: {} as LooperContext,
    events: {} as LooperEvent,
    input: {} as LooperInput,
  },
  guards: {
    stopRequested: ({ context }) => context.shouldStop,
    roundLimitReached: ({ context }) => context.round >= context.maxRounds,
    coderSucceeded: ({ event }) => event.type === "CODER_DONE" && event.ok,
  },
  actions: {
    startLoop: assign((_, params: { maxRounds: number }) => ({
      round: 1,
      maxRounds: params.maxRounds,
      pending: [],
      shouldStop: false,
      endReason: undefined,
    })),
    queuePending: assign(({ context }, params: { task: string }) => ({ pending: [...context.pending, params.task] })),
    requestStop: assign({ shouldStop: true }),
    dropConsumedPending: assign(({ context }, params: { consumed: number }) => ({
      pending: params.consumed > 0 ? context.pending.slice(params.consumed) : context.pending,
    })),
    beginNextRound: assign(({ context }) => ({ round: context.round + 1 })),
    endLoop: assign((_, params: { reason: string }) => ({ shouldStop: false, endReason: params.reason })),
  },
}).createMachine({
  id: "looper",
  initial: "IDLE",
  context: ({ input }) => ({
    round: 0,
    maxRounds: input.maxRounds ?? DEFAULT_MAX_ROUNDS,
    pending: [],
    shouldStop: false,
  }),
  on: {
    STATUS: { description: "Answered with the status block; changes nothing." },
  },
  states: {
    IDLE: {
      on: {
        START: {
          target: "RUNNING",
          actions: { type: "startLoop", params: ({ event }) => ({ maxRounds: event.maxRounds }) },
        },
        ADD_PENDING: {
          description: "Nothing to queue behind: the task starts the loop.",
          target: "RUNNING",
          actions: { type: "startLoop", params: ({ event }) => ({ maxRounds: event.maxRounds }) },
        },
      },
    },
    RUNNING: {
      initial: "WAITING_CODER",
      always: {
        guard: "stopRequested",
        target: "IDLE",
        actions: { type: "endLoop", params: { reason: STOPPED_BY_USER } },
      },
      on: {
        ADD_PENDING: { actions: { type: "queuePending", params: ({ event }) => ({ task: event.task }) } },
        STOP: { actions: "requestStop" },
      },
      states: {
        WAITING_CODER: {
          on: {
            CODER_DONE: [
              { guard: "coderSucceeded", target: "WAITING_REVIEW" },
              { description: "A failed Coder goes straight to the Judge.", target: "JUDGE" },
            ],
          },
        },
        WAITING_REVIEW: {
          on: { REVIEW_DONE: { description: "Also after a failed review: the Judge sees it.", target: "JUDGE" } },
        },
        JUDGE: {
          on: {
            JUDGE_CONTINUE: [
              {
                guard: "roundLimitReached",
                target: "#looper.IDLE",
                description: "The next round will not run: the queued tasks the Judge took into it stay queued, for the next start.",
                actions: [{ type: "endLoop", params: { reason: ROUND_LIMIT } }],
              },
              {
                target: "WAITING_CODER",
                actions: [{ type: "dropConsumedPending", params: ({ event }) => ({ consumed: event.consumedPending }) }, "beginNextRound"],
              },
            ],
            JUDGE_TERMINATE: {
              target: "#looper.IDLE",
              actions: [
                { type: "dropConsumedPending", params: ({ event }) => ({ consumed: event.consumedPending }) },
                { type: "endLoop", params: ({ event }) => ({ reason: event.reason }) },
              ],
            },
          },
        },
      },
    },
  },
});

export type LooperMachineSnapshot = SnapshotFrom<typeof looperMachine>;

export interface LooperOutcome {
  snapshot: LooperSnapshot;
  /** Whether the current state handles the event; an ignored event leaves the snapshot as it was. */
  accepted: boolean;
  /** One line for the `[AUTO]` log and command replies. */
  message: string;
  /**
   * The message tells the user nothing (a phase outcome the current state ignores, a stop with
   * nothing to stop): it is kept out of the `[AUTO]` log.
   */
  internal?: true;
  /**
   * The task of the round the event began (the loop's first, or the Judge's `nextTask`), when it
   * began one. The machine does not keep tasks: the graph state's `task` channel holds the current one.
   */
  roundTask?: string;
}

export function initialLooperSnapshot(maxRounds = DEFAULT_MAX_ROUNDS): LooperSnapshot {
  const [snapshot] = initialTransition(looperMachine, { maxRounds });
  return toLooperSnapshot(snapshot);
}

/** Restores a stored snapshot into the machine (sub-state and context included). */
export function resolveLooperSnapshot(snapshot: LooperSnapshot): LooperMachineSnapshot {
  return looperMachine.resolveState(snapshot);
}

/** The plain-JSON form the graph state stores: a fresh copy, without `endReason` when it is unset. */
export function toLooperSnapshot(snapshot: LooperMachineSnapshot): LooperSnapshot {
  // Listed field by field: a snapshot stored by an older version may still carry its tasks.
  const { round, maxRounds, pending, shouldStop, endReason } = snapshot.context;
  const context: LooperContext = { round, maxRounds, pending, shouldStop };
  return structuredClone({
    value: snapshot.value,
    context: endReason === undefined ? context : { ...context, endReason },
  });
}

/** Feeds one event to the machine, purely: no actor, no side effects, the input is not modified. */
export function applyLooperEvent(snapshot: LooperSnapshot, event: LooperEvent): LooperOutcome {
  const current = resolveLooperSnapshot(snapshot);
  const accepted = looperMachine.getTransitionData(current, event).length > 0;
  const [next] = transition(looperMachine, current, event);
  const nextSnapshot = toLooperSnapshot(next);
  const roundTask = beganRound(snapshot, nextSnapshot) ? roundTaskOf(snapshot, event) : undefined;
  return {
    snapshot: nextSnapshot,
    accepted,
    message: describeOutcome(
      snapshot,
      nextSnapshot,
      event,
      accepted,
      roundTask === undefined ? "" : shownRoundTask(snapshot, event, roundTask),
    ),
    ...(isInternal(snapshot, nextSnapshot, event, accepted) ? { internal: true as const } : {}),
    ...(roundTask !== undefined ? { roundTask } : {}),
  };
}

/**
 * The task of the round an event began: the event's own (START, ADD_PENDING, the Judge's next
 * task); a loop that starts takes up the tasks queued before it (left by the last loop), listed
 * after its own.
 */
function roundTaskOf(before: LooperSnapshot, event: LooperEvent): string | undefined {
  const task = taskOf(event);
  if (task === undefined || isRunning(before) || before.context.pending.length === 0) return task;
  return `${task}\n\nAlso queued before this start:\n${before.context.pending.map((queued) => `- ${queued}`).join("\n")}`;
}

/** A round's task as one log line: a start that takes up queued tasks names them instead of listing them. */
function shownRoundTask(before: LooperSnapshot, event: LooperEvent, roundTask: string): string {
  const own = taskOf(event) ?? roundTask;
  if (own === roundTask) return roundTask;
  const { pending } = before.context;
  return `${own} (and ${pending.length} task${pending.length > 1 ? "s" : ""} queued before: ${pending.map((task) => JSON.stringify(clipTask(task))).join(", ")})`;
}

/** A round began: the loop started, or went on to its next round. */
function beganRound(before: LooperSnapshot, after: LooperSnapshot): boolean {
  return isRunning(after) && (!isRunning(before) || after.context.round !== before.context.round);
}

function taskOf(event: LooperEvent): string | undefined {
  switch (event.type) {
    case "START":
    case "ADD_PENDING":
      return event.task;
    case "JUDGE_CONTINUE":
      return event.nextTask;
    default:
      return undefined;
  }
}

export function isRunning(snapshot: LooperSnapshot): boolean {
  return snapshot.value !== "IDLE";
}

export function subStateOf(snapshot: LooperSnapshot): LooperSubState | undefined {
  return snapshot.value === "IDLE" ? undefined : snapshot.value.RUNNING;
}

/** "round 2/5, WAITING_REVIEW" while running; "idle" otherwise. */
export function describePosition(snapshot: LooperSnapshot): string {
  const subState = subStateOf(snapshot);
  return subState ? `${roundOf(snapshot)}, ${subState}` : "idle";
}

function roundOf({ context }: LooperSnapshot): string {
  return `round ${context.round}/${context.maxRounds}`;
}

function describeOutcome(before: LooperSnapshot, after: LooperSnapshot, event: LooperEvent, accepted: boolean, roundTask: string): string {
  // Every accepted STOP and JUDGE_TERMINATE, and the round limit, end here.
  if (isRunning(before) && !isRunning(after)) return describeEnd(after);
  switch (event.type) {
    case "START":
      return accepted ? describeRoundStart(after, roundTask) : `already running: ${describePosition(before)}`;
    case "ADD_PENDING":
      return isRunning(before)
        ? `queued: ${event.task} (${after.context.pending.length} pending)`
        : `${describeRoundStart(after, roundTask)} (add_pending while idle starts the loop)`;
    case "STOP":
      return "nothing to stop: the loop is idle";
    case "STATUS":
      return `status: ${describePosition(after)}, ${after.context.pending.length} pending`;
    case "CODER_DONE":
      if (!accepted) break;
      return event.ok ? `${roundOf(after)}: coder done, reviewing` : `${roundOf(after)}: coder failed, the judge decides`;
    case "REVIEW_DONE":
      if (!accepted) break;
      return `${roundOf(after)}: review done, judging`;
    case "JUDGE_CONTINUE":
      if (!accepted) break;
      // One line: the next task's first line and the names of the context it carries.
      return describeRoundStart(after, briefTask(roundTask));
    case "JUDGE_TERMINATE":
      break;
  }
  return `ignored ${event.type} (${describePosition(before)})`;
}

/**
 * An outcome the user need not see: an ignored event other than a start (a phase outcome that
 * arrives in a state that does not take it, a stop while idle). A start while running is not
 * internal: its "already running" answers the user.
 */
function isInternal(before: LooperSnapshot, after: LooperSnapshot, event: LooperEvent, accepted: boolean): boolean {
  if (accepted || (isRunning(before) && !isRunning(after))) return false;
  return event.type !== "START" && event.type !== "ADD_PENDING";
}

/** The longest task a log line repeats: the task itself is kept in the state's `task` channel. */
const LOGGED_TASK_MAX_CHARS = 2_000;

function describeRoundStart(snapshot: LooperSnapshot, task: string): string {
  const shown =
    task.length > LOGGED_TASK_MAX_CHARS
      ? `${task.slice(0, LOGGED_TASK_MAX_CHARS)}… (cut, ${task.length - LOGGED_TASK_MAX_CHARS} more characters)`
      : task;
  return `${roundOf(snapshot)} started: ${shown}`;
}

function describeEnd(snapshot: LooperSnapshot): string {
  const { pending } = snapshot.context;
  const note =
    pending.length > 0
      ? `; ${pending.length} queued task${pending.length > 1 ? "s" : ""} not done, kept for the next start: ${pending.map((task) => JSON.stringify(clipTask(task))).join(", ")}`
      : "";
  return `loop ended: ${snapshot.context.endReason} (after ${roundOf(snapshot)})${note}`;
}

const clipTask = (task: string): string => (task.length > 200 ? `${task.slice(0, 199)}…` : task);
