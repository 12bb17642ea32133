import { describe, expect, it } from "vitest";
import type { CoderFailureKind } from "../src/nodes/coder/types.js";
import { readJudgeInput, type JudgeInput } from "../src/nodes/judge/input.js";
import { guardDecision, ruleDecision, type JudgeDecision } from "../src/nodes/judge/rules.js";
import { coderFailure, coderSuccess, judgeState, review, TASK, type JudgeStateParts } from "./fixtures/judge/factories.js";

const input = (parts: JudgeStateParts): JudgeInput => readJudgeInput(judgeState(parts), { judge: "judge", coder: "coder", review: "review" });
const CONTINUE: JudgeDecision = { decision: "continue", nextTask: "Polish the CSS." };
const TERMINATE: JudgeDecision = { decision: "terminate", reason: "looks complete" };

describe("judge rules", () => {
  describe("critical review → continue", () => {
    const critical = input({ coder: coderSuccess(), review: review("critical", ["the hero image still blocks rendering"]), pending: ["add login"] });

    it("the rule's next task is the task plus the review's comments and the pending messages", () => {
      const { decision } = ruleDecision(critical);
      expect(decision.decision).toBe("continue");
      const nextTask = (decision as { nextTask: string }).nextTask;
      expect(nextTask).toBe(`${TASK}\n\nReview comments to address:\n- the hero image still blocks rendering\n\nAlso requested by the user:\n- add login`);
    });

    it("overrides a model that wants to terminate, and says so", () => {
      const guarded = guardDecision(critical, TERMINATE);
      expect(guarded.decision).toEqual(ruleDecision(critical).decision);
      expect(guarded.notes).toEqual([
        'guard: the review rated the work critical, so the loop must continue; the model said terminate ("looks complete")',
      ]);
    });

    it("keeps a model's continue, completed with any pending message it left out", () => {
      const guarded = guardDecision(critical, CONTINUE);
      expect(guarded.decision).toEqual({ decision: "continue", nextTask: "Polish the CSS.\n\nAlso requested by the user:\n- add login" });
      expect(guarded.notes).toEqual(["guard: the model's next task left out 1 pending message, appended verbatim"]);
    });
  });

  describe("review passed with pending messages → continue with them", () => {
    it("one pending message and no comments: the next task is that message, verbatim", () => {
      const { decision } = ruleDecision(input({ coder: coderSuccess(), review: review("normal"), pending: ["add login"] }));
      expect(decision).toEqual({ decision: "continue", nextTask: "add login" });
    });

    it("merges the review's comments and every pending message", () => {
      const passed = input({ coder: coderSuccess(), review: review("warning", ["alt text missing on the hero"]), pending: ["add login", "add sign-up"] });
      expect(ruleDecision(passed).decision).toEqual({
        decision: "continue",
        nextTask: "Review comments to address:\n- alt text missing on the hero\n\nAlso requested by the user:\n- add login\n- add sign-up",
      });
      const guarded = guardDecision(passed, TERMINATE);
      expect(guarded.decision.decision).toBe("continue");
      expect(guarded.notes[0]).toContain("the Coder succeeded and 2 pending messages wait, so the loop must continue");
    });

    it("a model's next task that already carries every message (any case or spacing) stands as it is", () => {
      const passed = input({ coder: coderSuccess(), review: review("normal"), pending: ["add login", "add sign-up"] });
      const proposed: JudgeDecision = { decision: "continue", nextTask: "Add   Login, then ADD SIGN-UP." };
      expect(guardDecision(passed, proposed)).toEqual({ decision: proposed, notes: [] });
    });

    it("with no review result, pending messages still start: only a failed Coder may hold them back", () => {
      const { decision } = ruleDecision(input({ coder: coderSuccess(), pending: ["add login"] }));
      expect(decision).toEqual({ decision: "continue", nextTask: "add login" });
    });
  });

  describe("review passed and nothing pending → terminate", () => {
    const passed = input({ coder: coderSuccess(), review: review("warning", ["consider a CDN"]) });

    it("the reason says done and carries the review's comments", () => {
      expect(ruleDecision(passed).decision).toEqual({ decision: "terminate", reason: "done: the review passed (warning): consider a CDN" });
    });

    it("overrides a model that wants another round", () => {
      const guarded = guardDecision(passed, CONTINUE);
      expect(guarded.decision.decision).toBe("terminate");
      expect(guarded.notes[0]).toBe(
        'guard: the review passed (warning) and nothing is pending, so the loop must terminate; the model said continue ("Polish the CSS.")',
      );
    });

    it("a model that terminates keeps its own reason", () => {
      expect(guardDecision(passed, TERMINATE)).toEqual({ decision: TERMINATE, notes: [] });
    });
  });

  describe("Coder failed → the model decides whether a retry is worth it", () => {
    it("no guard overrides the model, even when the review of the failed turn is critical", () => {
      const failed = input({ coder: coderFailure("step_limit"), review: review("critical", ["nothing works"]) });
      expect(guardDecision(failed, TERMINATE)).toEqual({ decision: TERMINATE, notes: [] });
      expect(guardDecision(failed, CONTINUE)).toEqual({ decision: CONTINUE, notes: [] });
    });

    it("a model that ends the loop with pending messages: they are listed in the reason, not silently dropped", () => {
      const guarded = guardDecision(input({ coder: coderFailure("model_bad_request"), pending: ["add login"] }), TERMINATE);
      expect(guarded.decision).toEqual({ decision: "terminate", reason: 'looks complete; pending messages not started: "add login"' });
      expect(guarded.notes).toEqual(["guard: the loop ends with 1 pending message not started, listed in the reason"]);
    });

    const retryable: (CoderFailureKind | undefined)[] = [
      "step_limit",
      "loop_detected",
      "model_rate_limit",
      "model_timeout",
      "model_server",
      "model_network",
      undefined,
    ];
    it.each(retryable)("fallback: %s is worth a retry: continue with the task, the failure, the comments and the pending messages", (kind) => {
      const failed = input({ coder: kind && coderFailure(kind, "details"), review: review("critical", ["tests fail"]), pending: ["add login"] });
      const { decision, why } = ruleDecision(failed);
      expect(decision.decision).toBe("continue");
      const nextTask = (decision as { nextTask: string }).nextTask;
      expect(nextTask.startsWith(`${TASK}\n\nThe previous round failed (${kind ? `${kind}: details` : "no result"}).`)).toBe(true);
      expect(nextTask).toContain("Review comments to address:\n- tests fail");
      expect(nextTask).toContain("Also requested by the user:\n- add login");
      expect(why).toBe(`the Coder failed (${kind ?? "no result"}), which a new round may fix`);
    });

    it.each(["model_bad_request", "model_exhausted", "cancelled"] as const)("fallback: %s cannot be fixed by a retry: terminate", (kind) => {
      const { decision, why } = ruleDecision(input({ coder: coderFailure(kind, "details"), pending: ["add login"] }));
      expect(decision).toEqual({
        decision: "terminate",
        reason: `the Coder failed (${kind}: details), which another round cannot fix; pending messages not started: "add login"`,
      });
      expect(why).toBe(`the Coder failed with ${kind}, which a retry cannot fix`);
    });
  });

  it("Coder succeeded, no review result, nothing pending: the model decides; the fallback ends the loop as unverified", () => {
    const unreviewed = input({ coder: coderSuccess() });
    expect(guardDecision(unreviewed, CONTINUE)).toEqual({ decision: CONTINUE, notes: [] });
    expect(ruleDecision(unreviewed).decision).toEqual({
      decision: "terminate",
      reason: "the Coder finished but the Review left no result: the work is unverified",
    });
  });
});
