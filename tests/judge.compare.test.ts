/**
 * The Judge over attempts (src/nodes/judge/compare.ts): the model's pick stands when the attempt
 * passed; a pick of one that did not is overridden by the best that did, or by another round when
 * none did; without a valid answer the rules pick (or ask for another round) themselves.
 */
import { AIMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import type { CoderResult } from "../src/nodes/coder/types.js";
import { decideAttempts, readAttempts, type Attempt } from "../src/nodes/judge/compare.js";
import type { ReviewResult } from "../src/state/looper.js";

const coder = (status: "success" | "failure", index: number): CoderResult =>
  ({
    status,
    summary: "did it",
    filesChanged: ["a.js"],
    steps: 2,
    toolCalls: [],
    todos: [],
    branch: `loopgraph/t/coder-${index}`,
  }) as CoderResult;

const review = (rating: ReviewResult["rating"], passed?: boolean): ReviewResult => ({
  rating,
  comments: [],
  checks: {
    specs_breakdown: { ok: true, rating: "normal", comments: [] },
    task_log: { ok: true, rating: "normal", comments: [] },
    git_diff: { ok: true, rating: "normal", comments: [] },
    ...(passed !== undefined && { command: { ok: true, comments: [], command: "npm test", passed, exitCode: passed ? 0 : 1 } }),
  },
});

/** A model that gives these answers in turn. */
const answering = (...answers: string[]) => {
  const asked: string[] = [];
  const ask = async (messages: { content: unknown }[]) => {
    asked.push(String(messages.at(-1)!.content));
    return new AIMessage(answers.shift() ?? "");
  };
  return { ask, asked };
};

const attempts: Attempt[] = readAttempts(
  [coder("success", 0), coder("success", 1), coder("failure", 2)],
  [review("critical", false), review("warning", true), review("critical", true)],
);

describe("decideAttempts", () => {
  it("takes the model's pick of an attempt that passed, with the attempt's branch and index", async () => {
    const { ask, asked } = answering('{"decision": "pick", "attempt": 2, "reason": "the only one whose tests pass"}');
    const result = await decideAttempts("the task", attempts, "Compare.", ask as never);
    expect(result).toMatchObject({ decision: "pick", attempt: 2, index: 1, branch: "loopgraph/t/coder-1", source: "model" });
    expect(asked[0]).toContain("## Attempt 1 (cannot be picked: its check failed)");
    expect(asked[0]).toContain("## Attempt 3 (cannot be picked: its Coder failed)");
  });

  it("overrides a pick of an attempt that did not pass with the best one that did", async () => {
    const { ask } = answering('{"decision": "pick", "attempt": 1, "reason": "looks neat"}');
    const result = await decideAttempts("the task", attempts, "Compare.", ask as never);
    expect(result).toMatchObject({ decision: "pick", attempt: 2, source: "rule" });
    expect(result.notes).toEqual(["guard: the model picked attempt 1, but its check failed; attempt 2 passed"]);
  });

  it("asks once more for an attempt that does not exist, then falls back to the rules' pick", async () => {
    const { ask } = answering('{"decision": "pick", "attempt": 7, "reason": "x"}', "no idea");
    const result = await decideAttempts("the task", attempts, "Compare.", ask as never);
    expect(result).toMatchObject({
      decision: "pick",
      attempt: 2,
      source: "fallback",
      reason: "attempt 2: its check passed and its review is warning",
    });
  });

  it("with no attempt that passed: another round, whatever the model picked, naming what each got wrong", async () => {
    const failing = readAttempts([coder("success", 0), coder("failure", 1)], [review("normal", false)]);
    const { ask } = answering('{"decision": "pick", "attempt": 1, "reason": "best of a bad lot"}');
    const result = await decideAttempts("the task", failing, "Compare.", ask as never);
    expect(result).toMatchObject({ decision: "continue", source: "rule" });
    if (result.decision !== "continue") throw new Error("unreachable");
    expect(result.nextTask).toBe(
      "the task\n\nNo attempt of the last round passed:\n- attempt 1: its check failed\n- attempt 2: its Coder failed",
    );
  });

  it("takes the model's request for another round as it is", async () => {
    const { ask } = answering('{"decision": "continue", "nextTask": "try again, smaller"}');
    expect(await decideAttempts("the task", attempts, "Compare.", ask as never)).toMatchObject({
      decision: "continue",
      nextTask: "try again, smaller",
      source: "model",
    });
  });
});
