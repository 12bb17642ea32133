import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { rewindCommits, type CommitRewind } from "../git/commit.js";
import { isRepoWorkspace } from "../runs/repo-workspaces.js";
import { ConfigError } from "../errors.js";
import type { SnapshotRecord } from "../runs/snapshot-log.js";
import { requireThread, withStore, type Store, type StoreOptions } from "../store/store.js";
import { isRunningElsewhere } from "../runs/thread-registry.js";
import { applyRewind } from "./apply-rewind.js";
import { parentLookup, resolveCheckpoint } from "./checkpoint-order.js";
import { planRewind, type RewindChange } from "./rewind-plan.js";
import { openSnapshotRepository, SNAPSHOTS_GIT_DIR, type SnapshotRepository } from "./shadow-repo.js";

export interface RestoreOptions {
  /** List what would change, change nothing. */
  dryRun?: boolean;
  /** Also undo the commits loopgraph made for the thread (git_commit, `run --commit`) at or after the checkpoint's first step. */
  commits?: boolean;
}

export interface RestoreResult {
  threadId: string;
  /** The checkpoint's full id. */
  checkpointId: string;
  workspace: string;
  dryRun: boolean;
  /** What was (or, for a dry run, would be) changed. Empty: nothing to do. */
  changes: RewindChange[];
  /** Paths the agent changed that are left as they are: at the checkpoint they held a secret's value, which snapshots never keep. */
  withheld: string[];
  /** The first file-changing step at or after the checkpoint; undefined when none ran after it. */
  since?: { seq: number; node: string; tool: string; toolCallId: string };
  /** Commit of the snapshot repository holding the workspace as it was before this rewind. */
  savedCommit?: string;
  /** What was (would be) done to the branches loopgraph committed on for the thread since the checkpoint (`commits` only). */
  commits?: CommitRewind[];
}

/** A step the workspace can be rewound to: the checkpoint it started from, and what it changed. */
export interface SnapshotPoint {
  seq: number;
  checkpointId: string;
  /** The shortest prefix that names the checkpoint in this thread (at least 8 characters). */
  checkpointPrefix: string;
  checkpointNs: string;
  node: string;
  tool: string;
  toolCallId: string;
  /** Undefined when the step's process died before it finished. */
  paths?: string[];
  createdAt: string;
}

/**
 * Puts the files of a thread's workspace back as they were at a checkpoint (root or Coder tool
 * step; an id or a unique prefix). Only paths the agent's file-changing steps changed after it
 * are touched; `dryRun` only lists them.
 */
export async function restoreWorkspace(
  threadId: string,
  checkpointId: string,
  options: RestoreOptions & StoreOptions,
): Promise<RestoreResult> {
  return withStore(options, "read", (store) => restoreWorkspaceInStore(store, threadId, checkpointId, options));
}

/** `restoreWorkspace` with a store already open (e.g. by `replay`). */
export async function restoreWorkspaceInStore(
  store: Store,
  threadId: string,
  checkpointId: string,
  options: RestoreOptions = {},
): Promise<RestoreResult> {
  const dryRun = options.dryRun ?? false;
  const thread = await requireThread(store, threadId);
  if (isRepoWorkspace(thread.workspace)) {
    throw new ConfigError(
      `thread "${threadId}" works on a clone of a repository (${thread.workspace}) made on the workers: ` +
        `its files cannot be rewound from here; fork it without --restore-files, or get its patch with \`loopgraph patch ${threadId}\``,
    );
  }
  if (!dryRun && isRunningElsewhere(thread)) {
    throw new ConfigError(`thread "${threadId}" is running in process ${thread.pid}: stop it first, then rewind`);
  }
  const snapshots = await requireSnapshots(store, threadId);
  const target = await resolveCheckpoint(store, threadId, checkpointId);
  // The snapshot of the workspace taken now holds none of the secrets the store redacts.
  const repo = await openRepository(thread.workspace, store.secrets);
  const plan = await planRewind(
    repo,
    snapshots,
    target,
    await parentLookup(store, threadId, [target, ...snapshots.map((snapshot) => snapshot.checkpoint)]),
  );
  const result: RestoreResult = {
    threadId,
    checkpointId: target.id,
    workspace: thread.workspace,
    dryRun,
    changes: plan.changes,
    withheld: plan.withheld,
  };
  if (plan.since) {
    const { seq, node, tool, toolCallId } = plan.since;
    result.since = { seq, node, tool, toolCallId };
  }
  if (!dryRun && plan.tree && plan.current && plan.changes.length > 0) {
    result.savedCommit = await repo.keep([plan.current], `${threadId}: the workspace before a rewind to ${target.id}`);
    await applyRewind(repo, plan.tree, plan.changes);
  }
  if (options.commits && plan.since) {
    const commits = await rewindCommits(thread.workspace, threadId, plan.since.createdAt, dryRun);
    if (commits.length > 0) result.commits = commits;
  }
  return result;
}

