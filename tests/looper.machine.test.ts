import { transition } from "xstate";
import { getShortestPaths, getSimplePaths } from "xstate/graph";
import { describe, expect, it } from "vitest";
import {
  applyLooperEvent,
  DEFAULT_MAX_ROUNDS,
  initialLooperSnapshot,
  isRunning,
  looperMachine,
  resolveLooperSnapshot,
  subStateOf,
  toLooperSnapshot,
  type LooperMachineSnapshot,
} from "../src/nodes/looper/machine.js";
import type { LooperEvent, LooperSnapshot } from "../src/state/looper.js";

const MAX_ROUNDS = 2;
const QUEUED_TASK = "p";

/** The lifecycle events with one task and no pending queue: small enough for all simple paths. */
const LIFECYCLE_EVENTS: LooperEvent[] = [
  { type: "START", task: "a", maxRounds: MAX_ROUNDS },
  { type: "STOP" },
  { type: "CODER_DONE", ok: true },
  { type: "CODER_DONE", ok: false },
  { type: "REVIEW_DONE" },
  { type: "JUDGE_CONTINUE", nextTask: "n", consumedPending: 0 },
  { type: "JUDGE_TERMINATE", reason: "done", consumedPending: 0 },
];

/** Every kind of event, with pending tasks queued and consumed. */
const SAMPLE_EVENTS: LooperEvent[] = [
  ...LIFECYCLE_EVENTS,
  { type: "START", task: "b", maxRounds: MAX_ROUNDS },
  { type: "ADD_PENDING", task: QUEUED_TASK, maxRounds: MAX_ROUNDS },
  { type: "STATUS" },
  { type: "JUDGE_CONTINUE", nextTask: "n", consumedPending: 1 },
  { type: "JUDGE_TERMINATE", reason: "done", consumedPending: 1 },
];

/** At most two pending tasks while running, to keep the state space finite. */
function boundedQueue(snapshot: LooperMachineSnapshot, event: LooperEvent): boolean {
  return event.type !== "ADD_PENDING" || snapshot.matches("IDLE") || snapshot.context.pending.length < 2;
}

const shortestPaths = getShortestPaths(looperMachine, {
  input: { maxRounds: MAX_ROUNDS },
  events: SAMPLE_EVENTS,
  filterEvents: boundedQueue,
});
const reachedStates = shortestPaths.map((path) => path.state);

const lifecyclePaths = getSimplePaths(looperMachine, { input: { maxRounds: MAX_ROUNDS }, events: LIFECYCLE_EVENTS });

function viaJson(snapshot: LooperSnapshot): LooperSnapshot {
  return JSON.parse(JSON.stringify(snapshot)) as LooperSnapshot;
}

function stateName(snapshot: LooperSnapshot): string {
  const subState = subStateOf(snapshot);
  return subState ? `RUNNING.${subState}` : "IDLE";
}

/** What must hold in every state the Looper rests in. */
function expectInvariants(snapshot: LooperSnapshot): void {
  const { context } = snapshot;
  expect(["IDLE", "RUNNING.WAITING_CODER", "RUNNING.WAITING_REVIEW", "RUNNING.JUDGE"]).toContain(stateName(snapshot));
  expect(context.maxRounds).toBe(MAX_ROUNDS);
  expect(context.round).toBeGreaterThanOrEqual(0);
  expect(context.round).toBeLessThanOrEqual(context.maxRounds);
  // A STOP is acted on in the same step (the eventless transition): no state rests with shouldStop.
  expect(context.shouldStop).toBe(false);
  expect(subStateOf(snapshot) !== undefined).toBe(isRunning(snapshot));
  expect(context.pending.every((task) => task === QUEUED_TASK)).toBe(true);
  if (isRunning(snapshot)) {
    expect(context.round).toBeGreaterThanOrEqual(1);
    expect(context.endReason).toBeUndefined();
  } else if (context.round === 0) {
    expect(context).toStrictEqual(initialLooperSnapshot(MAX_ROUNDS).context);
  } else {
    expect(context.endReason).toBeTypeOf("string");
  }
}

