import { describe, expect, it } from "vitest";
import type { CoderFailureKind } from "../src/nodes/coder/types.js";
import { readJudgeInput, type JudgeInput } from "../src/nodes/judge/input.js";
import { guardDecision, ruleDecision, type JudgeDecision } from "../src/nodes/judge/rules.js";
import { briefTask, leadOf, ORIGINAL_TASK_MAX_CHARS, withMoreQueued } from "../src/nodes/judge/next-task.js";
import { coderFailure, coderSuccess, judgeState, review, TASK, type JudgeStateParts } from "./fixtures/judge/factories.js";

const input = (parts: JudgeStateParts): JudgeInput =>
  readJudgeInput(judgeState(parts), { judge: "judge", coder: "coder", review: "review" });
const CONTINUE: JudgeDecision = { decision: "continue", nextTask: "Polish the CSS." };
/** What the round just judged did, as a next task tells it (coderSuccess, round 2). */
const DONE =
  "## Done so far\nThe Coder finished in round 2.\nFiles changed: index.html, styles/main.css\nIts summary: Inlined the critical CSS and lazy-loaded the hero image; npm test passes.";
const nextTaskOf = (decision: JudgeDecision): string => (decision as { nextTask: string }).nextTask;
const TERMINATE: JudgeDecision = { decision: "terminate", reason: "looks complete" };

