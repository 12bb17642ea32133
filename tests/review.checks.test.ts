import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { CoderResult } from "../src/nodes/coder/types.js";
import type { ReviewCheckResult } from "../src/state/looper.js";
import { cutMiddle, mergeReview, rateDiff, summariseChanges, type DiffReading } from "../src/nodes/review/checks.js";
import { DEFAULT_REVIEW_PROMPTS, resolveReviewNode, reviewNodeSchema } from "../src/nodes/review/schema.js";
import { ROOT } from "./helpers/cli.js";

const CODER: CoderResult = { status: "success", summary: "done", filesChanged: [], steps: 1, toolCalls: [], todos: [] };

/** A new file's patch as git writes it (a path with a space ends in a tab on the `+++` line). */
const patchFor = (path: string, added: string[]): string =>
  [
    `diff --git a/${path} b/${path}`,
    "new file mode 100644",
    "--- /dev/null",
    `+++ b/${path}${path.includes(" ") ? "\t" : ""}`,
    `@@ -0,0 +1,${added.length} @@`,
    ...added.map((line) => `+${line}`),
    "",
  ].join("\n");

const read = (patch: string, files = [{ path: "a.ts", added: 1, removed: 0 }], max = 10_000): DiffReading => ({
  status: "read",
  facts: summariseChanges({ patch, files }, max),
});

describe("git_diff check rules", () => {
  it("no change at all is normal, unless the Coder reports changes: then a warning", () => {
    const empty = read("", []);
    expect(rateDiff(empty, CODER, 100)).toEqual({
      ok: true,
      rating: "normal",
      comments: ["no file in the workspace changed since the round began"],
    });
    expect(rateDiff(empty, { ...CODER, filesChanged: ["a.ts", "b.ts"] }, 100)).toEqual({
      ok: true,
      rating: "warning",
      comments: ["the Coder reports changing a.ts, b.ts, but no file in the workspace changed since the round began"],
    });
  });

  it("merge conflict markers added to a file are critical, named by file", () => {
    const patch =
      patchFor("clean.ts", ["const a = 1;"]) +
      patchFor("my file.ts", ["<<<<<<< HEAD", "const a = 1;", "=======", "const a = 2;", ">>>>>>> branch"]);
    const result = rateDiff(
      read(patch, [
        { path: "clean.ts", added: 1, removed: 0 },
        { path: "my file.ts", added: 5, removed: 0 },
      ]),
      CODER,
      10_000,
    );
    expect(result.rating).toBe("critical");
    expect(result.comments).toEqual([
      "2 files changed (+6 −0 lines): clean.ts (+1 −0), my file.ts (+5 −0)",
      "merge conflict markers (<<<<<<< / >>>>>>>) were added to my file.ts",
    ]);
  });

  it("says when the change is large and when the models saw only part of the diff", () => {
    const files = Array.from({ length: 60 }, (_, i) => ({ path: `f${i}.ts`, added: 10, removed: 2 }));
    const patch = files.map((file) => patchFor(file.path, Array(10).fill("x"))).join("");
    const result = rateDiff(read(patch, files, 1_000), CODER, 1_000);
    expect(result.rating).toBe("normal");
    expect(result.comments[0]).toMatch(/^60 files changed \(\+600 −120 lines\): f0\.ts \(\+10 −2\), .*f19\.ts \(\+10 −2\) and 40 more$/);
    expect(result.comments).toContain("a large change: check that all of it belongs to the task");
    expect(result.comments).toContain(
      `the diff (${patch.length} characters) is longer than max_diff_chars (1000): the model checks saw only its head and tail`,
    );
  });

  it("a diff that could not be read fails the check", () => {
    expect(rateDiff({ status: "failed", error: "git diff: boom" }, CODER, 100)).toEqual({
      ok: false,
      comments: [],
      error: "git diff: boom",
    });
  });
});

