/**
 * `eval --queue`: a trial run by the PostgreSQL store's workers (`loopgraph worker`) instead of in
 * the eval's process. Each trial is queued as a run of its own thread on a repository the workers
 * clone: a git task's, or, for a folder task, a repository the eval makes of the folder once,
 * under `<workRoot>/<eval>/repos/<task>`. The eval waits for the run to end (its timeout counts
 * from when it was queued; past it the run is stopped), then checks it here: in a fresh workspace
 * made as a local trial's, with the patch the run left in the store applied.
 */
import { randomBytes } from "node:crypto";
import { existsSync, renameSync } from "node:fs";
import { join } from "node:path";
import { RunQueue } from "../engine/run-queue.js";
import { enqueueRun, requireQueueStore } from "../engine/runner.js";
import { stopQueuedRun, waitForThread } from "../engine/worker.js";
import { git } from "../git/run.js";
import type { RepoWorkspaceRecord } from "../runs/repo-workspaces.js";
import { withTables } from "../store/store.js";
import { deadline, endedOutcome, freshWorkspace, judgeRun, startJob, timedOutResult, type TrialPlan } from "./trial.js";
import type { EvalTask, TrialResult } from "./types.js";

/** The folder tasks' repositories this process made or found, by path: each made once, whatever runs at once. */
const baseRepos = new Map<string, Promise<string>>();

/** A queued trial: its result, or undefined when the eval was stopped (Ctrl-C) before it had one (its run goes on). */
export async function queuedTrial(plan: TrialPlan): Promise<TrialResult | undefined> {
  const { trial, task, options } = plan;
  const queuedAt = await queueOnce(plan);
  const waiting = deadline(queuedAt + task.timeoutMs);
  let ended;
  try {
    const job = startJob(plan, queuedAt, waiting.signal);
    const { record, repo } = await waitForThread(trial.threadId, { ...options.store, signal: job.signal });
    if (options.signal.aborted) return undefined;
    if (record.status === "queued" || record.status === "running") {
      await stopQueuedRun(trial.threadId, options.store, "stopped by its eval before a worker took it: longer than its timeout");
      return timedOutResult(job);
    }
    ended = { record: { ...record, status: record.status }, repo };
  } finally {
    waiting.clear();
  }
  // The run took from its queueing to its end, whenever this process saw it end (an eval resumed late); the check has the rest.
  const runMs = Math.max(0, Date.parse(ended.record.updatedAt) - queuedAt);
  const checking = deadline(Date.now() + task.timeoutMs - runMs);
  try {
    const job = startJob(plan, Date.now() - runMs, checking.signal);
    const outcome = await endedOutcome(options, ended.record);
    const workspace = join(options.workRoot, plan.evalId, trial.threadId);
    return await judgeRun(job, outcome, workspace, () => checkedOut(task, workspace, ended.repo));
  } finally {
    checking.clear();
  }
}

/**
 * Queues the trial's run, unless an earlier process of the eval did (`eval --resume`): then its
 * request is made again, in case that process stopped between recording the thread and queueing
 * it (a request already waiting is not doubled). Returns when the run was queued.
 */
async function queueOnce({ evalId, trial, task, variant, options }: TrialPlan): Promise<number> {
  const thread = await withTables(options.store, "read", (tables) => tables.threads.get(trial.threadId));
  if (thread) {
    if (thread.status === "queued") {
      const queue = await RunQueue.open(requireQueueStore(options.store).location, options.settings.env);
      await queue.request(thread.threadId).finally(() => queue.close());
    }
    return Date.parse(thread.createdAt);
  }
  const source =
    task.repo.kind === "folder"
      ? { repo: await baseRepo(task, join(options.workRoot, evalId, "repos", task.id)) }
      : { repo: task.repo.url, ...(task.repo.ref !== undefined && { ref: task.repo.ref }) };
  const queuedAt = Date.now();
  await enqueueRun({
    graph: variant.graphFile,
    task: task.task,
    threadId: trial.threadId,
    db: options.store.db,
    cwd: options.store.cwd,
    settings: options.settings,
    approval: "auto",
    ...source,
    ...(variant.model !== undefined && { model: variant.model }),
  });
  return queuedAt;
}

/** A folder task's repository for the workers: its folder copied and committed as a local trial's, made once per eval and kept. */
function baseRepo(task: EvalTask, dir: string): Promise<string> {
  let made = baseRepos.get(dir);
  if (!made) {
    made = (async () => {
      // Made aside and moved in place: a repository there is whole, the one the eval's runs started from.
      if (!existsSync(dir)) {
        const scratch = `${dir}.${randomBytes(4).toString("hex")}.tmp`;
        await freshWorkspace(task, scratch);
        renameSync(scratch, dir);
      }
      return dir;
    })();
    baseRepos.set(dir, made);
    made.catch(() => baseRepos.delete(dir));
  }
  return made;
}

/**
 * The trial's workspace for its check: the task's starting point made as a local trial's (a git
 * task's at the commit its run started from), the run's patch applied. Returns why not when the
 * patch does not apply.
 */
async function checkedOut(task: EvalTask, workspace: string, repo: RepoWorkspaceRecord | undefined): Promise<string | undefined> {
  if (!repo) return "its thread holds no repository workspace: nothing to check";
  await freshWorkspace(task.repo.kind === "git" ? { ...task, repo: { ...task.repo, ref: repo.commit } } : task, workspace);
  if (!repo.patch || repo.patch.length === 0) return undefined;
  try {
    await git(["apply", "--binary", "--whitespace=nowarn", "-"], { cwd: workspace, input: repo.patch });
    return undefined;
  } catch (error) {
    return `the run's patch does not apply to a fresh workspace: ${(error as Error).message.split("\n")[0]}`;
  }
}
