/**
 * The eval runner (src/eval/run.ts), in-process on a real SQLite store, real git and the shipped
 * coder-review graph with a scripted model: every trial is a thread of its own in a fresh copy of
 * its task's folder, checked there; its result is stored as soon as it is known; a stopped eval
 * resumes without running a finished trial again.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { settingsOf } from "../src/config/environment-settings.js";
import { deleteEval } from "../src/engine/thread-admin.js";
import { recheckEval } from "../src/eval/recorded.js";
import { resumeEval, startEval, trialThreadId, type EvalRunOptions } from "../src/eval/run.js";
import type { EvalSuite, EvalTask, TrialResult } from "../src/eval/types.js";
import { withTables } from "../src/store/tables.js";
import { packageGraphsDir } from "../src/package.js";
import { ROOT } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

/** One round: the Coder writes answer.txt (42), the Review passes it, the Judge ends the loop. */
const SCRIPT = join(ROOT, "tests/fixtures/eval/answer-42.script.yaml");

function task(id: string, folder: string, check: EvalTask["check"], requires: string[] = []): EvalTask {
  return { id, repo: { kind: "folder", path: folder }, task: `Write the answer (${id}).`, check, timeoutMs: 60_000, tags: [], requires };
}

function fixture() {
  const { root, db } = tempWorkspace({ prefix: "loopgraph-eval-" });
  const folder = join(root, "task-folder");
  mkdirSync(folder);
  writeFileSync(join(folder, "README.md"), "Write 42 to answer.txt.\n");
  const suite: EvalSuite = {
    file: join(root, "suite.yaml"),
    name: "answers",
    hash: "suite-hash",
    tasks: [
      task("writes-42", folder, {
        files: { "answer.txt": "^42\\n$" },
        command: 'test "$(cat answer.txt)" = 42',
      }),
      task("wants-43", folder, {
        command: 'test "$(cat answer.txt)" = 43 || { echo "answer.txt holds $(cat answer.txt), not 43"; exit 1; }',
      }),
      task("needs-a-program", folder, { command: "true" }, ["no-such-program-for-loopgraph"]),
    ],
  };
  const variants = [
    { label: "A", graph: "coder-review", graphFile: join(packageGraphsDir()!, "coder-review.yaml"), model: `scripted:${SCRIPT}` },
  ];
  const options = (signal = new AbortController().signal, onTrial?: EvalRunOptions["onTrial"]): EvalRunOptions => ({
    store: { db, cwd: root, env: {} },
    settings: settingsOf({ PATH: process.env.PATH }),
    noSandbox: true,
    workRoot: join(root, ".loopgraph", "evals"),
    signal,
    ...(onTrial && { onTrial }),
  });
  return { root, db, suite, variants, options };
}

const outcomes = (trials: { task: string; result?: TrialResult }[]) => trials.map((trial) => [trial.task, trial.result?.outcome]);

