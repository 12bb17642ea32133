import { describe, expect, it } from "vitest";
import { commandToEvent, looperCommandSchema, parseLooperCommand, parseNaturalCommand } from "../src/nodes/looper/commands.js";
import { applyLooperEvent, initialLooperSnapshot } from "../src/nodes/looper/machine.js";
import type { LooperCommand } from "../src/state/looper.js";

describe("parseLooperCommand: JSON", () => {
  it.each<[string, LooperCommand]>([
    ['{"command": "start", "task": "optimise the landing page"}', { command: "start", task: "optimise the landing page" }],
    ['{"command": "add_pending", "task": "add login"}', { command: "add_pending", task: "add login" }],
    ['{"command": "stop"}', { command: "stop" }],
    ['  {"command":"status"}\n', { command: "status" }],
    ['{"command": "start", "task": "  two\\nlines  "}', { command: "start", task: "two\nlines" }],
  ])("reads %s", (text, command) => {
    expect(parseLooperCommand(text)).toEqual(command);
  });

  it.each([
    ['{"command": "stop", "now": true}', "an unknown key"],
    ['{"command": "status", "task": "x"}', "a task on a command without one"],
    ['{"command": "start"}', "a missing task"],
    ['{"command": "add_pending", "task": "   "}', "an empty task"],
    ['{"command": "start", "task": 42}', "a task that is not a string"],
    ['{"command": "restart"}', "an unknown command"],
    ['{"command": "STOP"}', "a keyword in the wrong case"],
    ['{"command": "stop"', "broken JSON"],
    ['{"task": "x"}', "no command"],
  ])("rejects %s (%s)", (text) => {
    expect(parseLooperCommand(text)).toBeUndefined();
  });

  it("exports the schema, for tools that take a command as JSON", () => {
    expect(looperCommandSchema.parse({ command: "add_pending", task: " x " })).toEqual({ command: "add_pending", task: "x" });
  });
});

describe("parseLooperCommand: plain words", () => {
  it.each<[string, LooperCommand]>([
    ["stop", { command: "stop" }],
    ["  STOP \n", { command: "stop" }],
    ["/stop", { command: "stop" }],
    ["Status", { command: "status" }],
    ["/status", { command: "status" }],
    ["start: optimise the landing page", { command: "start", task: "optimise the landing page" }],
    ["START:optimise the landing page  ", { command: "start", task: "optimise the landing page" }],
    ["start : a task", { command: "start", task: "a task" }],
    ["/start optimise the landing page", { command: "start", task: "optimise the landing page" }],
    ["add: add login", { command: "add_pending", task: "add login" }],
    ["Add: add login", { command: "add_pending", task: "add login" }],
    ["pending: add sign-up", { command: "add_pending", task: "add sign-up" }],
    ["add_pending: add sign-up", { command: "add_pending", task: "add sign-up" }],
    ["/add add sign-up", { command: "add_pending", task: "add sign-up" }],
    ["add: first line\nsecond line", { command: "add_pending", task: "first line\nsecond line" }],
    ["Also: add sign-up", { command: "add_pending", task: "add sign-up" }],
  ])("reads %j", (text, command) => {
    expect(parseLooperCommand(text)).toEqual(command);
  });

  it.each([
    ["", "nothing"],
    ["   ", "blanks"],
    ["start:", "an empty task"],
    ["add:   ", "a blank task"],
    ["/start", "a slash command without its task"],
    ["start by reading the README", "a task keyword without colon or slash"],
    ["add a test for the parser?", "a sentence that begins with a keyword"],
    ["stop using tabs", "a bare keyword with more words"],
    ["status: please", "a bare keyword with a colon"],
    ["stop.", "punctuation after a bare keyword"],
    ["restart: x", "an unknown keyword"],
    ["what does the Looper do?", "a question"],
    ["also, why is the build slow?", "also followed by punctuation"],
    ["also", "also without a task"],
    ["also write a README", "also without a colon"],
    ["Also what does git rebase do?", "a sentence that begins with also"],
    ["constructor", "an object property name"],
    ["__proto__: x", "an object property name with a task"],
  ])("leaves %j to the Mediator (%s)", (text) => {
    expect(parseLooperCommand(text)).toBeUndefined();
  });

  it("returns a fresh object each time", () => {
    const first = parseLooperCommand("stop");
    expect(first).not.toBe(parseLooperCommand("stop"));
  });
});

describe("parseNaturalCommand: plain English for a Looper thread", () => {
  it.each<[string, LooperCommand]>([
    ["please stop", { command: "stop" }],
    ["Could you stop the loop now?", { command: "stop" }],
    ["that's enough", { command: "stop" }],
    ["pause the loop", { command: "stop" }],
    ["what's the status?", { command: "status" }],
    ["How is it going?", { command: "status" }],
    ["show me the progress please", { command: "status" }],
    ["also write the README", { command: "add_pending", task: "write the README" }],
    ["Please also Rename Foo to Bar.", { command: "add_pending", task: "Rename Foo to Bar" }],
    ["one more thing: update the changelog", { command: "add_pending", task: "update the changelog" }],
    ["add a test for the parser", { command: "add_pending", task: "add a test for the parser" }],
    ["start on the parser", { command: "start", task: "the parser" }],
    ["add: exact form", { command: "add_pending", task: "exact form" }],
  ])("reads %s", (text, command) => {
    expect(parseNaturalCommand(text)).toEqual(command);
  });

  it.each(["tell me a joke", "stop using var in a.ts", "start the loop", "hello", ""])("maps no rule to %j", (text) => {
    expect(parseNaturalCommand(text)).toBeUndefined();
  });
});

describe("commandToEvent", () => {
  it.each([
    [
      { command: "start", task: "t" },
      { type: "START", task: "t", maxRounds: 3 },
    ],
    [
      { command: "add_pending", task: "t" },
      { type: "ADD_PENDING", task: "t", maxRounds: 3 },
    ],
    [{ command: "stop" }, { type: "STOP" }],
    [{ command: "status" }, { type: "STATUS" }],
  ] as const)("maps %j", (command, event) => {
    expect(commandToEvent(command, 3)).toEqual(event);
  });

  it("drives the machine from typed text", () => {
    const typed = ["add: write a README", "start: something else", "add: add a licence", "stop", "stop"];
    const replies: string[] = [];
    let snapshot = initialLooperSnapshot();
    for (const text of typed) {
      const outcome = applyLooperEvent(snapshot, commandToEvent(parseLooperCommand(text)!, 5));
      snapshot = outcome.snapshot;
      replies.push(outcome.message);
    }
    expect(replies).toEqual([
      "round 1/5 started: write a README (add_pending while idle starts the loop)",
      "already running: round 1/5, WAITING_CODER",
      "queued: add a licence (1 pending)",
      'loop ended: stopped by user (after round 1/5); 1 queued task not done, kept for the next start: "add a licence"',
      "nothing to stop: the loop is idle",
    ]);
  });
});
