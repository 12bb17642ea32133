/**
 * `loopgraph worker`: runs queued threads of a PostgreSQL store, up to `concurrency` at once, on
 * any number of machines. The queue brings threads to workers; the thread table decides who runs
 * one (its one-owner claim). A worker that takes a request:
 * - starts a queued thread, or takes over one whose owner is gone (killed, machine lost: its
 *   claim expired), from its last checkpoint (`resumeRun`: only the step in flight re-runs);
 * - and, while the thread runs anywhere, asks to look at it again later, so that a thread whose
 *   worker dies is taken over by another once its claim expires.
 * A thread that has ended (finished, failed, paused for an approval, stopped) is left alone.
 *
 * SIGTERM (`stop`): no new thread is taken; the runs in progress finish their step in flight and
 * stop at that checkpoint, and go back to the queue for another worker.
 *
 * An outage of the store (the server stopped or restarting) is ridden out (see StoreOutage): the
 * worker tries the queue again with backoff, and a run the outage stopped goes back to the queue
 * once the server answers, never failed for a connection lost.
 */
import { RunControl } from "@langchain/langgraph";
import { ConfigError } from "../errors.js";
import { openTables, requireThread, resolveStore, withTables, type StoreOptions } from "../store/tables.js";
import { sendCommand } from "./commands.js";
import type { Settings } from "../config/environment-settings.js";
import { postgresBackend } from "../store/postgres/backend.js";
import { isRepoWorkspace, type RepoWorkspaceRecord } from "../runs/repo-workspaces.js";
import { withoutPassword } from "../runs/url-password.js";
import { isConnectionLost, lostReason } from "../store/postgres/outage.js";
import { isRunningElsewhere, type ThreadRecord } from "../runs/thread-registry.js";
import { resultText } from "./repo-workspace.js";
import { RunQueue, type TendJob } from "./run-queue.js";
import { resumeRun } from "./runner.js";
import { StoreOutage } from "./store-outage.js";
import type { RunOutcome } from "./run-types.js";

export interface WorkerOptions {
  /** The PostgreSQL store (`--db`, else LOOPGRAPH_DB). */
  db?: string;
  /** Threads run at once by this worker. */
  concurrency: number;
  cwd?: string;
  /** The worker command's settings (src/config): every run it takes runs with them. */
  settings: Settings;
  noSandbox?: boolean;
  /** One line per thread taken and ended, for the worker's log. */
  log: (line: string) => void;
  /** Aborted: shut down gracefully (see above). */
  stop: AbortSignal;
}

/** How often, in seconds, a running thread is looked at again (LOOPGRAPH_WORKER_CHECK_S): how soon a dead worker's thread is taken over once its claim expired. */
const CHECK_S = 10;
/** How long an idle worker waits before asking the queue again. */
const IDLE_POLL_MS = 500;

interface ActiveRun {
  control: RunControl;
  done: Promise<void>;
}