describe("the eval runner", () => {
  it("runs each trial as a thread of its own in a fresh copy of its task, checks it there, and stores every result", async () => {
    const { db, root, suite, variants, options } = fixture();
    const told: [string, number, number][] = [];
    const run = await startEval(
      { suite, variants, repeat: 1, concurrency: 2 },
      options(undefined, (result, done, total) => told.push([result.task, done, total])),
    );
    expect(run.record.status).toBe("finished");
    expect(outcomes(run.trials)).toEqual([
      ["writes-42", "passed"],
      ["wants-43", "check-failed"],
      ["needs-a-program", "skipped"],
    ]);
    const [passed, failed, skipped] = run.trials.map((trial) => trial.result!);
    expect(failed!.reason).toBe(
      '`test "$(cat answer.txt)" = 43 || { echo "answer.txt holds $(cat answer.txt), not 43"; exit 1; }` exited with 1: answer.txt holds 42, not 43',
    );
    expect(skipped!.reason).toBe("needs no-such-program-for-loopgraph, not found on PATH");
    expect(passed!.rounds).toBe(1);
    expect(passed!.tokens.inputTokens).toBeGreaterThan(0);
    expect(told.map(([, done, total]) => [done, total]).sort()).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
    // Each trial's workspace: the task's folder as one commit, and the run's work on top of it.
    const workspace = join(root, ".loopgraph", "evals", run.record.id, passed!.threadId);
    expect(readFileSync(join(workspace, "answer.txt"), "utf8")).toBe("42\n");
    expect(execFileSync("git", ["log", "--format=%s"], { cwd: workspace, encoding: "utf8" })).toContain(
      "eval: the starting point of task writes-42",
    );
    expect(passed!.threadId).toBe(trialThreadId(run.record.id, { task: "writes-42", variant: "A", repetition: 1 }));
    const store = { db, cwd: root, env: {} };
    await withTables(store, "read", async (tables) => {
      expect((await tables.threads.get(passed!.threadId))?.status).toBe("finished");
      expect(await tables.threads.get(skipped!.threadId)).toBeUndefined();
      expect((await tables.evals.get(run.record.id))?.status).toBe("finished");
      expect(await tables.evals.trials(run.record.id)).toEqual(run.trials);
    });

    // `threads prune --eval`: the trials' threads and the workspaces made for them, then the eval; nothing else.
    const ran = [passed!.threadId, failed!.threadId];
    const workspaces = ran.map((threadId) => join(root, ".loopgraph", "evals", run.record.id, threadId));
    const dry = await deleteEval(run.record.id, store, true);
    expect([dry.threads.map((thread) => thread.threadId), dry.workspaces]).toEqual([ran, workspaces]);
    expect(existsSync(workspaces[0]!)).toBe(true);
    const deleted = await deleteEval(run.record.id, store);
    expect(deleted.threads.map((thread) => thread.threadId)).toEqual(ran);
    expect(existsSync(join(root, ".loopgraph", "evals", run.record.id))).toBe(false);
    expect(existsSync(join(root, "task-folder", "README.md"))).toBe(true);
    await withTables(store, "read", async (tables) => {
      expect(await tables.threads.get(passed!.threadId)).toBeUndefined();
      expect(await tables.evals.get(run.record.id)).toBeUndefined();
    });
    await expect(deleteEval(run.record.id, store)).rejects.toThrow(/^no eval "e-[0-9a-f]{8}" in /);
  });

  it("stops at Ctrl-C with the finished trials' results stored, and resumes without running them again", async () => {
    const { db, root, suite, variants, options } = fixture();
    const stop = new AbortController();
    const first = await startEval(
      { suite, variants, repeat: 2, concurrency: 1 },
      options(stop.signal, () => stop.abort()),
    );
    expect(first.record.status).toBe("stopped");
    expect(outcomes(first.trials)).toEqual([
      ["writes-42", "passed"],
      ["writes-42", undefined],
      ["wants-43", undefined],
      ["wants-43", undefined],
      ["needs-a-program", undefined],
      ["needs-a-program", undefined],
    ]);
    const kept = first.trials[0]!.result!;
    const resumed = await resumeEval(first.record.id, suite, options());
    expect(resumed.record.status).toBe("finished");
    expect(resumed.trials[0]!.result).toEqual(kept);
    expect(outcomes(resumed.trials)).toEqual([
      ["writes-42", "passed"],
      ["writes-42", "passed"],
      ["wants-43", "check-failed"],
      ["wants-43", "check-failed"],
      ["needs-a-program", "skipped"],
      ["needs-a-program", "skipped"],
    ]);
    await expect(resumeEval(first.record.id, { ...suite, hash: "changed" }, options())).rejects.toThrow(
      /changed since eval e-[0-9a-f]{8} started: its trials would not be comparable; start a new eval$/,
    );
    await expect(resumeEval("e-00000000", suite, options())).rejects.toThrow(/^no eval "e-00000000" in /);
    expect(db).toContain(root);
  });

  it("re-checks a finished eval's trials against a changed graph without running anything, flagging exactly those whose path it changes", async () => {
    const { root, suite, options } = fixture();
    // A graph that routes by the task: one task's trials go to `fix`, the other's to `note`.
    const graph = (otherwise: string) => `version: 1
name: triage
nodes:
  fix: { kind: agent, prompt: prompt.md }
  note: { kind: agent, prompt: prompt.md }
edges:
  - from: START
    branches:
      - { when: { path: task, eq: "Write the answer (writes-42)." }, to: fix }
      - { when: { path: task, eq: "a task of no trial" }, to: note }
      - to: ${otherwise}
  - { from: fix, to: END }
  - { from: note, to: END }
`;
    writeFileSync(join(root, "prompt.md"), "Do the task.\n");
    writeFileSync(join(root, "triage.yaml"), graph("note"));
    writeFileSync(join(root, "triage-changed.yaml"), graph("fix"));
    const script = join(root, "done.script.yaml");
    writeFileSync(script, 'responses:\n  - content: "done"\n');
    const variants = [{ label: "A", graph: "triage.yaml", graphFile: join(root, "triage.yaml"), model: `scripted:${script}` }];
    const tasks = suite.tasks.slice(0, 2).map((one) => ({ ...one, check: { command: "true" } }));
    const run = await startEval({ suite: { ...suite, tasks }, variants, repeat: 2, concurrency: 2 }, options());
    expect(outcomes(run.trials)).toEqual([
      ["writes-42", "passed"],
      ["writes-42", "passed"],
      ["wants-43", "passed"],
      ["wants-43", "passed"],
    ]);
    const store = options().store;
    const unchanged = await recheckEval(run.record.id, join(root, "triage.yaml"), store);
    expect([unchanged.checked.length, unchanged.differing.length]).toEqual([4, 0]);
    const changed = await recheckEval(run.record.id, "triage-changed.yaml", store);
    expect(changed.variant).toBe("A");
    expect(changed.differing.map((one) => one.trial.threadId)).toEqual(run.trials.slice(2).map((trial) => trial.threadId));
    expect(changed.differing[0]!.verify.divergence).toMatchObject({ kind: "routing", recorded: ["note"], expected: ["fix"] });
    expect(changed.differing[0]!.verify.divergence!.location).toMatchObject({ line: 11 });
    await expect(recheckEval(run.record.id, "triage-changed.yaml", store, "B")).rejects.toThrow(/has no variant B: its variants are A$/);
  });
});
