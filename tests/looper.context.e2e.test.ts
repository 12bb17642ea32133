/**
 * Issue 13, deliverables 3 and 4, end to end through the CLI: the next task carries its context
 * (the original task, what was done, the review's substantive comments, not the diff stat), and a
 * review whose model checks both failed is no pass.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/cli.js";
import { finalState, run, type RunSpec } from "./helpers/e2e.js";
import { tempWorkspace } from "./helpers/workspace.js";

const SCRIPTS = join(ROOT, "tests/fixtures/looper");
const TASK = "write add() in app.js";

const loop = (thread: string, script: string): RunSpec => ({
  graph: "coder-review",
  task: TASK,
  thread,
  script: join(SCRIPTS, script),
  approval: "auto",
});

interface State {
  task: string;
  loopTask: string;
  outputs: {
    review: { rating: string; comments: string[] };
    judge: { decision: string; reason?: string; source: string; notes: string[] };
    looper: { endReason?: string };
  };
  messages: Array<{ name?: string; content: string }>;
}

const autoLines = (state: State): string[] =>
  state.messages.map((m) => m.content).filter((content) => typeof content === "string" && content.startsWith("[AUTO]"));

describe("the Looper's next task and an incomplete review, end to end (issue 13)", () => {
  it("the round-2 Coder gets the Judge's task with the original task, what was done and the review's comment, not the diff stat", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const result = await run(ws, loop("ctx", "next-task-context.script.yaml"));
    expect(result.code, result.stderr + result.stdout.slice(-2000)).toBe(0);
    const state = await finalState<State>(ws.db, "ctx");

    // The round-1 review said both: the diff stat (git_diff) and the substantive comment.
    const round1Review = state.messages.find((m) => m.name === "review")!.content;
    expect(round1Review).toContain("git_diff: 1 file changed (+1 −0 lines): app.js (+1 −0)");
    expect(round1Review).toContain("specs_breakdown: app.js has no tests");

    // The `task` channel is what the round-2 Coder was given as its first prompt.
    expect(state.loopTask).toBe(TASK);
    expect(state.task).toBe(
      "Add a test for add() in app.test.js\n\n" +
        `## Original task\n${TASK}\n\n` +
        "## Done so far\nThe Coder finished in round 1.\nFiles changed: app.js\nIts summary: Wrote add() in app.js.\n\n" +
        "## Review comments to address (the review rated the work critical)\n- specs_breakdown: app.js has no tests",
    );
    expect(state.task).not.toContain("file changed");

    // The [AUTO] line stays one line: the task's first line and the context it carries.
    expect(autoLines(state)).toContain(
      "[AUTO] round 2/5 started: Add a test for add() in app.test.js (with context: original task, what was done, review comments)",
    );
  });

  it("a review whose two model checks answered invalidly twice is rated warning, 'review incomplete', and the loop does not end 'done: the review passed'", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const result = await run(ws, loop("partial", "review-incomplete.script.yaml"));
    expect(result.code, result.stderr + result.stdout.slice(-2000)).toBe(0);
    const state = await finalState<State>(ws.db, "partial");

    expect(state.outputs.review.rating).toBe("warning");
    expect(state.outputs.review.comments).toContain(
      "review incomplete: the specs_breakdown and task_log checks failed, so the change is only partly verified",
    );
    // No Judge response is left: the rules decide, and an incomplete review is no pass.
    expect(state.outputs.judge).toMatchObject({ decision: "terminate", source: "fallback" });
    expect(state.outputs.looper.endReason).toBe(
      "the Coder finished but the review was incomplete (specs_breakdown and task_log failed): the work is only partly verified",
    );
    expect(autoLines(state).join("\n")).not.toContain("done: the review passed");
  });
});
