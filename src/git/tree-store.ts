/**
 * Git trees of a workspace's current content, written through a throwaway index so that no
 * index a user (or another snapshot running in parallel) relies on is ever half-written.
 * The store is the workspace's own repository (objects only, nothing referenced) or a shadow
 * repository of loopgraph's, used through `--git-dir`/`--work-tree`, so no `.git` is created.
 */
import { randomUUID } from "node:crypto";
import { copyFile, mkdir, mkdtemp, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { STATE_DIR } from "../runs/state-dir.js";
import { git, type GitOptions } from "./run.js";

export type TreeStoreKind = "git" | "shadow";

/** Where a workspace's trees are written. */
export interface TreeStore {
  kind: TreeStoreKind;
  /** The index a throwaway index starts from, so unchanged files are not hashed again. */
  seedIndex: string;
  run(args: string[], indexFile?: string, options?: Pick<GitOptions, "env" | "input">): Promise<string>;
}

export interface ShadowRepositoryOptions {
  /** The repository's directory (absolute). */
  gitDir: string;
  /** Lines of its `info/exclude`, beside the workspace's own `.gitignore` files. */
  excludes: string[];
  /** Lines of its `info/attributes`, which take precedence over the workspace's `.gitattributes`. */
  attributes?: string[];
  /** `git config` settings written when it is created. */
  config?: Record<string, string>;
}

/** Opens, and creates on first use, a shadow repository whose work tree is the workspace. */
export async function shadowTreeStore(workspace: string, options: ShadowRepositoryOptions): Promise<TreeStore> {
  const { gitDir } = options;
  const exists = await stat(join(gitDir, "HEAD")).then(
    () => true,
    () => false,
  );
  if (!exists) {
    await mkdir(gitDir, { recursive: true });
    await git(["init", "--bare", "--quiet", gitDir], { cwd: workspace });
    await writeFile(join(gitDir, "info", "exclude"), `${options.excludes.join("\n")}\n`);
    if (options.attributes) await writeFile(join(gitDir, "info", "attributes"), `${options.attributes.join("\n")}\n`);
    for (const [key, value] of Object.entries(options.config ?? {})) await git(["config", "--file", join(gitDir, "config"), key, value], { cwd: workspace });
  }
  const repository = [`--git-dir=${gitDir}`, `--work-tree=${workspace}`];
  return {
    kind: "shadow",
    seedIndex: join(gitDir, "index"),
    run: (args, indexFile, extra) => git(args, { cwd: workspace, indexFile, repository, ...extra }),
  };
}

/** Writes the workspace's current content as a tree, through a throwaway copy of the seed index. */
export async function writeTree(store: TreeStore): Promise<string> {
  const scratch = await mkdtemp(join(tmpdir(), "loopgraph-index-"));
  const index = join(scratch, "index");
  try {
    await copyIndex(store.seedIndex, index).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    // Naming an ignored directory in a pathspec, even to exclude it, makes `git add` fail.
    const ownStateIgnored = await store.run(["check-ignore", "-q", "--no-index", STATE_DIR], index).then(
      () => true,
      () => false,
    );
    await store.run(["add", "--all", "--", ".", ...(ownStateIgnored ? [] : [`:(exclude)${STATE_DIR}`])], index);
    const tree = (await store.run(["write-tree"], index)).trim();
    if (store.kind === "shadow") await replaceFile(index, store.seedIndex);
    return tree;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Only a shadow repository's own index is kept up to date, atomically (snapshots may run in parallel). */
async function replaceFile(source: string, target: string): Promise<void> {
  const temporary = `${target}.${randomUUID()}.tmp`;
  await copyIndex(source, temporary);
  await rename(temporary, target);
}

/**
 * Copies an index file with its modification time. git trusts an entry whose file is older than
 * the index and compares the content of one that is not ("racy git"): a copy stamped with the
 * time of copying would make a file changed in the same clock tick as its entry, to the same size,
 * look unchanged.
 */
export async function copyIndex(source: string, target: string): Promise<void> {
  const { atime, mtime } = await stat(source);
  await copyFile(source, target);
  await utimes(target, atime, mtime);
}