/** The steps a thread's workspace can be rewound to, in the order they ran. */
export async function listSnapshotPoints(threadId: string, options: StoreOptions): Promise<SnapshotPoint[]> {
  return withStore(options, "read", async (store) => {
    await requireThread(store, threadId);
    const snapshots = await requireSnapshots(store, threadId);
    const prefixes = uniquePrefixes(await store.checkpoints.allCheckpointIds(threadId));
    return snapshots.map((snapshot) => ({
      seq: snapshot.seq,
      checkpointId: snapshot.checkpoint.id,
      checkpointPrefix: prefixes.get(snapshot.checkpoint.id) ?? snapshot.checkpoint.id,
      checkpointNs: snapshot.checkpoint.ns,
      node: snapshot.node,
      tool: snapshot.tool,
      toolCallId: snapshot.toolCallId,
      ...(snapshot.paths ? { paths: snapshot.paths } : {}),
      createdAt: snapshot.createdAt,
    }));
  });
}

/** What one file-changing tool step did to the workspace, as a patch. */
export interface StepDiff {
  seq: number;
  checkpointId: string;
  checkpointNs: string;
  node: string;
  tool: string;
  toolCallId: string;
  paths: string[];
  /** The change as `git apply` takes it; a redacted stand-in where a file held a secret. */
  patch: string;
  /** The patch was longer than PATCH_MAX_CHARS: this is its start. */
  cut?: boolean;
}

/** Characters of one step's patch shown. */
const PATCH_MAX_CHARS = 200_000;

/**
 * The file changes of each finished file-changing tool step of a thread (from its workspace
 * snapshots), in the order they ran; none for a thread without snapshots or whose workspace is
 * gone (`problem` says why).
 */
export async function stepDiffs(threadId: string, options: StoreOptions): Promise<{ diffs: StepDiff[]; problem?: string }> {
  return withStore(options, "read", async (store) => {
    const thread = await requireThread(store, threadId);
    const snapshots = (await store.snapshots.list(threadId)).filter(
      (snapshot) => snapshot.treeAfter !== undefined && (snapshot.paths?.length ?? 0) > 0,
    );
    if (snapshots.length === 0) return { diffs: [] };
    if (isRepoWorkspace(thread.workspace)) return { diffs: [], problem: `the workspace is a clone on the workers (${thread.workspace})` };
    let repo: SnapshotRepository;
    try {
      repo = await openRepository(thread.workspace, store.secrets);
    } catch (error) {
      return { diffs: [], problem: (error as Error).message };
    }
    const diffs: StepDiff[] = [];
    for (const snapshot of snapshots) {
      const text = (await repo.patch(snapshot.treeBefore, snapshot.treeAfter!)).toString("utf8");
      diffs.push({
        seq: snapshot.seq,
        checkpointId: snapshot.checkpoint.id,
        checkpointNs: snapshot.checkpoint.ns,
        node: snapshot.node,
        tool: snapshot.tool,
        toolCallId: snapshot.toolCallId,
        paths: snapshot.paths ?? [],
        patch: text.length > PATCH_MAX_CHARS ? text.slice(0, PATCH_MAX_CHARS) : text,
        ...(text.length > PATCH_MAX_CHARS && { cut: true }),
      });
    }
    return { diffs };
  });
}

async function requireSnapshots(store: Store, threadId: string): Promise<SnapshotRecord[]> {
  const snapshots = await store.snapshots.list(threadId);
  if (snapshots.length === 0) {
    throw new ConfigError(
      `thread "${threadId}" has no workspace snapshots: it changed no files through its tools, it ran before loopgraph took snapshots, or git was missing (see the warnings of its run)`,
    );
  }
  return snapshots;
}

async function openRepository(workspace: string, secrets: readonly string[]): Promise<SnapshotRepository> {
  if (!statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) throw new ConfigError(`the thread's workspace ${workspace} is gone`);
  if (!existsSync(join(workspace, SNAPSHOTS_GIT_DIR, "HEAD"))) {
    throw new ConfigError(`the snapshot repository ${SNAPSHOTS_GIT_DIR} is missing in ${workspace}: was .loopgraph/ deleted?`);
  }
  return openSnapshotRepository(workspace, { create: false, secrets });
}

const MIN_PREFIX = 8;

/** Each id's shortest prefix (at least MIN_PREFIX characters) that no other id starts with. */
export function uniquePrefixes(ids: string[]): Map<string, string> {
  const sorted = [...new Set(ids)].sort();
  const common = (a: string | undefined, b: string): number => {
    let n = 0;
    while (a !== undefined && n < a.length && n < b.length && a[n] === b[n]) n++;
    return n;
  };
  return new Map(
    sorted.map((id, i) => {
      const length = Math.max(MIN_PREFIX, common(sorted[i - 1], id) + 1, common(sorted[i + 1], id) + 1);
      return [id, id.slice(0, length)];
    }),
  );
}
