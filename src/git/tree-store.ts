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
import { openQuarantine } from "./quarantine.js";
import { git, type GitOptions } from "./run.js";

export type TreeStoreKind = "git" | "shadow";

/** Where a workspace's trees are written. */
export interface TreeStore {
  kind: TreeStoreKind;
  /** The index a throwaway index starts from, so unchanged files are not hashed again. */
  seedIndex: string;
  /** The repository's object directory (absolute). */
  objects: string;
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
    objects: join(gitDir, "objects"),
    run: (args, indexFile, extra) => git(args, { cwd: workspace, indexFile, repository, ...extra }),
  };
}

/** A tree written by `writeTree`, and the blobs it holds in place of files that held a secret. */
export interface WrittenTree {
  tree: string;
  /** Stand-ins (ids) of files whose content held a secret's value: that content with the values redacted. */
  redacted: string[];
}

/**
 * Writes the workspace's current content as a tree, through a throwaway copy of the seed index.
 * With `secrets`, no object written holds one of their values: a file that does is stored with
 * them redacted (see quarantine.ts).
 */
export async function writeTree(store: TreeStore, secrets: readonly string[] = []): Promise<WrittenTree> {
  const scratch = await mkdtemp(join(tmpdir(), "loopgraph-index-"));
  const index = join(scratch, "index");
  const quarantine = secrets.length > 0 ? await openQuarantine(store.objects) : undefined;
  const env = quarantine?.env;
  try {
    await copyIndex(store.seedIndex, index).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    // Naming an ignored directory in a pathspec, even to exclude it, makes `git add` fail.
    const ownStateIgnored = await store.run(["check-ignore", "-q", "--no-index", STATE_DIR], index).then(
      () => true,
      () => false,
    );
    await store.run(["add", "--all", "--", ".", ...(ownStateIgnored ? [] : [`:(exclude)${STATE_DIR}`])], index, { env });
    const standIns = quarantine ? await quarantine.redactBlobs(secrets) : new Map<string, string>();
    if (standIns.size > 0) await pointIndexAt(store, index, standIns, env);
    const tree = (await store.run(["write-tree"], index, { env })).trim();
    await quarantine?.release();
    // The seed keeps the stand-ins too: the originals are in no object store.
    if (store.kind === "shadow") await replaceFile(index, store.seedIndex);
    return { tree, redacted: [...standIns.values()] };
  } finally {
    await quarantine?.discard();
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Points the index entries of the original blobs at their stand-ins. */
async function pointIndexAt(store: TreeStore, index: string, standIns: Map<string, string>, env?: Record<string, string>): Promise<void> {
  const entries = (await store.run(["ls-files", "-s", "-z"], index, { env })).split("\0").filter(Boolean);
  const updates: string[] = [];
  for (const entry of entries) {
    const [info = "", path = ""] = entry.split("\t");
    const [mode, id] = info.split(" ");
    const standIn = id === undefined ? undefined : standIns.get(id);
    if (standIn) updates.push(`${mode} ${standIn}\t${path}`);
  }
  await store.run(["update-index", "-z", "--index-info"], index, { env, input: updates.map((line) => `${line}\0`).join("") });
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
