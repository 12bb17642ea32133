/**
 * Workspace snapshots for the Review: a baseline taken when a round begins, and the real
 * `git diff` of the workspace since then (new untracked files and deletions included,
 * `.gitignore` respected).
 *
 * A snapshot is a git tree written through a throwaway index (`GIT_INDEX_FILE`), so the
 * user's index, HEAD, branches, stash and working tree are never touched; only unreferenced
 * objects are added to the object store (git's gc prunes them). A workspace that is not in a
 * git repository gets a shadow repository at `.loopgraph/shadow.git`, used through
 * `--git-dir`/`--work-tree`, so no `.git` is ever created in it. `.loopgraph/` is never part of
 * a snapshot.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { copyFile, mkdir, mkdtemp, rename, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { LoopgraphError } from "../errors.js";
import { STATE_DIR } from "../runs/state-dir.js";

const SHADOW_GIT_DIR = join(STATE_DIR, "shadow.git");
/** Left out of shadow snapshots: our own state, and dependencies, which a workspace without git rarely ignores. */
const SHADOW_EXCLUDES = [`/${STATE_DIR}/`, "node_modules/"];
const MAX_GIT_OUTPUT_BYTES = 256 * 1024 * 1024;

/** Variables that would point git at another repository, index or work tree than the workspace's. */
const REPOSITORY_ENV = [
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_INDEX_FILE",
  "GIT_COMMON_DIR",
  "GIT_OBJECT_DIRECTORY",
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_NAMESPACE",
  "GIT_PREFIX",
];

type StoreKind = "git" | "shadow";

/** Where a workspace's snapshots are written: its own repository, or the shadow one. */
interface SnapshotStore {
  kind: StoreKind;
  /** The index a throwaway index starts from, so unchanged files are not hashed again. */
  seedIndex: string;
  run(args: string[], indexFile?: string): Promise<string>;
}

/** git could not snapshot or diff the workspace. */
export class GitError extends LoopgraphError {
  override name = "GitError";
}

/** One file of a diff, from `git diff --numstat`; binary files have no line counts. */
export interface FileChange {
  path: string;
  added?: number;
  removed?: number;
}

export interface WorkspaceChanges {
  /** `git diff` output: the patch, paths relative to the workspace. */
  patch: string;
  files: FileChange[];
}

/** A snapshot of the workspace as it is now, as an opaque id (`git:<tree>` or `shadow:<tree>`). */
export async function captureBaseline(workspace: string): Promise<string> {
  const store = await openStore(workspace);
  return `${store.kind}:${await writeTree(store)}`;
}

/** The `git diff` of the workspace since `baseline` (a `captureBaseline` id). */
export async function diffSinceBaseline(workspace: string, baseline: string): Promise<string> {
  return (await changesSinceBaseline(workspace, baseline)).patch;
}

