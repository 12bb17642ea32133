/**
 * The repository that holds a workspace's branch worktrees: the workspace's own, when the
 * workspace is the top of a git work tree (the user sees the branches), else a shadow repository
 * of loopgraph's at `.loopgraph/branches.git` (bare, never pruned, files kept byte for byte).
 *
 * Every command names the repository and its work tree (`--git-dir`, `--work-tree`): none looks
 * for a `.git` in the folder it works on, so a `.git` the agent planted in a worktree is never
 * taken for a repository.
 */
import { appendFile, readFile, realpath, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { STATE_DIR } from "../../project.js";
import { ensureStateDir } from "../../runs/state-dir.js";
import { git, GitError, gitOutcome, LOOPGRAPH_IDENTITY, type GitOptions, type GitOutcome } from "../run.js";
import { shadowTreeStore, writeTree, type TreeStore } from "../tree-store.js";
import { realFolder, WORKTREES_DIR } from "./names.js";

const SHADOW_GIT_DIR = "branches.git";
/** Left out of the shadow repository's trees: our own state, and dependencies, which a workspace without git rarely ignores. */
const SHADOW_EXCLUDES = [`/${STATE_DIR}/`, "node_modules/"];
/** `info/attributes` wins over the workspace's `.gitattributes`: no conversion, no filter. */
const SHADOW_ATTRIBUTES = ["* -text -eol -filter -ident -working-tree-encoding"];
/** Nothing prunes a branch's commits but `threads prune`. */
const SHADOW_CONFIG = { "gc.auto": "0", "core.autocrlf": "false", "core.fsmonitor": "false" };
/** Ids of the stand-ins of files that held a secret (or were hard-linked), one a line. */
const STAND_INS_FILE = "redacted-blobs";

export interface BranchRepository {
  kind: "git" | "shadow";
  /** The workspace's real path. */
  workspace: string;
  gitDir: string;
  objects: string;
  /** The index the workspace's trees start from: the user's own (read, never written) or the shadow repository's. */
  workspaceSeed: string;
  /** git in the repository, with the workspace as its work tree. */
  run(args: string[], extra?: Pick<GitOptions, "env" | "input" | "indexFile">): Promise<string>;
  /** `run` for a command whose exit codes `accepted` are answers. */
  outcome(args: string[], accepted: readonly number[]): Promise<GitOutcome>;
}

/** The workspace's branch repository (the shadow one is made on first use). */
export async function openBranchRepository(workspace: string): Promise<BranchRepository> {
  const real = await realpath(workspace).catch(() => undefined);
  if (!real || !(await stat(real)).isDirectory()) throw new GitError(`workspace not found: ${workspace}`);
  return (await ownRepository(real)) ?? (await shadowRepository(real));
}

/** The workspace's branch repository when it has one: a thread that never made a branch leaves no shadow repository behind (`threads prune`). */
export async function existingBranchRepository(workspace: string): Promise<BranchRepository | undefined> {
  const real = await realpath(workspace).catch(() => undefined);
  if (!real || !(await stat(real)).isDirectory()) return undefined;
  const own = await ownRepository(real);
  if (own) return own;
  const shadow = await realFolder(real, [STATE_DIR, SHADOW_GIT_DIR]).catch(() => undefined);
  return shadow ? shadowRepository(real) : undefined;
}

/** The workspace's own repository, when the workspace is the top of its work tree (not a folder inside one, not a bare repository). */
export async function ownRepository(workspace: string): Promise<BranchRepository | undefined> {
  const found = await git(["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-path", "objects", "--git-path", "index"], {
    cwd: workspace,
  }).catch(() => undefined);
  const [top = "", gitDir = "", objects = "", index = ""] = found?.trim().split("\n") ?? [];
  if (!top || (await realpath(top).catch(() => "")) !== workspace) return undefined;
  return repository("git", workspace, gitDir, resolve(workspace, objects), resolve(workspace, index));
}

/**
 * `<workspace>/<parts…>` made where missing, each a real folder (a `.loopgraph` that is a link
 * would put the repository and the worktrees elsewhere); `.loopgraph/` ignores itself, so the
 * user's `git status` does not show it.
 */
export async function stateFolder(workspace: string, parts: readonly string[]): Promise<string> {
  await realFolder(workspace, [STATE_DIR], true);
  ensureStateDir(join(workspace, STATE_DIR));
  return (await realFolder(workspace, [STATE_DIR, ...parts], true))!;
}

async function shadowRepository(workspace: string): Promise<BranchRepository> {
  await stateFolder(workspace, []);
  const gitDir = join(workspace, STATE_DIR, SHADOW_GIT_DIR);
  await shadowTreeStore(workspace, { gitDir, excludes: SHADOW_EXCLUDES, attributes: SHADOW_ATTRIBUTES, config: SHADOW_CONFIG });
  return repository("shadow", workspace, gitDir, join(gitDir, "objects"), join(gitDir, "index"));
}

function repository(
  kind: BranchRepository["kind"],
  workspace: string,
  gitDir: string,
  objects: string,
  workspaceSeed: string,
): BranchRepository {
  const options = { cwd: workspace, repository: [`--git-dir=${gitDir}`, `--work-tree=${workspace}`] };
  return {
    kind,
    workspace,
    gitDir,
    objects,
    workspaceSeed,
    run: (args, extra) => git(args, { ...options, ...extra }),
    outcome: (args, accepted) => gitOutcome(args, options, accepted),
  };
}

/**
 * A tree store of `workTree` in the repository: the workspace (seeded by `workspaceSeed`) or a
 * worktree (seeded by its own index, which loopgraph keeps up to date).
 */
export function treeStoreOf(repo: BranchRepository, workTree: string, seedIndex: string, ownSeed: boolean): TreeStore {
  const repository = [`--git-dir=${repo.gitDir}`, `--work-tree=${workTree}`];
  return {
    kind: repo.kind,
    seedIndex,
    objects: repo.objects,
    workTree,
    ownSeed,
    run: (args, indexFile, extra) => git(args, { cwd: workTree, indexFile, repository, ...extra }),
  };
}

/** The workspace's own tree store: the user's index is only read; the shadow repository's is kept up to date. */
export function workspaceTreeStore(repo: BranchRepository): TreeStore {
  return treeStoreOf(repo, repo.workspace, repo.workspaceSeed, repo.kind === "shadow");
}

function standInsFile(repo: BranchRepository): string {
  return join(repo.workspace, STATE_DIR, WORKTREES_DIR, STAND_INS_FILE);
}

/** The content of `store`'s work tree as a tree (secrets redacted); the stand-ins it wrote are remembered. */
export async function captureTree(repo: BranchRepository, store: TreeStore, secrets: readonly string[]): Promise<string> {
  const { tree, redacted } = await writeTree(store, secrets);
  if (redacted.length > 0) {
    await stateFolder(repo.workspace, [WORKTREES_DIR]);
    await appendFile(standInsFile(repo), redacted.map((id) => `${id}\n`).join(""));
  }
  return tree;
}

/** Ids of blobs that stand in for a file loopgraph did not keep as it is. */
export async function standIns(repo: BranchRepository): Promise<Set<string>> {
  return new Set((await readFile(standInsFile(repo), "utf8").catch(() => "")).split("\n").filter(Boolean));
}

/** The commit `ref` names, or undefined when there is none. */
export async function commitOf(repo: BranchRepository, ref: string): Promise<string | undefined> {
  const found = await repo.run(["rev-parse", "--verify", "--quiet", "--end-of-options", `${ref}^{commit}`]).catch(() => "");
  return found.trim() || undefined;
}

/** A commit of `tree` by loopgraph (fixed identity, never signed). */
export async function commitTree(repo: BranchRepository, tree: string, parents: readonly string[], message: string): Promise<string> {
  const args = ["commit-tree", "--no-gpg-sign", "-m", message, ...parents.flatMap((parent) => ["-p", parent]), tree];
  return (await repo.run(args, { env: LOOPGRAPH_IDENTITY })).trim();
}
