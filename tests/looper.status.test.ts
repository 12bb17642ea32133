import { describe, expect, it } from "vitest";
import { applyLooperEvent, initialLooperSnapshot } from "../src/nodes/looper/machine.js";
import { formatStatus, statusJson } from "../src/nodes/looper/status.js";
import type { LooperEvent, LooperSnapshot } from "../src/state/looper.js";

function run(events: LooperEvent[]): LooperSnapshot {
  return events.reduce((snapshot, event) => applyLooperEvent(snapshot, event).snapshot, initialLooperSnapshot());
}

const task = "optimise the landing page";
const queue = (pending: string): LooperEvent => ({ type: "ADD_PENDING", task: pending, maxRounds: 5 });
const firstRound: LooperEvent[] = [
  { type: "START", task: "optimise the landing pag", maxRounds: 5 },
  { type: "CODER_DONE", ok: true },
  { type: "REVIEW_DONE" },
  { type: "JUDGE_CONTINUE", nextTask: task, consumedPending: 0 },
];
/** A loop in round 2 of 5, waiting for the review, two tasks pending. */
const reviewingRound2 = run([...firstRound, { type: "CODER_DONE", ok: true }, queue("add login"), queue("add sign-up")]);

describe("formatStatus", () => {
  it("prints the block while running", () => {
    expect(formatStatus(reviewingRound2, { task })).toBe(
      [
        "[Looper status]",
        "state: RUNNING",
        "task: optimise the landing page",
        "round: 2/5",
        "sub-state: WAITING_REVIEW",
        'pending: 2 ("add login", "add sign-up")',
      ].join("\n"),
    );
  });

  it("counts queued add_pending commands as pending, after the loop's own", () => {
    const onePending = run([...firstRound, { type: "CODER_DONE", ok: true }, queue("add login")]);
    expect(formatStatus(onePending, { queued: ["add sign-up"], task })).toBe(formatStatus(reviewingRound2, { task }));
  });

  it("shows a running loop with a stop queued and not yet consumed as stopping; an idle one is not", () => {
    expect(formatStatus(reviewingRound2, { task, stopping: true })).toContain("state: RUNNING (stopping)\n");
    expect(statusJson(reviewingRound2, { task, stopping: true })).toMatchObject({ state: "RUNNING", shouldStop: true });
    expect(statusJson(reviewingRound2, { task })).toMatchObject({ shouldStop: false });
    expect(statusJson(initialLooperSnapshot(), { stopping: true })).toMatchObject({ state: "IDLE", shouldStop: false });
  });

  it("prints an idle Looper that never ran", () => {
    expect(formatStatus(initialLooperSnapshot())).toBe("[Looper status]\nstate: IDLE\npending: 0");
    expect(formatStatus(initialLooperSnapshot(), { queued: ["add login"] })).toBe('[Looper status]\nstate: IDLE\npending: 1 ("add login")');
  });

  it("prints how the last loop ended while idle", () => {
    const ended = applyLooperEvent(reviewingRound2, { type: "STOP" }).snapshot;
    expect(formatStatus(ended, { task })).toBe(
      [
        "[Looper status]",
        "state: IDLE",
        "last task: optimise the landing page",
        "last: ended after round 2/5: stopped by user",
        'pending: 2 ("add login", "add sign-up")',
      ].join("\n"),
    );
  });

  it("keeps one line per field: tasks are put on one line, pending tasks quoted", () => {
    const running = run([{ type: "START", task: "fix the\n  parser", maxRounds: 3 }, queue('say "hi"\nand leave')]);
    expect(formatStatus(running, { task: "fix the\n  parser" }).split("\n")).toEqual([
      "[Looper status]",
      "state: RUNNING",
      "task: fix the parser",
      "round: 1/3",
      "sub-state: WAITING_CODER",
      'pending: 1 ("say \\"hi\\"\\nand leave")',
    ]);
  });
});

describe("statusJson", () => {
  it("describes a running loop, queued tasks included", () => {
    expect(statusJson(reviewingRound2, { queued: ["add tests"], task })).toStrictEqual({
      state: "RUNNING",
      task,
      round: 2,
      maxRounds: 5,
      subState: "WAITING_REVIEW",
      pending: ["add login", "add sign-up", "add tests"],
      shouldStop: false,
    });
  });

  it("describes an idle Looper, with the end reason once a loop ended", () => {
    expect(statusJson(initialLooperSnapshot(3))).toStrictEqual({
      state: "IDLE",
      task: "",
      round: 0,
      maxRounds: 3,
      subState: null,
      pending: [],
      shouldStop: false,
    });
    const ended = applyLooperEvent(
      run([
        { type: "START", task, maxRounds: 5 },
        { type: "CODER_DONE", ok: false },
      ]),
      {
        type: "JUDGE_TERMINATE",
        reason: "nothing left to do",
        consumedPending: 0,
      },
    ).snapshot;
    const json = statusJson(ended);
    expect(json).toMatchObject({ state: "IDLE", subState: null, round: 1, endReason: "nothing left to do" });
    expect(JSON.parse(JSON.stringify(json))).toStrictEqual(json);
  });

  it("does not share the snapshot's pending array", () => {
    const json = statusJson(reviewingRound2);
    json.pending.push("x");
    expect(reviewingRound2.context.pending).toEqual(["add login", "add sign-up"]);
  });
});
