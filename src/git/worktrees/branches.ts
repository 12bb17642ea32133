/**
 * Branch worktrees: a coder that runs beside others works in its own copy of the workspace, a
 * plain folder with no `.git`, on a branch `loopgraph/<thread>/<node>-<index>` of the
 * workspace's repository (or of loopgraph's shadow one).
 *
 * Why not `git worktree add`: its folder holds a `.git` file naming the repository's admin
 * folder; the agent working there could point it elsewhere, and loopgraph's later git calls in
 * the folder would follow. Here loopgraph's calls always name the repository and the work tree.
 *
 * Where: `<workspace>/.loopgraph/worktrees/<thread>/<node>-<index>/`, with its index beside it
 * (`<node>-<index>.index`). Inside `.loopgraph/`, the agent of the workspace (and of any other
 * worktree) cannot write it: the file tools refuse `.loopgraph/`, the sandbox binds it read-only
 * and shows a coder working in a worktree that folder alone. The workspace's own trees (its
 * snapshots, the Review's diff) leave `.loopgraph/` out, and the user's `git status` ignores it.
 */
import { lstat, mkdir, readdir, realpath, rm, chmod } from "node:fs/promises";
import { join } from "node:path";
import { parseNumstat, type FileChange } from "../numstat.js";
import { GitError } from "../run.js";
import {
  baseRef,
  branchOf,
  branchRef,
  checkBranchName,
  checkId,
  realFolder,
  threadBranchPrefixes,
  threadFolderParts,
  worktreePlaces,
  WORKTREES_DIR,
  type BranchName,
} from "./names.js";
import {
  captureTree,
  commitOf,
  commitTree,
  existingBranchRepository,
  openBranchRepository,
  stateFolder,
  treeStoreOf,
  workspaceTreeStore,
  type BranchRepository,
} from "./repository.js";

/** A branch of a workspace: which one, and the workspace it belongs to. */
export interface WorkspaceBranch extends BranchName {
  workspace: string;
}

export interface BranchWorktree extends WorkspaceBranch {
  /** The workspace's real path. */
  workspace: string;
  /** The worktree's folder: the coder's workspace. */
  dir: string;
  /** The branch's name, `loopgraph/<thread>/<node>-<index>`. */
  branch: string;
  /** The commit of the content the worktree began with. */
  baseCommit: string;
  /** Which repository holds the branch: the workspace's own, or loopgraph's shadow one. */
  store: BranchRepository["kind"];
}

export interface CreateBranchWorktreeOptions extends WorkspaceBranch {
  /** The tree to begin with (in the branch repository); default: the workspace's current content. */
  baseTree?: string;
  /** Values no object written may hold (the run's secrets). */
  secrets?: readonly string[];
}

/**
 * Makes the branch and its worktree: the workspace's current content (uncommitted and untracked
 * files included, secrets redacted) as a commit (on the user's HEAD, in their repository), the
 * branch and its base ref at it, and the folder holding its files.
 */
