/**
 * Workspace snapshots for the Review: a baseline taken when a round begins, and the real
 * `git diff` of the workspace since then (new untracked files and deletions included,
 * `.gitignore` respected).
 *
 * A snapshot is a git tree written through a throwaway index (see git/tree-store.ts), so the
 * user's index, HEAD, branches, stash and working tree are never touched; only unreferenced
 * objects are added to the object store (git's gc prunes them). A workspace that is not in a
 * git repository gets a shadow repository at `.loopgraph/shadow.git`. `.loopgraph/` is never
 * part of a snapshot.
 */
import { stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { git, GitError } from "../../git/run.js";
import { parseNumstat, type FileChange } from "../../git/numstat.js";
import { shadowTreeStore, writeTree, type TreeStore, type TreeStoreKind } from "../../git/tree-store.js";
import { STATE_DIR } from "../../project.js";

export { GitError };
export type { FileChange };

const SHADOW_GIT_DIR = join(STATE_DIR, "shadow.git");
/** Left out of shadow snapshots: our own state, and dependencies, which a workspace without git rarely ignores. */
const SHADOW_EXCLUDES = [`/${STATE_DIR}/`, "node_modules/"];

export interface WorkspaceChanges {
  /** `git diff` output: the patch, paths relative to the workspace. */
  patch: string;
  files: FileChange[];
}

/**
 * A snapshot of the workspace as it is now, as an opaque id (`git:<tree>` or `shadow:<tree>`).
 * No object written holds a value of `secrets` (a file that does is stored with them redacted).
 */
export async function captureBaseline(workspace: string, secrets: readonly string[] = []): Promise<string> {
  const store = await openStore(workspace);
  return `${store.kind}:${(await writeTree(store, secrets)).tree}`;
}

/** The `git diff` of the workspace since `baseline` (a `captureBaseline` id). */
export async function diffSinceBaseline(workspace: string, baseline: string, secrets: readonly string[] = []): Promise<string> {
  return (await changesSinceBaseline(workspace, baseline, secrets)).patch;
}

/** The diff since `baseline`, with the changed files and their line counts; `secrets`' values are redacted from it. */
export async function changesSinceBaseline(
  workspace: string,
  baseline: string,
  secrets: readonly string[] = [],
): Promise<WorkspaceChanges> {
  const { kind, tree } = parseBaseline(baseline);
  const store = await openStore(workspace, kind);
  const current = (await writeTree(store, secrets)).tree;
  const range = [tree, current, "--", ".", `:(exclude)${STATE_DIR}`];
  const [patch, numstat] = await Promise.all([
    // Explicit prefixes: a user's diff.noprefix or diff.mnemonicPrefix would change the headers.
    store.run(["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", "--relative", ...range]),
    store.run(["diff", "--numstat", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", "--relative", ...range]),
  ]);
  return { patch, files: parseNumstat(numstat) };
}

function parseBaseline(baseline: string): { kind: TreeStoreKind; tree: string } {
  const match = /^(git|shadow):([0-9a-f]{40,64})$/.exec(baseline);
  if (!match) throw new GitError(`invalid workspace baseline "${baseline}" (expected git:<tree> or shadow:<tree>)`);
  return { kind: match[1] as TreeStoreKind, tree: match[2]! };
}

/**
 * The workspace's store: `kind` forces one (a baseline is read where it was written, even if the
 * workspace became a repository since); otherwise its repository, else the shadow one.
 */
async function openStore(workspace: string, kind?: TreeStoreKind): Promise<TreeStore> {
  // A missing workspace is reported below, with the same words whatever stat said.
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

async function repositoryStore(workspace: string): Promise<TreeStore> {
  const [index = "", objects = ""] = (await git(["rev-parse", "--git-path", "index", "--git-path", "objects"], { cwd: workspace }))
    .trim()
    .split("\n");
  return {
    kind: "git",
    seedIndex: resolve(workspace, index),
    objects: resolve(workspace, objects),
    workTree: workspace,
    run: (args, indexFile, extra) => git(args, { cwd: workspace, indexFile, ...extra }),
  };
}

function shadowStore(workspace: string): Promise<TreeStore> {
  return shadowTreeStore(workspace, { gitDir: join(workspace, SHADOW_GIT_DIR), excludes: SHADOW_EXCLUDES });
}
