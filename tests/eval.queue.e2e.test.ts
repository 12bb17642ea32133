/**
 * `loopgraph eval --queue`: trials run by the workers of a PostgreSQL store, checked in the eval's
 * process. One eval of two folder tasks (one passes its check, one fails it), killed with SIGKILL
 * while its first trial waits in the queue, then resumed with a worker running: the queued trial
 * is waited for (not queued again), the other is queued, both run on the worker and are checked
 * here on the patch their run left. Past a trial's timeout, a run no worker took is ended so that
 * none does, and a running one is sent `stop`; a run's patch that does not apply fails the trial
 * as a failed run. On a SQLite store, `--queue` is refused in one line.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFailed } from "vitest";
import { settingsOf } from "../src/config/environment-settings.js";
import { evalReportSchema } from "../src/eval/report-schema.js";
import { resumeEval, startEval } from "../src/eval/run.js";
import { deleteEval } from "../src/engine/thread-admin.js";
import { runWorker } from "../src/engine/worker.js";
import { packageGraphsDir } from "../src/package.js";
import { cleanEnv, collect, eventually, git, ROOT, runCli, spawnCli } from "./helpers/cli.js";
import { describeOnPostgres, queryRows } from "./helpers/postgres.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

const SUITE = `version: 1
name: answers
defaults: { timeout: 2m }
tasks:
  - id: writes-42
    repo: task
    task: "Write 42 to answer.txt."
    check: { files: { answer.txt: "^42\\\\n$" }, command: 'test "$(cat answer.txt)" = 42' }
  - id: wants-43
    repo: task
    task: "Write 43 to answer.txt."
    check: { command: 'test "$(cat answer.txt)" = 43 || { echo "answer.txt holds $(cat answer.txt), not 43"; exit 1; }' }
`;

/** One round: the Coder writes answer.txt (42), the Review passes it, the Judge ends the loop. */
const SCRIPT = join(ROOT, "tests/fixtures/eval/answer-42.script.yaml");

/** A suite of two tasks on one folder, and the scripted model that writes 42. */
function fixture() {
  const ws = tempWorkspace({ git: "init" });
  mkdirSync(join(ws.root, "task"));
  writeFileSync(join(ws.root, "task", "README.md"), "Write the answer to answer.txt.\n");
  writeFileSync(join(ws.root, "suite.yaml"), SUITE);
  return { ws, suite: join(ws.root, "suite.yaml"), model: `scripted:${SCRIPT}` };
}

