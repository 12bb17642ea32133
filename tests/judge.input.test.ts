import { describe, expect, it } from "vitest";
import { z } from "zod";
import { formatJudgeInput, readJudgeInput } from "../src/nodes/judge/input.js";
import { judgeNodeKeys } from "../src/nodes/judge/schema.js";
import type { GraphStateValue } from "../src/state/graph-state.js";
import { coderFailure, coderSuccess, judgeState, review, TASK } from "./fixtures/judge/factories.js";

const SOURCES = { judge: "judge", coder: "coder", review: "review" };

describe("judge input", () => {
  it("reads the round's task, round, results and every pending message from the state", () => {
    const state = judgeState({
      coder: coderSuccess(),
      review: review("warning"),
      pending: ["add login", "add sign-up"],
      round: 3,
      maxRounds: 7,
    });
    const input = readJudgeInput(state, SOURCES);
    expect(input).toMatchObject({ task: TASK, round: 3, maxRounds: 7, pending: ["add login", "add sign-up"] });
    expect(input.coder?.status).toBe("success");
    expect(input.review?.rating).toBe("warning");
  });

  it("reads the Coder and Review results under the node ids it is configured with", () => {
    const state = judgeState({});
    state.outputs = { builder: coderFailure("step_limit"), checker: review("critical") };
    const input = readJudgeInput(state, { judge: "judge", coder: "builder", review: "checker" });
    expect(input.coder?.failureKind).toBe("step_limit");
    expect(input.review?.rating).toBe("critical");
  });

  it("counts outputs without the expected shape as no result", () => {
    const state = judgeState({});
    state.outputs = { coder: "plain text", review: { rating: "excellent" } };
    const input = readJudgeInput(state, SOURCES);
    expect(input.coder).toBeUndefined();
    expect(input.review).toBeUndefined();
  });

  it("outside a Looper: the state's task, the Judge's visit number as round, no limit, nothing pending", () => {
    const state = { ...judgeState({}), loopState: undefined, task: "write the docs", visits: { judge: 2 } } as GraphStateValue;
    const input = readJudgeInput(state, SOURCES);
    expect(input).toMatchObject({ task: "write the docs", round: 3, pending: [] });
    expect(input.maxRounds).toBeUndefined();
    expect(formatJudgeInput(input)).toContain("## Round\n3\n");
  });

  it("puts task, round n/max, the Coder result with a tool-call digest, the Review and all pending messages into one text", () => {
    const failing = {
      ...review("critical", ["the hero image still blocks rendering", "no test covers the lazy loading"]),
      checks: {
        specs_breakdown: { ok: true, comments: [] },
        task_log: { ok: true, comments: [] },
        git_diff: { ok: false, comments: [], error: "git diff failed: not a git repository" },
      },
    };
    const coder = coderFailure("loop_detected", "the same shell call repeated 3 times");
    const text = formatJudgeInput(readJudgeInput(judgeState({ coder, review: failing, pending: ["add login", "add sign-up"] }), SOURCES));

    expect(text).toContain(`## Task\n${TASK}`);
    expect(text).toContain("## Round\n2/5");
    expect(text).toContain("status: failure");
    expect(text).toContain("failure: loop_detected: the same shell call repeated 3 times");
    expect(text).toContain("files changed: index.html, styles/main.css");
    expect(text).toContain("tool calls: 4 (1 failed): read_file ×1, edit_file ×1, shell ×2 (1 failed)");
    expect(text).toContain('- shell {"command":"npm test"}: timeout: timed out after 120000 ms');
    expect(text).toContain("summary:\nI could not finish.");
    expect(text).toContain("rating: critical");
    expect(text).toContain("- the hero image still blocks rendering\n- no test covers the lazy loading");
    expect(text).toContain("failed checks:\n- git_diff: git diff failed: not a git repository");
    expect(text).toContain("## Pending messages (2, queued by the user during the round)\n1. add login\n2. add sign-up");
  });

  it("says plainly when a result is missing or nothing is pending, and cuts a very long summary", () => {
    const text = formatJudgeInput(readJudgeInput(judgeState({}), SOURCES));
    expect(text).toContain("## Coder result\nnone: the Coder left no result");
    expect(text).toContain("## Review result\nnone: the Review left no result");
    expect(text).toContain("## Pending messages\nnone");

    const long = formatJudgeInput(
      readJudgeInput(judgeState({ coder: coderSuccess({ summary: "x".repeat(5_000), toolCalls: [] }) }), SOURCES),
    );
    expect(long).toContain("tool calls: none");
    expect(long).toContain("… (cut, 1000 more characters)");
  });
});

describe("judge node keys of a graph file", () => {
  const judgeNode = z.strictObject({ kind: z.literal("judge"), ...judgeNodeKeys });

  it("defaults coder and review to the usual node ids and leaves the prompt to the package", () => {
    expect(judgeNode.parse({ kind: "judge" })).toEqual({ kind: "judge", coder: "coder", review: "review" });
    expect(judgeNode.parse({ kind: "judge", coder: "builder", review: "checker", prompt: "prompts/strict-judge.md" })).toEqual({
      kind: "judge",
      coder: "builder",
      review: "checker",
      prompt: "prompts/strict-judge.md",
    });
  });

  it("rejects unknown keys and empty node ids", () => {
    expect(judgeNode.safeParse({ kind: "judge", reviewer: "review" }).success).toBe(false);
    expect(judgeNode.safeParse({ kind: "judge", coder: "" }).success).toBe(false);
  });
});