export async function runWorker(options: WorkerOptions): Promise<void> {
  const { env } = options.settings;
  const cwd = options.cwd ?? process.cwd();
  const checkSeconds = positiveNumber(env.LOOPGRAPH_WORKER_CHECK_S) ?? CHECK_S;
  const where = resolveStore(options.db, env, cwd);
  if (where.backend !== postgresBackend) {
    throw new ConfigError(
      `a worker runs the queued runs of a PostgreSQL store: give it with --db postgres://… (or LOOPGRAPH_DB), not ${where.location}`,
    );
  }
  const tables = await openTables({ db: options.db, cwd, env }, "create");
  let queue: RunQueue | undefined;
  const active = new Map<string, ActiveRun>();
  let wake: () => void = () => undefined;
  const onStop = () => wake();
  options.stop.addEventListener("abort", onStop);
  const outage = new StoreOutage(options.log, options.stop);
  try {
    queue = await RunQueue.open(where.location, env, { supervise: true });
    options.log(`taking the queued runs of ${withoutPassword(where.location)}, ${options.concurrency} at once`);
    const start = (threadId: string) => {
      const control = new RunControl();
      const done = runThread(threadId, control)
        .catch((error: unknown) => options.log(`${threadId}: not run: ${(error as Error).message}`))
        .finally(() => {
          active.delete(threadId);
          wake();
        });
      active.set(threadId, { control, done });
    };
    /** The thread, stopped at a checkpoint, queued again for any worker (left alone if another process took it meanwhile). */
    const backToQueue = async (threadId: string): Promise<void> => {
      await tables.threads.requeueOwned(threadId);
      await queue!.request(threadId);
    };
    /** A run the store's outage stopped: queued again once the server answers. */
    const requeueAfterOutage = async (threadId: string, why: string): Promise<void> => {
      options.log(
        `${threadId}: stopped at its last checkpoint, the store went away${why}: it goes back to the queue once the store is back`,
      );
      await outage.retry(() => backToQueue(threadId));
      options.log(`${threadId}: back in the queue`);
    };
    /**
     * A queued thread this worker cannot run (its graph file gone, its repository not in the
     * store) was given back queued: it ends `failed` with why, else every worker would take it
     * again at each look. One that another process holds (a refused claim) is not this worker's to end.
     */
    const failUnrunnable = async (threadId: string, error: ConfigError): Promise<boolean> => {
      const reason = `not run by a worker: ${error.message.split("\n")[0]}`;
      const failed = await outage.retry(async () => {
        const claim = await tables.threads.claim(threadId);
        if (!claim?.claimed) return false;
        if (claim.before.status !== "queued") {
          await tables.threads.release(threadId, claim.before);
          return false;
        }
        await tables.threads.markEnded(threadId, "failed", reason);
        return true;
      });
      if (failed) options.log(`${threadId}: failed: ${reason}`);
      return failed;
    };
    const runThread = async (threadId: string, control: RunControl): Promise<void> => {
      options.log(`${threadId}: running`);
      let outcome: RunOutcome;
      try {
        outcome = await resumeRun({ threadId, db: options.db, cwd, settings: options.settings, control, noSandbox: options.noSandbox });
      } catch (error) {
        if (isConnectionLost(error)) return requeueAfterOutage(threadId, ` (${lostReason(error)})`);
        if (error instanceof ConfigError && (await failUnrunnable(threadId, error))) return;
        throw error;
      }
      if (outcome.storeLost) return requeueAfterOutage(threadId, "");
      if (options.stop.aborted && outcome.status === "interrupted" && !outcome.ended) {
        // Stopped by this worker's shutdown at a checkpoint: back to the queue, for another worker.
        await backToQueue(threadId);
        options.log(`${threadId}: back in the queue (this worker stops)`);
        return;
      }
      options.log(`${threadId}: ${outcome.status} (exit ${outcome.exitCode})${outcome.error ? `: ${outcome.error.split("\n")[0]}` : ""}`);
      const repo = await tables.repoWorkspaces?.get(threadId);
      if (repo?.result) options.log(`${threadId}: ${resultText(threadId, repo, repo.result, "")}`);
    };
    const tend = async (job: TendJob): Promise<void> => {
      try {
        const record = await tables.threads.get(job.threadId);
        if (!record) return;
        const mine = active.has(record.threadId);
        const free = !mine && !options.stop.aborted && takeable(record);
        if (free) start(record.threadId);
        // Looked at again while it may run (here or anywhere): a dead owner is noticed.
        if (mine || free || record.status === "running") await queue!.request(record.threadId, checkSeconds);
      } finally {
        await queue!.done(job);
      }
    };

    let failedTakes = 0;
    while (!options.stop.aborted) {
      const room = options.concurrency - active.size;
      let jobs: TendJob[] = [];
      try {
        jobs = room > 0 ? await queue.take(room) : [];
        for (const job of jobs) await tend(job);
        if (room > 0) outage.reached();
        failedTakes = 0;
      } catch (error) {
        // The store went away: waited out; a request half dealt with comes back when its job expires.
        if (!isConnectionLost(error)) throw error;
        await outage.wait(error, failedTakes++);
        continue;
      }
      if (jobs.length === 0 || active.size >= options.concurrency) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, IDLE_POLL_MS);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
    // Shutting down: each run stops at its next step boundary, checkpointed, and goes back to the queue.
    for (const run of active.values()) run.control.requestDrain("the worker is shutting down");
    await Promise.all([...active.values()].map((run) => run.done));
  } finally {
    options.stop.removeEventListener("abort", onStop);
    await queue?.close();
    await tables.close();
  }
}

/** Whether a worker may take the thread: queued, or marked running by an owner that is gone. */
function takeable(record: ThreadRecord): boolean {
  return record.status === "queued" || (record.status === "running" && !isRunningElsewhere(record));
}

function positiveNumber(text: string | undefined): number | undefined {
  const value = Number(text);
  return text !== undefined && Number.isFinite(value) && value > 0 ? value : undefined;
}

/**
 * Stops a queued run wherever it is: a thread no worker has taken is ended here, `interrupted`
 * with `why`, so that none takes it; a running one is sent `stop`, as `loopgraph stop` sends it.
 */
export async function stopQueuedRun(threadId: string, store: StoreOptions, why: string): Promise<void> {
  const ended = await withTables(store, "write", async (tables) => {
    if ((await tables.threads.get(threadId))?.status !== "queued") return false;
    const claim = await tables.threads.claim(threadId);
    if (!claim?.claimed) return false;
    if (claim.before.status === "queued") await tables.threads.markEnded(threadId, "interrupted", why);
    else await tables.threads.release(threadId, claim.before);
    return true;
  });
  if (!ended) await sendCommand(threadId, "stop", store);
}

/** How often `wait` reads the thread's record. */
const WAIT_POLL_MS = 500;

/**
 * `loopgraph wait THREAD`: follows a thread until its run ends (from any machine: it reads the
 * store), and returns its record then, with, for a run on a repository, where its result went.
 * A queued or running thread is waited for, also while its owner is gone (a worker takes it over
 * once its claim expires), and while the store's server is away (`log` says so, once). `signal`
 * ends the wait early: the record is then returned as it stands (queued or running).
 */
export async function waitForThread(
  threadId: string,
  options: StoreOptions & { log?: (line: string) => void; signal?: AbortSignal },
): Promise<{ record: ThreadRecord; repo?: RepoWorkspaceRecord }> {
  const tables = await openTables(options, "read");
  const outage = new StoreOutage(options.log ?? (() => undefined), new AbortController().signal);
  try {
    for (;;) {
      const record = await outage.retry(() => requireThread(tables, threadId));
      if ((record.status !== "queued" && record.status !== "running") || options.signal?.aborted) {
        const repo = isRepoWorkspace(record.workspace) ? await tables.repoWorkspaces?.get(record.threadId) : undefined;
        return repo ? { record, repo } : { record };
      }
      await pause(WAIT_POLL_MS, options.signal);
    }
  } finally {
    await tables.close();
  }
}

/** Waits `ms`, or less when `signal` is aborted meanwhile. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