describeOnPostgres("loopgraph eval --queue", "eval --queue", (server) => {
  it("queues each trial for the workers, waits for it across a kill -9 and a resume, and checks it here on the run's patch", async () => {
    const url = server().createDatabase("eval_queue");
    const { ws, suite, model } = fixture();
    const workerWorkspaces = join(ws.root, "worker-workspaces");
    const env = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKSPACES: workerWorkspaces, LOOPGRAPH_WORKER_CHECK_S: "1" });
    const threads = () =>
      queryRows<{ thread_id: string; status: string; pid: number; created_at: string }>(
        url,
        "SELECT thread_id, status, pid, created_at FROM loopgraph_threads ORDER BY created_at",
        // Before the eval's first write, the store has no tables yet.
      ).catch(() => []);

    // No worker yet: the first trial waits in the queue; the eval is killed there.
    const first = spawnCli(["eval", suite, "--queue", "--model", model], { cwd: ws.dir, env });
    const killed = collect(first);
    onCleanup(() => void first.kill("SIGKILL"));
    const queued = await eventually(threads, (rows) => rows.length > 0, 40_000);
    expect(queued.map((row) => row.status)).toEqual(["queued"]);
    first.kill("SIGKILL");
    expect((await killed).signal).toBe("SIGKILL");
    const evalId = (await queryRows<{ eval_id: string }>(url, "SELECT eval_id FROM loopgraph_evals"))[0]!.eval_id;

    const worker = spawnCli(["worker", "--concurrency", "2"], { env });
    let log = "";
    worker.stderr?.on("data", (chunk: Buffer) => (log += chunk.toString()));
    onTestFailed(() => console.error(`the worker's log:\n${log}`));
    const workerDone = collect(worker);
    onCleanup(() => void worker.kill("SIGKILL"));

    const resumed = await runCli(["eval", "--resume", evalId, "--json"], { cwd: ws.dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const report = evalReportSchema.parse(JSON.parse(resumed.stdout));
    expect(report.variants[0]).toMatchObject({ label: "A", run: 2, passed: 1 });
    const trials = await queryRows<{ task: string; thread_id: string; result: string }>(
      url,
      "SELECT task, thread_id, result FROM loopgraph_eval_trials ORDER BY seq",
    );
    const results = trials.map((trial) => JSON.parse(trial.result) as { outcome: string; reason?: string; rounds: number });
    expect(results.map((result) => result.outcome)).toEqual(["passed", "check-failed"]);
    expect(results[1]!.reason).toMatch(/exited with 1: answer.txt holds 42, not 43$/);
    expect(results.map((result) => result.rounds)).toEqual([1, 1]);

    // Each thread ran once, on the worker: the one queued before the kill was not queued again.
    const after = await threads();
    expect(after.map((row) => [row.thread_id, row.status, row.pid])).toEqual(
      trials.map((trial) => [trial.thread_id, "finished", worker.pid]),
    );
    expect(after[0]!.created_at).toBe(queued[0]!.created_at);
    for (const { thread_id: thread } of trials) expect(log.match(new RegExp(`: ${thread}: running$`, "gm"))).toHaveLength(1);
    const repos = await queryRows<{ thread_id: string; repo: string }>(
      url,
      "SELECT thread_id, repo FROM loopgraph_repo_workspaces ORDER BY thread_id",
    );
    const base = (task: string) => join(ws.dir, ".loopgraph", "evals", evalId, "repos", task);
    expect(repos.map((row) => row.repo).sort()).toEqual([base("wants-43"), base("writes-42")]);

    // The checks ran here, each in a fresh workspace of its own with the run's patch applied; the runs wrote in the worker's clones.
    for (const { thread_id: thread } of trials) {
      const checked = join(ws.dir, ".loopgraph", "evals", evalId, thread);
      expect(readFileSync(join(checked, "answer.txt"), "utf8")).toBe("42\n");
      expect(git(checked, "log", "--format=%s")).toMatch(/^eval: the starting point of task /);
      expect(existsSync(join(workerWorkspaces, thread, "workspace", "answer.txt"))).toBe(true);
    }
    // The worker pushed each result to its branch in the eval's repository of the task.
    expect(git(base("writes-42"), "branch", "--list", "loopgraph/*").trim()).toBe(`loopgraph/${trials[0]!.thread_id}`);

    worker.kill("SIGTERM");
    expect((await workerDone).code).toBe(0);

    // `threads prune --eval` (its function, run in the project): the threads, and the checks' workspaces and the tasks' repositories the eval made.
    const pruned = await deleteEval(evalId, { db: url, cwd: ws.dir, env: {} });
    expect(pruned.threads).toHaveLength(2);
    expect(existsSync(join(ws.dir, ".loopgraph", "evals", evalId))).toBe(false);
  }, 120_000);

  it("past a trial's timeout, ends its run if no worker took it (so none does) and stops it as `loopgraph stop` if one runs it; a patch that does not apply is a failed run", async () => {
    const url = server().createDatabase("eval_queue_timeout");
    const { ws, suite } = fixture();
    const env = { PATH: process.env.PATH, LOOPGRAPH_DB: url };
    const settings = settingsOf(env);
    // The Coder's first answer waits for a gate the test opens once the trials timed out.
    const gate = join(ws.root, "gate");
    const held = join(ws.root, "held.script.yaml");
    writeFileSync(held, readFileSync(SCRIPT, "utf8").replace("- node: coder\n", `- node: coder\n    wait_for: ${JSON.stringify(gate)}\n`));
    // One worker with room for one run: of the two trials queued at once, it takes one; the other stays queued.
    const stopWorker = new AbortController();
    const worker = runWorker({ db: url, concurrency: 1, settings, noSandbox: true, stop: stopWorker.signal, log: () => undefined });
    const task = (id: string) => ({
      id,
      repo: { kind: "folder" as const, path: join(ws.root, "task") },
      task: "Write 42.",
      check: { command: "true" },
      timeoutMs: 3_000,
      tags: [],
      requires: [],
    });
    const store = { db: url, cwd: ws.dir, env };
    const workRoot = join(ws.dir, ".loopgraph", "evals");
    const variants = [
      { label: "A", graph: "coder-review", graphFile: join(packageGraphsDir()!, "coder-review.yaml"), model: `scripted:${held}` },
    ];
    // A task id that cannot be part of a result branch's name is refused before anything is recorded.
    await expect(
      startEval(
        { suite: { file: suite, name: "bad", hash: "h", tasks: [task("one.lock")] }, variants, repeat: 1, concurrency: 1, queue: true },
        { store, settings, workRoot, signal: new AbortController().signal },
      ),
    ).rejects.toThrow(/^task "one\.lock": a queued trial's result is pushed to the branch loopgraph\/<its thread>, which this id cannot/);
    const { record, trials } = await startEval(
      {
        suite: { file: suite, name: "late", hash: "h", tasks: [task("one"), task("two")] },
        variants,
        repeat: 1,
        concurrency: 2,
        queue: true,
      },
      { store, settings, workRoot, signal: new AbortController().signal },
    );
    expect(record).toMatchObject({ status: "finished", queue: true });
    expect(trials.map((trial) => trial.result)).toMatchObject([
      { outcome: "timeout", reason: "longer than 3 s" },
      { outcome: "timeout", reason: "longer than 3 s" },
    ]);
    const threads = () =>
      queryRows<{ status: string; error: string | null }>(url, "SELECT status, error FROM loopgraph_threads ORDER BY status");
    const notTaken = "stopped by its eval before a worker took it: longer than its timeout";
    expect(await threads()).toEqual([
      { status: "interrupted", error: notTaken },
      { status: "running", error: null },
    ]);
    // The running one was sent `stop`: once its Coder answers, the loop stops there.
    writeFileSync(gate, "");
    const ended = await eventually(threads, (rows) => rows.every((row) => row.status !== "running"), 30_000);
    expect(ended).toEqual([
      { status: "interrupted", error: notTaken },
      { status: "interrupted", error: "the loop was stopped by the user (stop command)" },
    ]);
    stopWorker.abort();
    await worker;

    // A run whose patch does not apply to a fresh workspace (here: the store's record of the one never taken, made
    // finished with a patch of a file the task does not have) is a failed run that says so, when the eval checks it.
    const thread = (await queryRows<{ thread_id: string }>(url, "SELECT thread_id FROM loopgraph_threads WHERE error = $1", [notTaken]))[0]!
      .thread_id;
    const patch = "diff --git a/missing.txt b/missing.txt\n--- a/missing.txt\n+++ b/missing.txt\n@@ -1 +1 @@\n-old\n+new\n";
    // Ended at once after it was queued: a run within its time (3 s), though the eval looks at it later.
    await queryRows(url, "UPDATE loopgraph_threads SET status = 'finished', error = NULL, updated_at = created_at WHERE thread_id = $1", [
      thread,
    ]);
    await queryRows(url, "UPDATE loopgraph_repo_workspaces SET patch = $2 WHERE thread_id = $1", [thread, Buffer.from(patch)]);
    await queryRows(url, "UPDATE loopgraph_eval_trials SET result = NULL WHERE thread_id = $1", [thread]);
    const rechecked = await resumeEval(
      record.id,
      { file: suite, name: "late", hash: "h", tasks: [task("one"), task("two")] },
      {
        store,
        settings,
        workRoot,
        signal: new AbortController().signal,
      },
    );
    expect(rechecked.trials.find((trial) => trial.threadId === thread)!.result).toMatchObject({
      outcome: "run-failed",
      reason: expect.stringMatching(
        /^the run's patch does not apply to a fresh workspace: git apply [^:]*: error: missing\.txt: No such file/,
      ),
    });
  }, 60_000);
});

describe("loopgraph eval --queue without PostgreSQL", () => {
  it("is refused in one line, exit 2, before anything runs", async () => {
    const { ws, suite, model } = fixture();
    const refused = await runCli(["eval", suite, "--queue", "--model", model, "--db", ws.db], { cwd: ws.dir });
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([
      2,
      "",
      `loopgraph: --queue needs a PostgreSQL store shared with the workers: give one with --db postgres://… (or LOOPGRAPH_DB), not ${ws.db}\n`,
    ]);
  });
});