/** The pending queue after an event: only queued to while running, only drained by the Judge. */
function expectedPending(before: LooperSnapshot, event: LooperEvent, accepted: boolean): string[] {
  const { pending } = before.context;
  if (!accepted) return pending;
  switch (event.type) {
    case "START":
      return [];
    case "ADD_PENDING":
      return isRunning(before) ? [...pending, event.task] : [];
    case "JUDGE_CONTINUE":
      // At the round limit the next round does not run: what the Judge took into it stays queued.
      return before.context.round >= before.context.maxRounds ? pending : pending.slice(event.consumedPending);
    case "JUDGE_TERMINATE":
      return pending.slice(event.consumedPending);
    default:
      return pending;
  }
}

/** Runs events from a fresh Looper through the JSON API. */
function run(events: LooperEvent[], maxRounds = DEFAULT_MAX_ROUNDS): LooperSnapshot {
  return events.reduce((snapshot, event) => applyLooperEvent(snapshot, event).snapshot, initialLooperSnapshot(maxRounds));
}

type LooperPath = (typeof shortestPaths)[number];

/**
 * A path's events, each with the state before and after it. (xstate/graph's first step is the
 * initial state under a synthetic `xstate.init` event; every later step is an event and the state
 * it led to.)
 */
function transitionsOf(path: LooperPath): Array<{ before: LooperMachineSnapshot; event: LooperEvent; after: LooperMachineSnapshot }> {
  const [initial, ...steps] = path.steps;
  expect(initial?.event).toEqual({ type: "xstate.init" });
  let before = initial!.state;
  return steps.map(({ event, state: after }) => {
    const step = { before, event, after };
    before = after;
    return step;
  });
}

describe("model-based: shortest paths to every reachable state", () => {
  it("reach every state, every end reason and the last round", () => {
    const snapshots = reachedStates.map(toLooperSnapshot);
    expect(new Set(snapshots.map(stateName))).toEqual(
      new Set(["IDLE", "RUNNING.WAITING_CODER", "RUNNING.WAITING_REVIEW", "RUNNING.JUDGE"]),
    );
    expect(new Set(snapshots.map((snapshot) => snapshot.context.endReason))).toEqual(
      new Set([undefined, "stopped by user", "round limit", "done"]),
    );
    expect(snapshots.some((snapshot) => isRunning(snapshot) && snapshot.context.round === MAX_ROUNDS)).toBe(true);
    expect(snapshots.some((snapshot) => snapshot.context.pending.length === 2)).toBe(true);
    expect(shortestPaths.length).toBeGreaterThan(30);
  });

  it("hold the invariants in every state on every path", () => {
    for (const path of shortestPaths) {
      for (const step of path.steps) expectInvariants(toLooperSnapshot(step.state));
      expectInvariants(toLooperSnapshot(path.state));
    }
  });

  it("replayed through the JSON API, persisted after every step, end where the model does", () => {
    for (const path of shortestPaths) {
      let snapshot = initialLooperSnapshot(MAX_ROUNDS);
      for (const { event } of transitionsOf(path)) snapshot = viaJson(applyLooperEvent(snapshot, event).snapshot);
      expect(snapshot).toStrictEqual(toLooperSnapshot(path.state));
    }
  });

  it("continue identically after a JSON round trip, for every sample event; ignored events change nothing; pending follows its rule", () => {
    for (const state of reachedStates) {
      const stored = toLooperSnapshot(state);
      const restored = viaJson(stored);
      expect(restored).toStrictEqual(stored);
      expect(toLooperSnapshot(resolveLooperSnapshot(restored))).toStrictEqual(stored);
      for (const event of SAMPLE_EVENTS) {
        const [expected] = transition(looperMachine, state, event);
        const outcome = applyLooperEvent(restored, event);
        expect(outcome.snapshot).toStrictEqual(toLooperSnapshot(expected));
        if (!outcome.accepted) expect(outcome.snapshot).toStrictEqual(stored);
        expect(outcome.snapshot.context.pending).toEqual(expectedPending(stored, event, outcome.accepted));
        expect(outcome.message).toMatch(/^[^\n]+$/);
        expect(restored).toStrictEqual(stored);
      }
    }
  });
});