/** The diff since `baseline`, with the changed files and their line counts. */
export async function changesSinceBaseline(workspace: string, baseline: string): Promise<WorkspaceChanges> {
  const { kind, tree } = parseBaseline(baseline);
  const store = await openStore(workspace, kind);
  const current = await writeTree(store);
  const range = [tree, current, "--", ".", `:(exclude)${STATE_DIR}`];
  const [patch, numstat] = await Promise.all([
    // Explicit prefixes: a user's diff.noprefix or diff.mnemonicPrefix would change the headers.
    store.run(["diff", "--no-color", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/", "--relative", ...range]),
    store.run(["diff", "--numstat", "-z", "--no-renames", "--relative", ...range]),
  ]);
  return { patch, files: parseNumstat(numstat) };
}

function parseBaseline(baseline: string): { kind: StoreKind; tree: string } {
  const match = /^(git|shadow):([0-9a-f]{40,64})$/.exec(baseline);
  if (!match) throw new GitError(`invalid workspace baseline "${baseline}" (expected git:<tree> or shadow:<tree>)`);
  return { kind: match[1] as StoreKind, tree: match[2]! };
}

/** `added\tremoved\tpath\0` records; `-` counts mean binary. */
function parseNumstat(output: string): FileChange[] {
  return output
    .split("\0")
    .filter((record) => record.length > 0)
    .map((record) => {
      const [added = "-", removed = "-", ...path] = record.split("\t");
      return added === "-" ? { path: path.join("\t") } : { path: path.join("\t"), added: Number(added), removed: Number(removed) };
    });
}

/**
 * The workspace's store: `kind` forces one (a baseline is read where it was written, even if the
 * workspace became a repository since); otherwise its repository, else the shadow one.
 */
async function openStore(workspace: string, kind?: StoreKind): Promise<SnapshotStore> {
  const info = await stat(workspace).catch(() => undefined);
  if (!info?.isDirectory()) throw new GitError(`workspace not found: ${workspace}`);
  const inRepository = kind === undefined ? await isInsideWorkTree(workspace) : kind === "git";
  return inRepository ? repositoryStore(workspace) : shadowStore(workspace);
}

async function isInsideWorkTree(workspace: string): Promise<boolean> {
  try {
    return (await git(["rev-parse", "--is-inside-work-tree"], { cwd: workspace })).trim() === "true";
  } catch {
    return false;
  }
}

async function repositoryStore(workspace: string): Promise<SnapshotStore> {
  const index = (await git(["rev-parse", "--git-path", "index"], { cwd: workspace })).trim();
  return { kind: "git", seedIndex: resolve(workspace, index), run: (args, indexFile) => git(args, { cwd: workspace, indexFile }) };
}

async function shadowStore(workspace: string): Promise<SnapshotStore> {
  const gitDir = join(workspace, SHADOW_GIT_DIR);
  const exists = await stat(join(gitDir, "HEAD")).then(
    () => true,
    () => false,
  );
  if (!exists) {
    await mkdir(gitDir, { recursive: true });
    await git(["init", "--bare", "--quiet", gitDir], { cwd: workspace });
    await writeFile(join(gitDir, "info", "exclude"), `${SHADOW_EXCLUDES.join("\n")}\n`);
  }
  const repository = [`--git-dir=${gitDir}`, `--work-tree=${workspace}`];
  return { kind: "shadow", seedIndex: join(gitDir, "index"), run: (args, indexFile) => git(args, { cwd: workspace, indexFile, repository }) };
}

/** Writes the workspace's current content as a tree, through a throwaway copy of the seed index. */
async function writeTree(store: SnapshotStore): Promise<string> {
  const scratch = await mkdtemp(join(tmpdir(), "loopgraph-index-"));
  const index = join(scratch, "index");
  try {
    await copyFile(store.seedIndex, index).catch((error: NodeJS.ErrnoException) => {
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

/** Only the shadow repository's own index is kept up to date, atomically (snapshots may run in parallel). */
async function replaceFile(source: string, target: string): Promise<void> {
  const temporary = `${target}.${randomUUID()}.tmp`;
  await copyFile(source, temporary);
  await rename(temporary, target);
}

interface GitOptions {
  cwd: string;
  indexFile?: string;
  /** `--git-dir`/`--work-tree` of the shadow repository. */
  repository?: string[];
}

function git(args: string[], { cwd, indexFile, repository = [] }: GitOptions): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_OPTIONAL_LOCKS: "0" };
  for (const name of REPOSITORY_ENV) delete env[name];
  if (indexFile) env.GIT_INDEX_FILE = indexFile;
  const command = ["-c", "core.quotepath=off", ...repository, ...args];
  return new Promise((resolveOutput, reject) => {
    execFile("git", command, { cwd, env, encoding: "utf8", maxBuffer: MAX_GIT_OUTPUT_BYTES }, (error, stdout, stderr) => {
      if (!error) return resolveOutput(stdout);
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return reject(new GitError("git is not installed (the review needs it to diff the workspace)"));
      const reason =
        code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER"
          ? `output larger than ${MAX_GIT_OUTPUT_BYTES} bytes`
          : stderr.trim().split("\n")[0] || error.message;
      reject(new GitError(`git ${args.join(" ")}: ${reason}`));
    });
  });
}
