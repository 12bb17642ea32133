import { lstat } from "node:fs/promises";
import { join } from "node:path";
import type { SnapshotRecord, StepCheckpoint } from "../runs/snapshot-log.js";
import { isAtOrAfter, type ParentLookup } from "./checkpoint-order.js";
import type { SnapshotRepository, TreeChange } from "./shadow-repo.js";

/** restore: the file differs from the checkpoint's; delete: it did not exist then; recreate: it exists no more. */
export type RewindAction = "restore" | "delete" | "recreate";

export interface RewindChange {
  action: RewindAction;
  path: string;
}

export interface RewindPlan {
  /** The first file-changing step at or after the checkpoint; undefined when none ran after it. */
  since?: SnapshotRecord;
  /** The workspace's tree at the checkpoint: the snapshot taken before that step. */
  tree?: string;
  /** The workspace's tree now. */
  current?: string;
  /** What putting the agent's files back takes, by path. */
  changes: RewindChange[];
  /** Paths left as they are: their content at the checkpoint held a secret's value, which snapshots never keep. */
  withheld: string[];
}

/**
 * What rewinding the workspace to `target` changes. The files at a checkpoint are those the
 * first file-changing step at or after it found; only the paths the agent's steps changed since
 * then are put back (to that content and mode, or deleted when they did not exist): files the
 * agent never touched, whatever happened to them, are left alone.
 */
export async function planRewind(
  repo: SnapshotRepository,
  snapshots: SnapshotRecord[],
  target: StepCheckpoint,
  parents: ParentLookup,
): Promise<RewindPlan> {
  const since = snapshots.find((snapshot) => isAtOrAfter(snapshot.checkpoint, target, parents));
  if (!since) return { changes: [], withheld: [] };
  const current = await repo.capture();
  const steps = snapshots.filter((snapshot) => snapshot.seq >= since.seq);
  const touched = await touchedPaths(repo, steps, current);
  const differences = (await repo.diff(since.treeBefore, current)).filter((change) => touched.has(change.path));
  const planned = await Promise.all(differences.map((change) => toRewindChange(repo.workspace, change)));
  const withheld = await repo.withheld(
    since.treeBefore,
    planned.filter((change) => change.action !== "delete").map((change) => change.path),
  );
  const changes = planned.filter((change) => !withheld.includes(change.path));
  return {
    since,
    tree: since.treeBefore,
    current,
    changes: changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
    withheld: withheld.sort(),
  };
}

/**
 * Paths the steps changed. A step whose process died before its "after" snapshot is taken to
 * run until the next step's "before" snapshot (or until now, for the last one).
 */
async function touchedPaths(repo: SnapshotRepository, steps: SnapshotRecord[], current: string): Promise<Set<string>> {
  const touched = new Set<string>();
  for (const [index, step] of steps.entries()) {
    const paths = step.paths ?? (await repo.diff(step.treeBefore, steps[index + 1]?.treeBefore ?? current)).map((change) => change.path);
    for (const path of paths) touched.add(path);
  }
  return touched;
}

/** The diff runs from the checkpoint's tree to the current one: A is new since, D is gone since. */
async function toRewindChange(workspace: string, change: TreeChange): Promise<RewindChange> {
  if (change.status === "A") return { action: "delete", path: change.path };
  // Gone from the snapshot of now, but maybe only ignored now: then it is still on disk.
  const onDisk =
    change.status === "M" ||
    (await lstat(join(workspace, change.path)).then(
      () => true,
      () => false,
    ));
  return { action: onDisk ? "restore" : "recreate", path: change.path };
}