describe("model-based: every simple path through the lifecycle", () => {
  it("cover starts, both Coder outcomes, both rounds, and every way a loop ends", () => {
    expect(lifecyclePaths.length).toBeGreaterThan(20);
    const events = lifecyclePaths.flatMap((path) => transitionsOf(path).map((step) => step.event));
    expect(new Set(events)).toEqual(new Set(LIFECYCLE_EVENTS));
    const endReasons = lifecyclePaths.map((path) => path.state.context.endReason);
    expect(new Set(endReasons)).toEqual(new Set([undefined, "stopped by user", "round limit", "done"]));
  });

  it("resume exactly after a crash before any event, and hold the invariants", () => {
    for (const path of lifecyclePaths) {
      let snapshot = initialLooperSnapshot(MAX_ROUNDS);
      for (const { event, after } of transitionsOf(path)) {
        const resumed = resolveLooperSnapshot(viaJson(snapshot));
        snapshot = toLooperSnapshot(transition(looperMachine, resumed, event)[0]);
        expect(snapshot).toStrictEqual(toLooperSnapshot(after));
        expectInvariants(snapshot);
      }
    }
  });

  it("never run more Coder turns in a loop than the round limit", () => {
    for (const path of lifecyclePaths) {
      let coderTurns = 0;
      for (const { before, event } of transitionsOf(path)) {
        if (before.matches("IDLE")) coderTurns = 0;
        if (event.type === "CODER_DONE" && before.matches({ RUNNING: "WAITING_CODER" })) coderTurns += 1;
        expect(coderTurns).toBeLessThanOrEqual(MAX_ROUNDS);
      }
    }
  });
});

