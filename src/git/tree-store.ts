/**
 * Git trees of a workspace's current content, written through a throwaway index so that no
 * index a user (or another snapshot running in parallel) relies on is ever half-written.
 * The store is the workspace's own repository (objects only, nothing referenced) or a shadow
 * repository of loopgraph's, used through `--git-dir`/`--work-tree`, so no `.git` is created.
 */
import { randomUUID } from "node:crypto";
import { lstatSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { STATE_DIR } from "../project.js";
import { StreamRedactor } from "../runs/redact.js";
import { openQuarantine, type Quarantine } from "./quarantine.js";
import { git, withFilterListsReadOnce, type GitOptions } from "./run.js";

export type TreeStoreKind = "git" | "shadow";

/** Where a workspace's trees are written. */
export interface TreeStore {
  kind: TreeStoreKind;
  /** The index a throwaway index starts from, so unchanged files are not hashed again. */
  seedIndex: string;
  /** The repository's object directory (absolute). */
  objects: string;
  /** The work tree: the workspace (absolute). */
  workTree: string;
  /** The seed index is loopgraph's own, kept up to date by `writeTree` (default: only a shadow repository's is). */
  ownSeed?: boolean;
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
    for (const [key, value] of Object.entries(options.config ?? {}))
      await git(["config", "--file", join(gitDir, "config"), key, value], { cwd: workspace });
  }
  const repository = [`--git-dir=${gitDir}`, `--work-tree=${workspace}`];
  return {
    kind: "shadow",
    seedIndex: join(gitDir, "index"),
    objects: join(gitDir, "objects"),
    workTree: workspace,
    run: (args, indexFile, extra) => git(args, { cwd: workspace, indexFile, repository, ...extra }),
  };
}

/** A tree written by `writeTree`, and the blobs it holds in place of files it would not keep. */
export interface WrittenTree {
  tree: string;
  /**
   * Stand-ins (ids) of files not kept as they are: one whose content held a secret's value (kept
   * with the values redacted), or a hard-linked file (another link may be outside the workspace:
   * kept as a note).
   */
  redacted: string[];
}

/** What a hard-linked file is kept as: its content may belong to a file outside the workspace. */
const HARD_LINKED_STAND_IN = Buffer.from(
  "[loopgraph: not kept: this file has several hard links, and another may be outside the workspace]\n",
);

/**
 * Writes the workspace's current content as a tree, through a throwaway copy of the seed index.
 * New objects go through a quarantine (see quarantine.ts): no object written holds a value of
 * `secrets` (a file that does is kept with them redacted), nor the content of a hard-linked file.
 * `paths` (workspace-relative, taken literally): only these files and folders are added; the
 * others keep their entries of the seed index.
 */
export function writeTree(store: TreeStore, secrets: readonly string[] = [], paths?: readonly string[]): Promise<WrittenTree> {
  // One operation of a few git commands in a row: the repository's filters are listed once.
  return withFilterListsReadOnce(() => writeTreeOnce(store, secrets, paths));
}

async function writeTreeOnce(store: TreeStore, secrets: readonly string[], paths: readonly string[] | undefined): Promise<WrittenTree> {
  const scratch = await mkdtemp(join(tmpdir(), "loopgraph-index-"));
  const index = join(scratch, "index");
  const quarantine = await openQuarantine(store.objects);
  const env = quarantine.env;
  try {
    await copyIndex(store.seedIndex, index).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    // Naming an ignored directory in a pathspec, even to exclude it, makes `git add` fail.
    const ownStateIgnored = await store.run(["check-ignore", "-q", "--no-index", STATE_DIR], index).then(
      () => true,
      () => false,
    );
    const added = paths ? paths.map((path) => `:(literal)${path}`) : ["."];
    await store.run(["add", "--all", "--", ...added, ...(ownStateIgnored ? [] : [`:(exclude)${STATE_DIR}`])], index, { env });
    const standIns = await replaceUnfit(store, index, quarantine, secrets);
    const tree = (await store.run(["write-tree"], index, { env })).trim();
    await quarantine.release();
    // The seed keeps the stand-ins too: the originals are in no object store.
    if (store.ownSeed ?? store.kind === "shadow") await replaceFile(index, store.seedIndex);
    return { tree, redacted: [...standIns.values()] };
  } finally {
    await quarantine.discard();
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * Replaces, in the index, every new blob unfit to keep by a stand-in: a hard-linked file's by a
 * note, one holding a secret's value by its content with the values redacted. Returns original
 * id → stand-in id.
 */
async function replaceUnfit(
  store: TreeStore,
  index: string,
  quarantine: Quarantine,
  secrets: readonly string[],
): Promise<Map<string, string>> {
  const standIns = new Map<string, string>();
  const added = await quarantine.objectIds();
  if (added.length === 0) return standIns;
  const { env } = quarantine;
  const entries = (await store.run(["ls-files", "-s", "-z"], index, { env }))
    .split("\0")
    .filter(Boolean)
    .map((entry) => {
      const [info = "", path = ""] = entry.split("\t");
      const [mode = "", id = ""] = info.split(" ");
      return { mode, id, path };
    });
  const pathsOf = new Map<string, string[]>();
  for (const entry of entries) pathsOf.set(entry.id, [...(pathsOf.get(entry.id) ?? []), entry.path]);
  for (const id of added) {
    const paths = pathsOf.get(id) ?? [];
    if (paths.length === 0) continue; // not a blob of the index
    if (paths.some((path) => (lstatSync(join(store.workTree, path), { throwIfNoEntry: false })?.nlink ?? 1) > 1)) {
      standIns.set(id, await quarantine.replace(id, HARD_LINKED_STAND_IN));
      continue;
    }
    if (secrets.length === 0) continue;
    const content = await quarantine.blob(id);
    if (content === undefined) continue;
    const redactor = new StreamRedactor(secrets);
    const redacted = Buffer.concat([redactor.write(content), redactor.end()]);
    if (!redacted.equals(content)) standIns.set(id, await quarantine.replace(id, redacted));
  }
  if (standIns.size === 0) return standIns;
  const updates = entries.flatMap(({ mode, id, path }) => (standIns.has(id) ? [`${mode} ${standIns.get(id)}\t${path}\0`] : []));
  await store.run(["update-index", "-z", "--index-info"], index, { env, input: updates.join("") });
  return standIns;
}

/** Only loopgraph's own seed index (a shadow repository's) is kept up to date, atomically (snapshots may run in parallel). */
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
