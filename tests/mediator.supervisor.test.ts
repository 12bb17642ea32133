import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openChat } from "../src/engine/chat.js";
import { runMediatorTool } from "../src/nodes/mediator/tools.js";
import type { LooperCommands } from "../src/runtime/context.js";
import { cleanEnv } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";
import { settingsOf } from "../src/config/environment-settings.js";

function scriptFile(dir: string, lines: string[]): string {
  const file = join(dir, "..", "script.yaml");
  writeFileSync(file, ["responses:", ...lines].join("\n"));
  return file;
}

/** A loop whose Coder answers once `gate-coder` exists beside the script (in the workspace's folder). */
const SLOW_LOOP = [
  "  - node: coder",
  "    wait_for: gate-coder",
  '    content: "Nothing to change."',
  '  - { node: review.specs_breakdown, content: \'{"rating": "normal", "comments": []}\' }',
  '  - { node: review.task_log, content: \'{"rating": "normal", "comments": []}\' }',
  '  - { node: judge, content: \'{"decision": "terminate", "reason": "nothing to do"}\' }',
];

/** A chat thread in `ws` on the monitor graph, approvals automatic, run with the test's clean environment. */
const chatIn = (ws: { dir: string; db: string }, threadId: string, model: string) =>
  openChat({ threadId, workspace: ws.dir, db: ws.db, model, approval: "auto", settings: settingsOf(cleanEnv()), cwd: ws.dir });

describe("the Mediator's Looper (LoopSupervisor, through the library API)", () => {
  it("runs one loop per thread: a second start is 'already running'; stop and add_pending follow the lifecycle", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const model = `scripted:${scriptFile(ws.dir, SLOW_LOOP)}`;
    const chat = await chatIn(ws, "sup", model);
    const { looper } = chat;
    expect(looper.threadId).toBe("sup.loop");

    expect(await looper.stop()).toBe("no loop is running: nothing to stop.");
    expect(await looper.status()).toContain("state: IDLE");

    expect(await looper.start("first task")).toMatch(/^started: /);
    expect(looper.running).toBe(true);
    const second = await looper.start("second task");
    expect(second).toMatch(/^already running/);
    expect(second).toContain("task: first task");
    expect(await looper.addPending("more work")).toBe('queued: "more work" is taken up at the loop\'s next Judge.');
    expect(await looper.status()).toContain('pending: 1 ("more work")');
    writeFileSync(join(ws.root, "gate-coder"), "");

    // The script runs out in round 2: the Coder fails (model_exhausted), the Judge ends the loop, and the loop's run fails: its work was not done.
    const outcome = await looper.wait();
    expect(outcome?.status).toBe("failed");
    expect(outcome?.error).toMatch(/^the Judge ended the loop after the Coder failed: /);
    expect(looper.running).toBe(false);
    const progress = await looper.progress(0);
    // The added task went to the Judge, which took it into round 2; the script then runs out and the loop ends.
    expect(progress.lines).toContainEqual(
      expect.stringMatching(/^\[AUTO\] round 2\/5 started: more work \(with context: original task, what was done\)$/),
    );
    expect(progress.lines.at(-1)).toMatch(/^\[AUTO\] loop ended: /);
    expect((await looper.progress(progress.total)).lines).toEqual([]);
  });

  it("a loop that cannot start is reported to the Mediator, not thrown", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const model = `scripted:${scriptFile(ws.dir, SLOW_LOOP)}`;
    const chat = await chatIn(ws, "bad", model);
    rmSync(ws.dir, { recursive: true });
    const answer = await chat.looper.start("a task");
    expect(answer).toMatch(/^the loop could not start: workspace .* is not a directory/);
    expect(chat.looper.running).toBe(false);
  });
});

describe("the Mediator's tools", () => {
  const calls: string[] = [];
  const looper: LooperCommands = {
    start: async (task) => (calls.push(`start ${task}`), "started"),
    addPending: async (task) => (calls.push(`add ${task}`), "queued"),
    stop: async () => (calls.push("stop"), "stopping"),
    status: async () => (calls.push("status"), "[Looper status]\nstate: IDLE\npending: 0"),
  };

  it("dispatches each command, and query_looper_status", async () => {
    calls.length = 0;
    expect(await runMediatorTool("send_to_looper", { command: "start", task: "x" }, looper)).toEqual({ ok: true, content: "started" });
    expect(await runMediatorTool("send_to_looper", { command: "add_pending", task: "y" }, looper)).toEqual({ ok: true, content: "queued" });
    expect(await runMediatorTool("send_to_looper", { command: "stop" }, looper)).toEqual({ ok: true, content: "stopping" });
    expect((await runMediatorTool("query_looper_status", {}, looper)).content).toContain("[Looper status]");
    expect(calls).toEqual(["start x", "add y", "stop", "status"]);
  });

  it("returns bad arguments and unknown tools to the model as errors, running nothing", async () => {
    calls.length = 0;
    const missingTask = await runMediatorTool("send_to_looper", { command: "start" }, looper);
    expect(missingTask.ok).toBe(false);
    expect(missingTask.content).toContain("start and add_pending need a task");
    expect((await runMediatorTool("send_to_looper", { command: "launch", task: "x" }, looper)).ok).toBe(false);
    expect((await runMediatorTool("send_to_looper", { command: "start", task: "   " }, looper)).ok).toBe(false);
    expect((await runMediatorTool("write_file", { path: "x" }, looper)).content).toContain('unknown tool "write_file"');
    expect(calls).toEqual([]);
  });
});