export async function createBranchWorktree(options: CreateBranchWorktreeOptions): Promise<BranchWorktree> {
  checkBranchName(options);
  const repo = await openBranchRepository(options.workspace);
  const tree = options.baseTree
    ? await checkedTree(repo, options.baseTree)
    : await captureTree(repo, workspaceTreeStore(repo), options.secrets ?? []);
  const branch = branchOf(options);
  const head = repo.kind === "git" ? await commitOf(repo, "HEAD") : undefined;
  const baseCommit = await commitTree(repo, tree, head ? [head] : [], `loopgraph: the workspace when ${branch} began`);
  await stateFolder(repo.workspace, [WORKTREES_DIR, options.threadId]);
  const { dir, index } = worktreePlaces(repo.workspace, options);
  await mkdir(dir).catch((error: NodeJS.ErrnoException) => {
    throw new GitError(error.code === "EEXIST" ? `branch worktree ${dir} already exists` : `cannot make ${dir}: ${error.message}`);
  });
  try {
    await createRefs(repo, options, baseCommit);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  try {
    await materialize(repo, dir, index, tree);
  } catch (error) {
    await forceRemove(dir);
    await rm(index, { force: true });
    await deleteRefs(repo, [branchRef(options), baseRef(options)]);
    throw error;
  }
  const { threadId, node, index: position } = options;
  return { workspace: repo.workspace, threadId, node, index: position, dir, branch, baseCommit, store: repo.kind };
}

/**
 * The branch worktree of a coder's visit, as it is left: the folder and branch made before (a
 * resume after a crash continues in the same folder, with what the agent wrote there), the folder
 * made again from the branch's tip when only the branch is left (the run that made it ended), or
 * both made new (`createBranchWorktree`).
 */
export async function openBranchWorktree(options: CreateBranchWorktreeOptions): Promise<BranchWorktree> {
  checkBranchName(options);
  const repo = await openBranchRepository(options.workspace);
  const [tip, base] = await Promise.all([commitOf(repo, branchRef(options)), commitOf(repo, baseRef(options))]);
  const { dir, index } = worktreePlaces(repo.workspace, options);
  const folder = await realFolder(repo.workspace, [...threadFolderParts(options.threadId), `${options.node}-${options.index}`]);
  if (!tip || !base) {
    // A folder without its branch is what a crash in `createBranchWorktree` leaves: nothing of the agent's is in it yet.
    if (folder) await forceRemove(folder);
    await rm(index, { force: true });
    return createBranchWorktree(options);
  }
  if (!folder) {
    await stateFolder(repo.workspace, [WORKTREES_DIR, options.threadId]);
    await mkdir(dir);
    await materialize(repo, dir, index, tip);
  }
  const { threadId, node, index: position } = options;
  return { workspace: repo.workspace, threadId, node, index: position, dir, branch: branchOf(options), baseCommit: base, store: repo.kind };
}

async function checkedTree(repo: BranchRepository, tree: string): Promise<string> {
  const kind = await repo.run(["cat-file", "-t", "--end-of-options", tree]).catch(() => "");
  if (kind.trim() !== "tree")
    throw new GitError(`${tree} is not a tree of the workspace's ${repo.kind === "git" ? "repository" : "shadow repository"}`);
  return (await repo.run(["rev-parse", "--verify", "--end-of-options", `${tree}^{tree}`])).trim();
}

/** Both refs at once, or neither: `create` fails when a ref already exists. */
async function createRefs(repo: BranchRepository, name: BranchName, commit: string): Promise<void> {
  const input = `start\ncreate ${branchRef(name)} ${commit}\ncreate ${baseRef(name)} ${commit}\ncommit\n`;
  await repo.run(["update-ref", "--stdin"], { input }).catch((error: Error) => {
    throw new GitError(`cannot create the branch ${branchOf(name)} (does it exist already?): ${error.message}`);
  });
}

async function deleteRefs(repo: BranchRepository, refs: readonly string[]): Promise<void> {
  if (refs.length === 0) return;
  await repo.run(["update-ref", "--stdin"], { input: refs.map((ref) => `delete ${ref}\n`).join("") });
}

/** Writes `tree` into the empty folder `dir`, and keeps the index (with the files' stat data) as the worktree's seed. */
async function materialize(repo: BranchRepository, dir: string, index: string, tree: string): Promise<void> {
  const store = treeStoreOf(repo, dir, index, true);
  await store.run(["read-tree", tree], index);
  await store.run(["checkout-index", "--all", "--force", "-u"], index);
}

/** The repository of a branch, checked to be the one it was made in. */
async function repositoryOf(branch: WorkspaceBranch & { store?: BranchRepository["kind"] }): Promise<BranchRepository> {
  checkBranchName(branch);
  const repo = await openBranchRepository(branch.workspace);
  if (branch.store && branch.store !== repo.kind)
    throw new GitError(
      `the workspace ${repo.workspace} is ${repo.kind === "git" ? "now" : "no longer"} a git repository: its branch ${branchOf(branch)} is elsewhere`,
    );
  return repo;
}

/** The commit a ref names; a missing one is a GitError. */
export async function requireCommit(repo: BranchRepository, ref: string): Promise<string> {
  const commit = await commitOf(repo, ref);
  if (!commit) throw new GitError(`no ${ref} in the workspace's ${repo.kind === "git" ? "repository" : "shadow repository"}`);
  return commit;
}

export async function branchBounds(repo: BranchRepository, name: BranchName): Promise<{ base: string; tip: string }> {
  const [base, tip] = await Promise.all([requireCommit(repo, baseRef(name)), requireCommit(repo, branchRef(name))]);
  return { base, tip };
}

/**
 * Commits the worktree's current content on its branch (secrets redacted, as in snapshots) and
 * returns the branch's tip: the commit made, or the tip as it was when nothing changed.
 */
export async function commitBranch(worktree: BranchWorktree, message: string, secrets: readonly string[] = []): Promise<string> {
  const repo = await repositoryOf(worktree);
  const { dir, index } = worktreePlaces(repo.workspace, worktree);
  const parts = [...threadFolderParts(worktree.threadId), `${worktree.node}-${worktree.index}`];
  if (!(await realFolder(repo.workspace, parts))) throw new GitError(`branch worktree ${dir} not found`);
  const tip = await requireCommit(repo, branchRef(worktree));
  const tree = await captureTree(repo, treeStoreOf(repo, dir, index, true), secrets);
  if (tree === (await repo.run(["rev-parse", `${tip}^{tree}`])).trim()) return tip;
  const commit = await commitTree(repo, tree, [tip], message);
  // Only from the tip read above: a commit made meanwhile is not lost.
  await repo.run(["update-ref", branchRef(worktree), commit, tip]);
  return commit;
}

/** A path changed between two trees (nested repositories included, as their own status). */
export interface BranchFileChange {
  path: string;
  /** A: added; D: deleted; M: changed (content, mode or type). */
  status: "A" | "D" | "M";
}

export interface BranchChanges {
  /** `git diff` of the branch from its base to its tip, binary files included; paths relative to the workspace. */
  patch: string;
  files: BranchFileChange[];
}

/** `git diff-tree` of the branch's change (its base to its tip) with `args`; no user setting (renames, colour, drivers) changes the output. */
async function branchDiffTree(branch: WorkspaceBranch): Promise<(args: readonly string[]) => Promise<string>> {
  const repo = await repositoryOf(branch);
  const { base, tip } = await branchBounds(repo, branch);
  return (args) => repo.run(["diff-tree", ...args, "-r", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", base, tip]);
}

/** What the branch changed: from its base to its tip (commit the worktree first for its latest content). */
export async function branchDiff(branch: WorkspaceBranch): Promise<BranchChanges> {
  const diffTree = await branchDiffTree(branch);
  const [patch, raw] = await Promise.all([
    diffTree(["-p", "--binary", "--full-index", "--src-prefix=a/", "--dst-prefix=b/"]),
    diffTree(["-z", "--name-status"]),
  ]);
  const fields = raw.split("\0");
  const files: BranchFileChange[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const status = fields[i]!;
    files.push({ path: fields[i + 1]!, status: status === "A" || status === "D" ? status : "M" });
  }
  return { patch, files };
}

/**
 * The branch's change for a reader (the Review): the patch without binary content, and each
 * file's line counts. The same range as `branchDiff`, which `mergeBranches` applies.
 */
export async function branchChangesToRead(branch: WorkspaceBranch): Promise<{ patch: string; files: FileChange[] }> {
  const diffTree = await branchDiffTree(branch);
  const [patch, numstat] = await Promise.all([diffTree(["-p", "--src-prefix=a/", "--dst-prefix=b/"]), diffTree(["-z", "--numstat"])]);
  return { patch, files: parseNumstat(numstat) };
}

/**
 * Commits each of the thread's worktree folders on its branch (before they are removed: a visit
 * that did not reach its own commit, in a run that failed, is then continued from its branch by a
 * resume). Returns the branches whose tip moved.
 */
export async function commitBranchWorktrees(
  workspace: string,
  threadId: string,
  message: string,
  secrets: readonly string[] = [],
): Promise<string[]> {
  checkId("thread", threadId);
  const real = await realpath(workspace).catch(() => {
    throw new GitError(`workspace not found: ${workspace}`);
  });
  const folder = await realFolder(real, threadFolderParts(threadId));
  if (!folder) return [];
  const moved: string[] = [];
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    const name = /^(.+)-(\d+)$/.exec(entry.name);
    if (!entry.isDirectory() || !name) continue;
    const branch = { workspace: real, threadId, node: name[1]!, index: Number(name[2]) };
    const repo = await repositoryOf(branch);
    const tip = await commitOf(repo, branchRef(branch));
    const base = await commitOf(repo, baseRef(branch));
    if (!tip || !base) continue; // a folder whose making was cut short: nothing of an agent's in it
    const worktree = { ...branch, dir: join(folder, entry.name), branch: branchOf(branch), baseCommit: base, store: repo.kind };
    if ((await commitBranch(worktree, message, secrets)) !== tip) moved.push(worktree.branch);
  }
  return moved;
}

/** Removes the thread's worktree folders (and their indexes); its branches stay. Returns the folders removed. */
export async function removeBranchWorktrees(workspace: string, threadId: string): Promise<string[]> {
  checkId("thread", threadId);
  const real = await realpath(workspace).catch(() => {
    throw new GitError(`workspace not found: ${workspace}`);
  });
  const folder = await realFolder(real, threadFolderParts(threadId));
  if (!folder) return [];
  try {
    const entries = await readdir(folder, { withFileTypes: true });
    const removed = entries.filter((entry) => entry.isDirectory()).map((entry) => join(folder, entry.name));
    await forceRemove(folder);
    return removed;
  } catch (error) {
    throw new GitError(`cannot remove the branch worktrees in ${folder}: ${(error as Error).message}`);
  }
}

/**
 * Begins the branch again from the workspace as it is now (a new round of attempts after one was
 * applied): a commit of the workspace's content on the branch's tip becomes both its tip and its
 * base, so its change starts empty and its history keeps what came before; its folder is removed
 * (the next visit makes it again from there). Returns false when there is no such branch.
 */
export async function restartBranch(branch: WorkspaceBranch, secrets: readonly string[] = []): Promise<boolean> {
  const repo = await repositoryOf(branch);
  const tip = await commitOf(repo, branchRef(branch));
  if (!tip) return false;
  const tree = await captureTree(repo, workspaceTreeStore(repo), secrets);
  const commit = await commitTree(repo, tree, [tip], `loopgraph: the workspace when ${branchOf(branch)} began again`);
  await repo.run(["update-ref", branchRef(branch), commit, tip]);
  await repo.run(["update-ref", baseRef(branch), commit]);
  await removeBranchWorktree(branch);
  return true;
}

/**
 * Removes one branch's worktree folder, once what it holds is on the branch (a merge applied it):
 * a later visit of its coder makes it again from the branch's tip. Returns whether there was one.
 */
export async function removeBranchWorktree(branch: WorkspaceBranch): Promise<boolean> {
  checkBranchName(branch);
  const real = await realpath(branch.workspace).catch(() => {
    throw new GitError(`workspace not found: ${branch.workspace}`);
  });
  const folder = await realFolder(real, [...threadFolderParts(branch.threadId), `${branch.node}-${branch.index}`]);
  if (!folder) return false;
  try {
    await forceRemove(folder);
    return true;
  } catch (error) {
    throw new GitError(`cannot remove the branch worktree ${folder}: ${(error as Error).message}`);
  }
}

/** Deletes the thread's branches and their base refs (`threads prune`). Returns the branches deleted. */
export async function pruneBranches(workspace: string, threadId: string): Promise<string[]> {
  checkId("thread", threadId);
  const repo = await existingBranchRepository(workspace);
  if (!repo) return [];
  const listed = await repo.run(["for-each-ref", "--format=%(refname)", ...threadBranchPrefixes(threadId)]);
  const refs = listed.split("\n").filter(Boolean);
  await deleteRefs(repo, refs);
  return refs.flatMap((ref) => (ref.startsWith("refs/heads/") ? [ref.slice("refs/heads/".length)] : []));
}

/**
 * `rm -rf`, also of folders the agent made unreadable or unwritable in its worktree: on a refusal,
 * every folder is made the owner's again (links are not followed) and the removal tried once more.
 */
async function forceRemove(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EACCES" && code !== "EPERM" && code !== "ENOTEMPTY") throw error;
    await reopenFolders(path);
    await rm(path, { recursive: true, force: true });
  }
}

async function reopenFolders(path: string): Promise<void> {
  const info = await lstat(path).catch(() => undefined);
  if (!info?.isDirectory()) return;
  await chmod(path, 0o700);
  for (const entry of await readdir(path)) await reopenFolders(join(path, entry));
}