describe("merging the checks", () => {
  const ok = (rating: ReviewCheckResult["rating"], ...comments: string[]): ReviewCheckResult => ({ ok: true, rating, comments });
  const failed: ReviewCheckResult = { ok: false, comments: [], error: "model timed out" };

  it("rates the worst successful check and prefixes comments with their check", () => {
    const review = mergeReview(
      { specs_breakdown: ok("warning", "a.ts: no test"), task_log: failed, git_diff: ok("normal", "1 file changed") },
      CODER,
    );
    expect(review.rating).toBe("warning");
    expect(review.comments).toEqual([
      "specs_breakdown: a.ts: no test",
      "task_log: the check failed: model timed out",
      "git_diff: 1 file changed",
      "review incomplete: the task_log check failed, so the change is only partly verified",
    ]);
  });

  it("a check that did not run counts as failed, and the review is incomplete: at least a warning, never a pass", () => {
    const review = mergeReview({ specs_breakdown: ok("normal"), git_diff: ok("normal") }, CODER);
    expect(review.checks.task_log).toEqual({ ok: false, comments: [], error: "the check did not run" });
    expect(review.rating).toBe("warning");
    expect(review.comments.at(-1)).toBe("review incomplete: the task_log check failed, so the change is only partly verified");
  });

  it("both model checks failed: the diff check alone does not make the review pass; a multi-line error is cut to its first line", () => {
    const dump: ReviewCheckResult = {
      ok: false,
      comments: [],
      error: `invalid output: ${"x".repeat(300)}\n  at path rating: expected one of …\n  at path comments: required`,
    };
    const review = mergeReview({ specs_breakdown: dump, task_log: failed, git_diff: ok("normal", "1 file changed (+1 −0 lines)") }, CODER);
    expect(review.rating).toBe("warning");
    expect(review.comments).toContain(
      "review incomplete: the specs_breakdown and task_log checks failed, so the change is only partly verified",
    );
    const specs = review.comments.find((comment) => comment.startsWith("specs_breakdown:"))!;
    expect(specs).not.toContain("\n");
    expect(specs.length).toBeLessThan(260);
  });
});

describe("cutting long model inputs", () => {
  it("keeps head and tail at line starts and says how much was cut", () => {
    const text = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n");
    const cut = cutMiddle(text, 200, "diff");
    expect(cut.startsWith("line 0\nline 1\n")).toBe(true);
    expect(cut.endsWith("line 98\nline 99")).toBe(true);
    expect(cut).toContain(
      "\nline 12\n[... 600 of 789 characters of the diff (75 lines) cut here: only the head and tail are shown ...]\nline 88\n",
    );
    expect(cut.length).toBeLessThan(320);
    expect(cutMiddle(text, 10_000, "diff")).toBe(text);
  });
});

describe("review node configuration", () => {
  it("fills defaults and rejects unknown keys", () => {
    expect(reviewNodeSchema.parse({})).toEqual({ coder: "coder", max_diff_chars: 40_000 });
    expect(reviewNodeSchema.safeParse({ max_diff_chars: 0 }).success).toBe(false);
    expect(reviewNodeSchema.safeParse({ specs: "x.md" }).success).toBe(false);
  });

  it("resolves the package prompts by default and gives up when a prompt is missing", () => {
    const asked: string[] = [];
    const definition = resolveReviewNode(reviewNodeSchema.parse({ coder: "dev" }), { id: "check" }, (key, relative, defaultName) => {
      asked.push(key);
      return relative === undefined ? join(ROOT, "prompts", defaultName) : undefined;
    });
    expect(definition).toEqual({
      id: "check",
      kind: "review",
      coder: "dev",
      specsPrompt: join(ROOT, "prompts", DEFAULT_REVIEW_PROMPTS.specs_prompt),
      taskLogPrompt: join(ROOT, "prompts", DEFAULT_REVIEW_PROMPTS.task_log_prompt),
      maxDiffChars: 40_000,
    });
    expect(existsSync(definition!.specsPrompt) && existsSync(definition!.taskLogPrompt)).toBe(true);

    const missing = resolveReviewNode(
      reviewNodeSchema.parse({ task_log_prompt: "nope.md" }),
      { id: "check" },
      (key, relative, defaultName) => {
        asked.push(key);
        return relative === undefined ? join(ROOT, "prompts", defaultName) : undefined;
      },
    );
    expect(missing).toBeUndefined();
    expect(asked).toEqual(["specs_prompt", "task_log_prompt", "specs_prompt", "task_log_prompt"]);
  });
});