describe("judge rules", () => {
  describe("critical review → continue", () => {
    const critical = input({
      coder: coderSuccess(),
      review: review("critical", ["the hero image still blocks rendering"]),
      pending: ["add login"],
    });

    it("the rule's next task is the task, then what was done, the review's comments and the pending messages", () => {
      const { decision } = ruleDecision(critical);
      expect(decision.decision).toBe("continue");
      expect(nextTaskOf(decision)).toBe(
        `${TASK}\n\n${DONE}\n\n## Review comments to address (the review rated the work critical)\n- the hero image still blocks rendering\n\n## Queued by the user\n- add login`,
      );
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
      expect(guarded.decision).toEqual({
        decision: "continue",
        nextTask:
          `Polish the CSS.\n\n## Original task\n${TASK}\n\n${DONE}\n\n` +
          "## Review comments to address (the review rated the work critical)\n- the hero image still blocks rendering\n\n## Queued by the user\n- add login",
      });
      expect(guarded.notes).toEqual(["guard: the model's next task left out 1 pending message, listed verbatim after it"]);
    });
  });

  describe("review passed with pending messages → continue with them", () => {
    it("one pending message and no comments: the next task is that message, verbatim", () => {
      const { decision } = ruleDecision(input({ coder: coderSuccess(), review: review("normal"), pending: ["add login"] }));
      expect(decision).toEqual({ decision: "continue", nextTask: `add login\n\n## Original task\n${TASK}\n\n${DONE}` });
    });

    it("merges the review's comments and every pending message", () => {
      const passed = input({
        coder: coderSuccess(),
        review: review("warning", ["alt text missing on the hero"]),
        pending: ["add login", "add sign-up"],
      });
      expect(ruleDecision(passed).decision).toEqual({
        decision: "continue",
        nextTask:
          `Requested by the user:\n- add login\n- add sign-up\n\n## Original task\n${TASK}\n\n${DONE}\n\n` +
          "## Review comments to address (the review rated the work warning)\n- alt text missing on the hero",
      });
      const guarded = guardDecision(passed, TERMINATE);
      expect(guarded.decision.decision).toBe("continue");
      expect(guarded.notes[0]).toContain("the Coder succeeded and 2 pending messages wait, so the loop must continue");
    });

    it("a model's next task that already carries every message (any case or spacing) stands first, with no note", () => {
      const passed = input({ coder: coderSuccess(), review: review("normal"), pending: ["add login", "add sign-up"] });
      const proposed: JudgeDecision = { decision: "continue", nextTask: "Add   Login, then ADD SIGN-UP." };
      const guarded = guardDecision(passed, proposed);
      expect(guarded.notes).toEqual([]);
      expect(nextTaskOf(guarded.decision)).toBe(
        `Add   Login, then ADD SIGN-UP.\n\n## Original task\n${TASK}\n\n${DONE}\n\n## Queued by the user\n- add login\n- add sign-up`,
      );
    });

    it("with no review result, pending messages still start: only a failed Coder may hold them back", () => {
      const { decision } = ruleDecision(input({ coder: coderSuccess(), pending: ["add login"] }));
      expect(decision).toEqual({ decision: "continue", nextTask: `add login\n\n## Original task\n${TASK}\n\n${DONE}` });
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

  describe("review incomplete (a check failed) → not a pass: the model decides (issue 13, deliverable 4)", () => {
    const incompleteReview = (): ReturnType<typeof review> => {
      const result = review("warning", [
        "specs_breakdown: the check failed: the answer is not JSON",
        "task_log: the check failed: the answer is not JSON",
        "review incomplete: the specs_breakdown and task_log checks failed, so the change is only partly verified",
      ]);
      const failed = { ok: false, comments: [], error: "the answer is not JSON" };
      return { ...result, checks: { ...result.checks, specs_breakdown: failed, task_log: failed } };
    };
    const incomplete = input({ coder: coderSuccess(), review: incompleteReview() });

    it("no rule imposes 'done': a model's continue or terminate stands", () => {
      expect(guardDecision(incomplete, TERMINATE)).toEqual({ decision: TERMINATE, notes: [] });
      const guarded = guardDecision(incomplete, CONTINUE);
      expect(guarded.notes).toEqual([]);
      expect(nextTaskOf(guarded.decision)).toContain("- review incomplete: the specs_breakdown and task_log checks failed");
    });

    it("the fallback ends the loop as partly verified, not 'done: the review passed'", () => {
      const { decision, why } = ruleDecision(incomplete);
      expect(decision).toEqual({
        decision: "terminate",
        reason: "the Coder finished but the review was incomplete (specs_breakdown and task_log failed): the work is only partly verified",
      });
      expect(why).toBe("the Coder succeeded, the review is incomplete and nothing is pending");
    });

    it("pending messages still start the next round", () => {
      expect(ruleDecision(input({ coder: coderSuccess(), review: incompleteReview(), pending: ["add login"] })).decision.decision).toBe(
        "continue",
      );
    });
  });

  describe("Coder failed → the model decides whether a retry is worth it", () => {
    it("no guard overrides the model, even when the review of the failed turn is critical", () => {
      const failed = input({ coder: coderFailure("step_limit"), review: review("critical", ["nothing works"]) });
      expect(guardDecision(failed, TERMINATE)).toEqual({ decision: TERMINATE, notes: [] });
      const guarded = guardDecision(failed, CONTINUE);
      expect(guarded.notes).toEqual([]);
      expect(nextTaskOf(guarded.decision)).toBe(
        `Polish the CSS.\n\n## Original task\n${TASK}\n\n## Done so far\nThe Coder failed in round 2 (step_limit: it went wrong).\n` +
          "Files changed: index.html, styles/main.css\nIts summary: I could not finish.\n\n" +
          "## Review comments to address (the review rated the work critical)\n- nothing works",
      );
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
    it.each(retryable)(
      "fallback: %s is worth a retry: continue with the task, the failure, the comments and the pending messages",
      (kind) => {
        const failed = input({
          coder: kind && coderFailure(kind, "details"),
          review: review("critical", ["tests fail"]),
          pending: ["add login"],
        });
        const { decision, why } = ruleDecision(failed);
        expect(decision.decision).toBe("continue");
        const nextTask = nextTaskOf(decision);
        expect(nextTask.startsWith(`${TASK}\n\nThe previous round failed (${kind ? `${kind}: details` : "no result"}).`)).toBe(true);
        expect(nextTask).toContain("## Review comments to address (the review rated the work critical)\n- tests fail");
        expect(nextTask).toContain("## Queued by the user\n- add login");
        expect(why).toBe(`the Coder failed (${kind ?? "no result"}), which a new round may fix`);
      },
    );

    it.each(["model_bad_request", "model_exhausted", "cancelled"] as const)(
      "fallback: %s cannot be fixed by a retry: terminate",
      (kind) => {
        const { decision, why } = ruleDecision(input({ coder: coderFailure(kind, "details"), pending: ["add login"] }));
        expect(decision).toEqual({
          decision: "terminate",
          reason: `the Coder failed (${kind}: details), which another round cannot fix; pending messages not started: "add login"`,
        });
        expect(why).toBe(`the Coder failed with ${kind}, which a retry cannot fix`);
      },
    );
  });

  it("Coder succeeded, no review result, nothing pending: the model decides; the fallback ends the loop as unverified", () => {
    const unreviewed = input({ coder: coderSuccess() });
    expect(guardDecision(unreviewed, CONTINUE)).toEqual({
      decision: { decision: "continue", nextTask: `Polish the CSS.\n\n## Original task\n${TASK}\n\n${DONE}` },
      notes: [],
    });
    expect(ruleDecision(unreviewed).decision).toEqual({
      decision: "terminate",
      reason: "the Coder finished but the Review left no result: the work is unverified",
    });
  });

  describe("the next task carries its context (issue 13, deliverable 3)", () => {
    const DIFF_STAT = "git_diff: 1 file changed (+1 −0 lines): notes.txt (+1 −0)";

    it("keeps the review's substantive comments and the incomplete note, not the diff's size", () => {
      const comments = [
        "specs_breakdown: the login form has no submit button",
        "task_log: npm test was never run",
        DIFF_STAT,
        "git_diff: a large change: check that all of it belongs to the task",
        "git_diff: the diff (90000 characters) is longer than max_diff_chars (60000): the model checks saw only its head and tail",
        "git_diff: merge conflict markers (<<<<<<< / >>>>>>>) were added to a.txt",
        "review incomplete: the task_log check failed, so the change is only partly verified",
      ];
      const { decision } = ruleDecision(input({ coder: coderSuccess(), review: review("critical", comments) }));
      const nextTask = nextTaskOf(decision);
      expect(nextTask).toContain(
        "## Review comments to address (the review rated the work critical)\n" +
          "- specs_breakdown: the login form has no submit button\n- task_log: npm test was never run\n" +
          "- git_diff: merge conflict markers (<<<<<<< / >>>>>>>) were added to a.txt\n" +
          "- review incomplete: the task_log check failed, so the change is only partly verified",
      );
      expect(nextTask).not.toContain("file changed");
      expect(nextTask).not.toContain("large change");
      expect(nextTask).not.toContain("max_diff_chars");
    });

    it("a review whose only comment is the diff stat adds no comments section", () => {
      const guarded = guardDecision(
        input({ coder: coderSuccess(), review: review("warning", [DIFF_STAT]), pending: ["add login"] }),
        CONTINUE,
      );
      expect(nextTaskOf(guarded.decision)).not.toContain("Review comments");
      expect(nextTaskOf(guarded.decision)).not.toContain("notes.txt");
    });

    it("in a later round the original task is the loop's, and a task's earlier context is not nested into the next", () => {
      const round2Task = nextTaskOf(
        ruleDecision(input({ coder: coderSuccess(), review: review("critical", ["specs_breakdown: no tests"]) })).decision,
      );
      const round3 = input({
        coder: coderSuccess(),
        review: review("critical", ["specs_breakdown: still no tests"]),
        task: `fix it\n\n${round2Task.slice(TASK.length + 2)}`,
        round: 3,
      });
      const nextTask = nextTaskOf(ruleDecision(round3).decision);
      expect(nextTask.startsWith(`fix it\n\n## Original task\n${TASK}\n\n## Done so far\nThe Coder finished in round 3.`)).toBe(true);
      expect(nextTask.match(/## Original task/g)).toHaveLength(1);
      expect(nextTask.match(/## Done so far/g)).toHaveLength(1);
      expect(nextTask).toContain("- specs_breakdown: still no tests");
      expect(nextTask).not.toContain("- specs_breakdown: no tests");
      expect(leadOf(nextTask)).toBe("fix it");
    });

    it("a loop stored before its original task was kept: no original task section", () => {
      const guarded = guardDecision(input({ coder: coderSuccess(), review: review("critical"), loopTask: "" }), CONTINUE);
      expect(nextTaskOf(guarded.decision)).toBe(`Polish the CSS.\n\n${DONE}`);
    });

    it("a long original task is repeated cut (the Judge's result is stored at every step), saying how much was cut", () => {
      const long = `${"x".repeat(ORIGINAL_TASK_MAX_CHARS)}${"y".repeat(500)}`;
      const nextTask = nextTaskOf(
        guardDecision(input({ coder: coderSuccess(), review: review("critical"), loopTask: long }), CONTINUE).decision,
      );
      expect(nextTask).toContain(
        `## Original task\n${"x".repeat(ORIGINAL_TASK_MAX_CHARS)}\n[… cut here: 500 more characters of the original task]`,
      );
      expect(nextTask).not.toContain("xy");
    });

    it("briefTask: the lead's first line and the context it carries, on one line", () => {
      const guarded = guardDecision(
        input({ coder: coderSuccess(), review: review("critical", ["specs_breakdown: no tests"]), pending: ["add login", "add sign-up"] }),
        {
          decision: "continue",
          nextTask: "Add tests for the page.\nThen add login and sign-up.",
        },
      );
      expect(briefTask(nextTaskOf(guarded.decision))).toBe(
        "Add tests for the page. … (with context: original task, what was done, review comments, 2 queued)",
      );
      expect(briefTask("fix the typos")).toBe("fix the typos");
    });

    it("a multi-line queued message stays one bullet, its lines indented under it, and counts once", () => {
      const guarded = guardDecision(
        input({ coder: coderSuccess(), review: review("normal"), pending: ["add login:\n- a form\n- a route", "add sign-up"] }),
        CONTINUE,
      );
      const nextTask = nextTaskOf(guarded.decision);
      expect(nextTask.endsWith("## Queued by the user\n- add login:\n  - a form\n  - a route\n- add sign-up")).toBe(true);
      expect(briefTask(nextTask)).toBe("Polish the CSS. (with context: original task, what was done, 2 queued)");
    });

    it("withMoreQueued: tasks queued while the Judge decided go under the task's queued heading, or a new one", () => {
      const listed = withMoreQueued(
        nextTaskOf(guardDecision(input({ coder: coderSuccess(), pending: ["add login"] }), CONTINUE).decision),
        ["add sign-up"],
      );
      expect(listed.endsWith("## Queued by the user\n- add login\n- add sign-up")).toBe(true);
      expect(briefTask(listed)).toContain("2 queued");
      expect(withMoreQueued("fix the typos", ["add sign-up"])).toBe("fix the typos\n\n## Queued by the user\n- add sign-up");
      expect(withMoreQueued("fix the typos", [])).toBe("fix the typos");
    });
  });
});
