import { realpathSync } from "node:fs";
import { readdir, rm, rmdir } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { GitError } from "../git/run.js";
import { isInside, realPathOf } from "../tools/workspace-paths.js";
import type { RewindChange } from "./rewind-plan.js";
import type { SnapshotRepository } from "./shadow-repo.js";

/**
 * Carries out a rewind: deletes what did not exist at the checkpoint (and the folders this
 * empties), then writes the other paths as they are in `tree`. Deletions go first, so a file
 * that replaced a folder (or the reverse) makes way.
 */
export async function applyRewind(repo: SnapshotRepository, tree: string, changes: RewindChange[]): Promise<void> {
  const root = realpathSync(repo.workspace);
  for (const change of changes.filter((c) => c.action === "delete")) {
    const path = resolve(root, change.path);
    // Never through a symlinked folder out of the workspace.
    if (!isInside(root, realPathOf(dirname(path)))) throw new GitError(`refusing to delete ${change.path}: it leads outside the workspace`);
    await rm(path, { force: true });
    await removeEmptyFolders(root, dirname(path));
  }
  await repo.checkout(tree, changes.filter((c) => c.action !== "delete").map((c) => c.path));
}

/** Removes `folder` and its parents, up to the workspace, while they are empty. */
async function removeEmptyFolders(root: string, folder: string): Promise<void> {
  for (let current = folder; current !== root && isInside(root, current); current = dirname(current)) {
    const entries = await readdir(current).catch(() => undefined);
    if (entries === undefined || entries.length > 0) return;
    await rmdir(current).catch(() => undefined);
  }
}
