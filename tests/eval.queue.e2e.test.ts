/**
 * `loopgraph eval --queue`: trials run by the workers of a PostgreSQL store, checked in the eval's
 * process. One eval of two folder tasks (one passes its check, one fails it), killed with SIGKILL
 * while its first trial waits in the queue, then resumed with a worker running: the queued trial
 * is waited for (not queued again), the other is queued, both run on the worker and are checked
 * here on the patch their run left. A trial past its timeout before any worker took it is ended
 * so that none does. On a SQLite store, `--queue` is refused in one line.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { settingsOf } from "../src/config/environment-settings.js";
import { evalReportSchema } from "../src/eval/report-schema.js";
import { startEval } from "../src/eval/run.js";
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

/** A suite of two tasks on one folder, and the scripted model that writes 42. */
function fixture() {
  const ws = tempWorkspace({ git: "init" });
  mkdirSync(join(ws.root, "task"));
  writeFileSync(join(ws.root, "task", "README.md"), "Write the answer to answer.txt.\n");
  writeFileSync(join(ws.root, "suite.yaml"), SUITE);
  // One round: the Coder writes answer.txt (42), the Review passes it, the Judge ends the loop.
  return { ws, suite: join(ws.root, "suite.yaml"), model: `scripted:${join(ROOT, "tests/fixtures/eval/answer-42.script.yaml")}` };
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

    const listed = await runCli(["eval", "--list", "--json"], { cwd: ws.dir, env });
    expect(JSON.parse(listed.stdout)).toMatchObject([{ id: evalId, status: "finished", queue: true }]);
    worker.kill("SIGTERM");
    expect((await workerDone).code).toBe(0);
  }, 120_000);

  it("ends a trial's run that no worker took before its timeout, so that none takes it, and records the timeout", async () => {
    const url = server().createDatabase("eval_queue_timeout");
    const { ws, suite, model } = fixture();
    const env = { PATH: process.env.PATH, LOOPGRAPH_DB: url };
    const task = {
      id: "late",
      repo: { kind: "folder" as const, path: join(ws.root, "task") },
      task: "Write 42.",
      check: { command: "true" },
    };
    const { record, trials } = await startEval(
      {
        suite: { file: suite, name: "late", hash: "h", tasks: [{ ...task, timeoutMs: 1_000, tags: [], requires: [] }] },
        variants: [{ label: "A", graph: "coder-review", graphFile: join(packageGraphsDir()!, "coder-review.yaml"), model }],
        repeat: 1,
        concurrency: 1,
        queue: true,
      },
      {
        store: { db: url, cwd: ws.dir, env },
        settings: settingsOf(env),
        workRoot: join(ws.dir, ".loopgraph", "evals"),
        signal: new AbortController().signal,
      },
    );
    expect(record).toMatchObject({ status: "finished", queue: true });
    expect(trials[0]!.result).toMatchObject({ outcome: "timeout", reason: "longer than 1 s" });
    const [thread] = await queryRows<{ status: string; error: string }>(url, "SELECT status, error FROM loopgraph_threads");
    expect(thread).toEqual({ status: "interrupted", error: "stopped by its eval before a worker took it: longer than its timeout" });
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