describe("looper lifecycle rules", () => {
  const start: LooperEvent = { type: "START", task: "write a README", maxRounds: 5 };

  it("starts idle at round 0, with the default round limit", () => {
    const snapshot = initialLooperSnapshot();
    expect(snapshot).toStrictEqual({
      value: "IDLE",
      context: { round: 0, maxRounds: DEFAULT_MAX_ROUNDS, pending: [], shouldStop: false },
    });
    expect(viaJson(snapshot)).toStrictEqual(snapshot);
    expect(isRunning(snapshot)).toBe(false);
    expect(subStateOf(snapshot)).toBeUndefined();
  });

  it("START while idle begins round 1, forgets the last loop, and takes up the tasks it left queued", () => {
    const ended = run([start, { type: "ADD_PENDING", task: "x", maxRounds: 5 }, { type: "STOP" }]);
    expect(ended.context).toMatchObject({ pending: ["x"], endReason: "stopped by user" });
    const outcome = applyLooperEvent(ended, { type: "START", task: "fix the tests", maxRounds: 3 });
    expect(outcome.accepted).toBe(true);
    expect(outcome.message).toBe('round 1/3 started: fix the tests (and 1 task queued before: "x")');
    expect(outcome.roundTask).toBe("fix the tests\n\nAlso queued before this start:\n- x");
    expect(outcome.snapshot).toStrictEqual({
      value: { RUNNING: "WAITING_CODER" },
      context: { round: 1, maxRounds: 3, pending: [], shouldStop: false },
    });
    expect(isRunning(outcome.snapshot)).toBe(true);
    expect(subStateOf(outcome.snapshot)).toBe("WAITING_CODER");
  });

  it("ignores a second START", () => {
    const running = run([start]);
    const outcome = applyLooperEvent(running, { type: "START", task: "something else", maxRounds: 9 });
    expect(outcome).toStrictEqual({ snapshot: running, accepted: false, message: "already running: round 1/5, WAITING_CODER" });
  });

  it("treats ADD_PENDING while idle as START", () => {
    const outcome = applyLooperEvent(initialLooperSnapshot(), { type: "ADD_PENDING", task: "add login", maxRounds: 4 });
    expect(outcome.accepted).toBe(true);
    expect(outcome.snapshot).toStrictEqual(run([{ type: "START", task: "add login", maxRounds: 4 }]));
    expect(outcome.message).toBe("round 1/4 started: add login (add_pending while idle starts the loop)");
  });

  it("queues ADD_PENDING while running, in order, in any sub-state", () => {
    let snapshot = run([start, { type: "CODER_DONE", ok: true }]);
    snapshot = applyLooperEvent(snapshot, { type: "ADD_PENDING", task: "add login", maxRounds: 5 }).snapshot;
    const outcome = applyLooperEvent(snapshot, { type: "ADD_PENDING", task: "write a README", maxRounds: 5 });
    expect(outcome.message).toBe("queued: write a README (2 pending)");
    expect(outcome.snapshot.context.pending).toEqual(["add login", "write a README"]);
    expect(subStateOf(outcome.snapshot)).toBe("WAITING_REVIEW");
  });

  it("STOP while idle changes nothing", () => {
    const idle = initialLooperSnapshot();
    expect(applyLooperEvent(idle, { type: "STOP" })).toStrictEqual({
      snapshot: idle,
      accepted: false,
      message: "nothing to stop: the loop is idle",
      internal: true,
    });
  });

  it.each([
    ["WAITING_CODER", []],
    ["WAITING_REVIEW", [{ type: "CODER_DONE", ok: true }]],
    ["JUDGE", [{ type: "CODER_DONE", ok: true }, { type: "REVIEW_DONE" }]],
  ] as const)("STOP in %s ends the loop in the same step", (subState, toSubState) => {
    const running = run([start, ...toSubState]);
    expect(subStateOf(running)).toBe(subState);
    const outcome = applyLooperEvent(running, { type: "STOP" });
    expect(outcome.accepted).toBe(true);
    expect(outcome.snapshot).toStrictEqual({
      value: "IDLE",
      context: { ...running.context, endReason: "stopped by user" },
    });
    expect(outcome.message).toBe("loop ended: stopped by user (after round 1/5)");
  });

  it("ends through the eventless transition: a stored RUNNING snapshot with shouldStop ends at its next event", () => {
    expect(looperMachine.root.states.RUNNING?.always?.[0]?.target?.[0]?.key).toBe("IDLE");
    const stopping = viaJson(run([start, { type: "CODER_DONE", ok: true }]));
    stopping.context.shouldStop = true;
    const outcome = applyLooperEvent(stopping, { type: "STATUS" });
    expect(outcome.snapshot.value).toBe("IDLE");
    expect(outcome.snapshot.context).toMatchObject({ shouldStop: false, endReason: "stopped by user", round: 1 });
    expect(outcome.message).toBe("loop ended: stopped by user (after round 1/5)");
  });

  it("STATUS changes nothing, in any state", () => {
    const states = [initialLooperSnapshot(), run([start]), run([start, { type: "CODER_DONE", ok: false }])];
    for (const snapshot of states) {
      const outcome = applyLooperEvent(snapshot, { type: "STATUS" });
      expect(outcome.accepted).toBe(true);
      expect(outcome.snapshot).toStrictEqual(snapshot);
    }
    expect(applyLooperEvent(run([start]), { type: "STATUS" }).message).toBe("status: round 1/5, WAITING_CODER, 0 pending");
  });

  it("goes Coder → Review → Judge when the Coder succeeds", () => {
    const coded = applyLooperEvent(run([start]), { type: "CODER_DONE", ok: true });
    expect(subStateOf(coded.snapshot)).toBe("WAITING_REVIEW");
    expect(coded.message).toBe("round 1/5: coder done, reviewing");
    const reviewed = applyLooperEvent(coded.snapshot, { type: "REVIEW_DONE" });
    expect(subStateOf(reviewed.snapshot)).toBe("JUDGE");
    expect(reviewed.message).toBe("round 1/5: review done, judging");
  });

  it("takes a failed Coder straight to the Judge, skipping the review", () => {
    const failed = applyLooperEvent(run([start]), { type: "CODER_DONE", ok: false });
    expect(subStateOf(failed.snapshot)).toBe("JUDGE");
    expect(failed.message).toBe("round 1/5: coder failed, the judge decides");
    const review = applyLooperEvent(failed.snapshot, { type: "REVIEW_DONE" });
    expect(review).toStrictEqual({
      snapshot: failed.snapshot,
      accepted: false,
      message: "ignored REVIEW_DONE (round 1/5, JUDGE)",
      internal: true,
    });
  });

  it("JUDGE_CONTINUE below the limit starts the next round with the Judge's task", () => {
    const atJudge = run([start, { type: "CODER_DONE", ok: true }, { type: "REVIEW_DONE" }]);
    const outcome = applyLooperEvent(atJudge, { type: "JUDGE_CONTINUE", nextTask: "fix the typos", consumedPending: 0 });
    expect(outcome.snapshot).toStrictEqual({
      value: { RUNNING: "WAITING_CODER" },
      context: { ...atJudge.context, round: 2 },
    });
    expect(outcome.roundTask).toBe("fix the typos");
    expect(outcome.message).toBe("round 2/5 started: fix the typos");
  });

  it("JUDGE_CONTINUE at the round limit ends the loop", () => {
    const judgeRound = [
      { type: "CODER_DONE", ok: false },
      { type: "JUDGE_CONTINUE", nextTask: "again", consumedPending: 0 },
    ] as const;
    const lastJudge = run([{ ...start, maxRounds: 2 }, ...judgeRound, { type: "CODER_DONE", ok: false }], 2);
    expect(lastJudge.context.round).toBe(2);
    const outcome = applyLooperEvent(lastJudge, { type: "JUDGE_CONTINUE", nextTask: "more", consumedPending: 0 });
    expect(outcome.snapshot).toStrictEqual({
      value: "IDLE",
      context: { ...lastJudge.context, endReason: "round limit" },
    });
    expect(outcome.message).toBe("loop ended: round limit (after round 2/2)");
  });

  it("JUDGE_TERMINATE ends the loop with the Judge's reason and drops what it consumed", () => {
    const queue = (task: string): LooperEvent => ({ type: "ADD_PENDING", task, maxRounds: 5 });
    const atJudge = run([start, queue("a"), queue("b"), { type: "CODER_DONE", ok: true }, { type: "REVIEW_DONE" }]);
    const outcome = applyLooperEvent(atJudge, { type: "JUDGE_TERMINATE", reason: "the README is done", consumedPending: 1 });
    expect(outcome.snapshot).toStrictEqual({
      value: "IDLE",
      context: { ...atJudge.context, pending: ["b"], endReason: "the README is done" },
    });
    expect(outcome.message).toBe('loop ended: the README is done (after round 1/5); 1 queued task not done, kept for the next start: "b"');
  });

  it("no queued task is lost: one the last Judge took in stays queued at the round limit, and the next START takes it up", () => {
    const queue = (task: string): LooperEvent => ({ type: "ADD_PENDING", task, maxRounds: 1 });
    const atJudge = run([
      { type: "START", task: "write a README", maxRounds: 1 },
      queue("add a licence"),
      { type: "CODER_DONE", ok: true },
      { type: "REVIEW_DONE" },
    ]);
    const ended = applyLooperEvent(atJudge, {
      type: "JUDGE_CONTINUE",
      nextTask: "fix the README\n\nAlso requested by the user:\n- add a licence",
      consumedPending: 1,
    });
    expect(ended.snapshot.context).toMatchObject({ pending: ["add a licence"], endReason: "round limit" });
    expect(ended.message).toBe(
      'loop ended: round limit (after round 1/1); 1 queued task not done, kept for the next start: "add a licence"',
    );
    const restarted = applyLooperEvent(ended.snapshot, { type: "START", task: "go on", maxRounds: 3 });
    expect(restarted.roundTask).toBe("go on\n\nAlso queued before this start:\n- add a licence");
    expect(restarted.snapshot.context.pending).toEqual([]);
  });

  it("no queued task is lost: one that arrives while the Judge runs survives its terminate, and ADD_PENDING on the idle loop takes it up too", () => {
    const atJudge = run([start, { type: "CODER_DONE", ok: true }, { type: "REVIEW_DONE" }]);
    const late = applyLooperEvent(atJudge, { type: "ADD_PENDING", task: "add a licence", maxRounds: 5 }).snapshot;
    const ended = applyLooperEvent(late, { type: "JUDGE_TERMINATE", reason: "done", consumedPending: 0 });
    expect(ended.snapshot.context.pending).toEqual(["add a licence"]);
    const next = applyLooperEvent(ended.snapshot, { type: "ADD_PENDING", task: "write docs", maxRounds: 5 });
    expect(next.roundTask).toBe("write docs\n\nAlso queued before this start:\n- add a licence");
    expect(next.message).toBe(
      'round 1/5 started: write docs (and 1 task queued before: "add a licence") (add_pending while idle starts the loop)',
    );
  });

  it("drains pending only by the Judge's consumedPending, from the front", () => {
    const queue = (task: string): LooperEvent => ({ type: "ADD_PENDING", task, maxRounds: 5 });
    const failedRound = (nextTask: string, consumedPending: number): LooperEvent[] => [
      { type: "CODER_DONE", ok: false },
      { type: "JUDGE_CONTINUE", nextTask, consumedPending },
    ];
    const apply = (snapshot: LooperSnapshot, events: LooperEvent[]): LooperSnapshot =>
      events.reduce((current, event) => applyLooperEvent(current, event).snapshot, snapshot);

    let snapshot = run([start, queue("a"), { type: "CODER_DONE", ok: true }, queue("b"), { type: "REVIEW_DONE" }, queue("c")]);
    expect(snapshot.context.pending).toEqual(["a", "b", "c"]);
    snapshot = apply(snapshot, [{ type: "JUDGE_CONTINUE", nextTask: "a and b", consumedPending: 2 }]);
    expect(snapshot.context.pending).toEqual(["c"]);
    snapshot = apply(snapshot, failedRound("retry", 0));
    expect(snapshot.context.pending).toEqual(["c"]);
    snapshot = apply(snapshot, failedRound("c", 5));
    expect(snapshot.context).toMatchObject({ pending: [], round: 4 });
  });

  it.each<[string, LooperEvent[], LooperEvent]>([
    ["CODER_DONE while idle", [], { type: "CODER_DONE", ok: true }],
    ["JUDGE_TERMINATE while idle", [], { type: "JUDGE_TERMINATE", reason: "x", consumedPending: 0 }],
    ["REVIEW_DONE while waiting for the Coder", [start], { type: "REVIEW_DONE" }],
    ["JUDGE_CONTINUE while waiting for the Coder", [start], { type: "JUDGE_CONTINUE", nextTask: "x", consumedPending: 0 }],
    ["CODER_DONE while waiting for the review", [start, { type: "CODER_DONE", ok: true }], { type: "CODER_DONE", ok: false }],
    [
      "JUDGE_TERMINATE while waiting for the review",
      [start, { type: "CODER_DONE", ok: true }],
      { type: "JUDGE_TERMINATE", reason: "x", consumedPending: 0 },
    ],
    ["CODER_DONE at the Judge", [start, { type: "CODER_DONE", ok: false }], { type: "CODER_DONE", ok: true }],
  ])("ignores %s", (_, before, event) => {
    const snapshot = run(before);
    const outcome = applyLooperEvent(snapshot, event);
    expect(outcome.accepted).toBe(false);
    expect(outcome.snapshot).toStrictEqual(snapshot);
    expect(outcome.message).toMatch(new RegExp(`^ignored ${event.type} \\(`));
    // Kept out of the [AUTO] log: the user never sees it.
    expect(outcome.internal).toBe(true);
  });

  it("marks only ignored phase outcomes and a stop while idle as internal: starts, queued tasks, ends and status are for the user", () => {
    const running = run([start]);
    const shown: Array<[LooperSnapshot, LooperEvent]> = [
      [initialLooperSnapshot(), start],
      [running, start],
      [running, { type: "ADD_PENDING", task: "b", maxRounds: 5 }],
      [running, { type: "STOP" }],
      [running, { type: "STATUS" }],
      [running, { type: "CODER_DONE", ok: true }],
    ];
    for (const [snapshot, event] of shown) expect(applyLooperEvent(snapshot, event).internal, event.type).toBeUndefined();
  });

  it("is pure: the input snapshot is not modified, the result shares nothing with it", () => {
    const snapshot = run([start, { type: "ADD_PENDING", task: "a", maxRounds: 5 }]);
    const frozen = deepFreeze(viaJson(snapshot));
    const outcome = applyLooperEvent(frozen, { type: "ADD_PENDING", task: "b", maxRounds: 5 });
    expect(frozen).toStrictEqual(snapshot);
    expect(outcome.snapshot.context.pending).toEqual(["a", "b"]);
    const unchanged = applyLooperEvent(frozen, { type: "STATUS" }).snapshot;
    expect(unchanged).toStrictEqual(frozen);
    expect(unchanged.context.pending).not.toBe(frozen.context.pending);
  });
});

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
