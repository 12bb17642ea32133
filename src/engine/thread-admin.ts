/**
 * `loopgraph threads list | delete | prune`: the store's threads filtered, and deleted with
 * everything the store holds of them (checkpoints, inbox, recordings, snapshot log) and their
 * tool-output artifacts and its coders' branches in the workspace. A thread a live process runs is never deleted.
 */
import { lstatSync, readdirSync, rmdirSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { ConfigError } from "../errors.js";
import { projectRoot, STATE_DIR } from "../project.js";
import { requireEval, withTables, type StoreOptions } from "../store/tables.js";
import type { StoreTables } from "../runs/tables.js";
import { isRunningElsewhere, ownerText, type ThreadRecord } from "../runs/thread-registry.js";
import { listThreads, type ThreadSummary } from "./thread-list.js";
import { pruneBranches, removeBranchWorktrees } from "../git/worktrees/index.js";

export interface ThreadFilter {
  status?: string;
  graph?: string;
  limit?: number;
}

/** The store's threads (newest first, as readers see them), filtered by status and graph name, at most `limit`. */
export async function filteredThreads(filter: ThreadFilter, options: StoreOptions): Promise<ThreadSummary[]> {
  const threads = (await listThreads(options)).filter(
    (thread) =>
      (filter.status === undefined || thread.status === filter.status) && (filter.graph === undefined || thread.graphName === filter.graph),
  );
  return filter.limit === undefined ? threads : threads.slice(0, filter.limit);
}

export interface DeletedThread {
  threadId: string;
  /** The tool-output artifacts folder removed with it, if there was one. */
  artifacts?: string;
  /** Its coders' branches deleted with it (`workspace: worktree`), if it had any. */
  branches?: string[];
}

/**
 * Deletes threads, each with its linked loop thread (`<thread>.loop`, a chat's) if any. An unknown
 * thread or one a live process runs is a ConfigError (exit 2) before anything is deleted.
 */
export async function deleteThreads(threadIds: readonly string[], options: StoreOptions): Promise<DeletedThread[]> {
  return withTables(options, "write", async (store) => {
    for (const threadId of threadIds) {
      const record = await store.threads.get(threadId);
      if (!record) throw new ConfigError(`no thread "${threadId}" in ${store.path}: see loopgraph threads list`);
      if (isRunningElsewhere(record)) throw runningError(record);
    }
    const deleted: DeletedThread[] = [];
    for (const threadId of threadIds) {
      for (const id of [threadId, `${threadId}.loop`]) {
        if (deleted.some((done) => done.threadId === id)) continue;
        const one = await deleteOne(store, id);
        if (one) deleted.push(one);
      }
    }
    return deleted;
  });
}

async function deleteOne(store: StoreTables, threadId: string): Promise<DeletedThread | undefined> {
  const result = await store.threads.delete(threadId);
  if (!result) return undefined;
  if (!result.deleted) throw runningError(result.holder);
  const artifacts = artifactsOf(result.record);
  const branches = await branchesOf(result.record);
  return { threadId, ...(artifacts && { artifacts }), ...(branches.length > 0 && { branches }) };
}

/**
 * Deletes the thread's coders' branches (`loopgraph/<thread>/…`) and the worktree folders a paused
 * run left; the branches' names. A workspace gone, or whose branches cannot be read, keeps them.
 */
async function branchesOf(record: ThreadRecord): Promise<string[]> {
  if (!record.workspace.startsWith("/") || !lstatSync(record.workspace, { throwIfNoEntry: false })?.isDirectory()) return [];
  try {
    await removeBranchWorktrees(record.workspace, record.threadId);
    return await pruneBranches(record.workspace, record.threadId);
  } catch {
    return [];
  }
}

function runningError(record: ThreadRecord): ConfigError {
  return new ConfigError(
    `thread "${record.threadId}" is running in ${ownerText(record)}: stop it first (loopgraph stop ${record.threadId}), then delete it`,
  );
}

/** Removes the thread's artifacts folder in its workspace (a real folder only: a link is left alone); its path when one was removed. */
function artifactsOf(record: ThreadRecord): string | undefined {
  if (!record.workspace.startsWith("/")) return undefined;
  const folder = join(record.workspace, STATE_DIR, "artifacts", record.threadId);
  if (!lstatSync(folder, { throwIfNoEntry: false })?.isDirectory()) return undefined;
  rmSync(folder, { recursive: true, force: true });
  return folder;
}

const DURATION = /^(\d+)\s*(s|m|h|d|w)$/;
const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `30d`, `12h`, `2w`… as milliseconds; undefined when it is not one. */
export function parseAge(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  return match ? Number(match[1]) * UNIT_MS[match[2]!]! : undefined;
}

/** The threads not changed for `olderThanMs` (and of `filter`), that no live process runs: what `prune` deletes. */
export async function threadsToPrune(
  olderThanMs: number,
  filter: ThreadFilter,
  options: StoreOptions,
  now = Date.now(),
): Promise<ThreadSummary[]> {
  const threads = await filteredThreads({ ...filter, limit: undefined }, options);
  return threads.filter(
    (thread) => thread.status !== "running" && now - Date.parse(thread.updatedAt) > olderThanMs && !thread.threadId.endsWith(".loop"),
  );
}

export interface DeletedEval {
  evalId: string;
  threads: DeletedThread[];
  /** The trials' workspaces removed with them. */
  workspaces: string[];
}

/**
 * `threads prune --eval ID`: deletes an eval's trials' threads (as `deleteThreads` does), their
 * workspaces (only folders loopgraph made for them: `.loopgraph/evals/<eval>/<thread>`), and the
 * eval. A trial a live process runs stops it all before anything is deleted.
 */
export async function deleteEval(evalId: string, options: StoreOptions, dryRun = false): Promise<DeletedEval> {
  const { queued, trials, records } = await withTables(options, "read", async (store) => {
    const record = await requireEval(store, evalId);
    const stored = await store.evals.trials(evalId);
    const threads = await Promise.all(stored.map((trial) => store.threads.get(trial.threadId)));
    return { queued: record.queue, trials: stored, records: threads.filter((thread): thread is ThreadRecord => thread !== undefined) };
  });
  // A queued eval's runs worked in the workers' clones; the eval made its checks' workspaces and its folder tasks' repositories in the project.
  const evalFolder = join(projectRoot(options.cwd ?? process.cwd()), STATE_DIR, "evals", evalId);
  const workspaces = (
    queued
      ? [...trials.map((trial) => join(evalFolder, trial.threadId)), join(evalFolder, "repos")]
      : trials.map((trial) => records.find((thread) => thread.threadId === trial.threadId)?.workspace)
  ).filter((workspace): workspace is string => workspace !== undefined && isTrialWorkspace(workspace, evalId));
  if (dryRun) return { evalId, threads: records.map((thread) => ({ threadId: thread.threadId })), workspaces };
  const threads =
    records.length > 0
      ? await deleteThreads(
          records.map((thread) => thread.threadId),
          options,
        )
      : [];
  for (const workspace of workspaces) rmSync(workspace, { recursive: true, force: true });
  const folder = workspaces[0] && dirname(workspaces[0]);
  if (folder && readdirSync(folder).length === 0) rmdirSync(folder);
  await withTables(options, "write", (store) => store.evals.delete(evalId));
  return { evalId, threads, workspaces };
}

/** Whether `workspace` is a folder the eval runner made for a trial of `evalId`, or its folder tasks' repositories (never a user's own folder). */
function isTrialWorkspace(workspace: string, evalId: string): boolean {
  const evalFolder = dirname(workspace);
  return (
    basename(evalFolder) === evalId &&
    basename(dirname(evalFolder)) === "evals" &&
    basename(dirname(dirname(evalFolder))) === STATE_DIR &&
    (basename(workspace).startsWith(`${evalId}-`) || basename(workspace) === "repos") &&
    lstatSync(workspace, { throwIfNoEntry: false })?.isDirectory() === true
  );
}
