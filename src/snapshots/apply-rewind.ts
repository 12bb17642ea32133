import { realpathSync } from "node:fs";
import { lstat, readdir, rm, rmdir } from "node:fs/promises";
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
  const deletes = changes.filter((c) => c.action === "delete").map((c) => c.path);
  const writes = changes.filter((c) => c.action !== "delete").map((c) => c.path);
  await checkNothingInTheWay(root, writes, new Set(deletes));
  for (const relative of deletes) {
    const path = resolve(root, relative);
    // Never through a symlinked folder out of the workspace.
    if (!isInside(root, realPathOf(dirname(path)))) throw new GitError(`refusing to delete ${relative}: it leads outside the workspace`);
    await rm(path, { force: true });
    await removeEmptyFolders(root, dirname(path));
  }
  await repo.checkout(tree, writes);
}

/**
 * A file to write where a folder now is: git would clear the folder, so every file in it must
 * be one the rewind deletes anyway.
 */
async function checkNothingInTheWay(root: string, writes: string[], deletes: Set<string>): Promise<void> {
  for (const path of writes) {
    // Nothing there (or nothing readable) is nothing in the way.
    const info = await lstat(resolve(root, path)).catch(() => undefined);
    if (!info?.isDirectory()) continue;
    const kept = (await filesUnder(root, path)).some((file) => !deletes.has(file));
    if (kept) throw new GitError(`cannot restore ${path}: the folder now there holds files the agent did not write; move it away first`);
  }
}

/** Workspace-relative paths of the files (not folders) under a folder. */
async function filesUnder(root: string, folder: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(resolve(root, folder), { withFileTypes: true })) {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory()) files.push(...(await filesUnder(root, path)));
    else files.push(path);
  }
  return files;
}

/** Removes `folder` and its parents, up to the workspace, while they are empty. */
async function removeEmptyFolders(root: string, folder: string): Promise<void> {
  for (let current = folder; current !== root && isInside(root, current); current = dirname(current)) {
    // A folder gone or unreadable is left as it is: removing empty folders is tidying, not the rewind.
    const entries = await readdir(current).catch(() => undefined);
    if (entries === undefined || entries.length > 0) return;
    await rmdir(current).catch(() => undefined);
  }
}
