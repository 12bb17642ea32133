/**
 * Applying branches to the workspace: each branch's change (its base → its tip) merged three-way
 * into the workspace's current content, in git's object store first. Only when every branch
 * merged cleanly is anything written, so a conflict leaves the workspace as it was, byte for byte.
 *
 * What is written never leads outside the workspace: git writes a symbolic link as a link and
 * replaces a link on the way to a file rather than follow it; a link the branch would add that
 * leads out of the workspace (or into a `.git` or `.loopgraph`, or through another link) is not
 * written at all, and the result says so. Nor is what configures git or loopgraph (as the tools
 * protect it, tools/protected-entries.ts): a `.git`, a `.loopgraph/`, a `loopgraph.yaml`, or a
 * file in a folder git would take for a repository (one branch may add its `HEAD`, another its
 * `objects/` and `refs/`). Nor a file where the workspace holds what the merge did not start from
 * (an ignored file, folder or link, which no branch holds): that stays. A file loopgraph keeps
 * only redacted (it holds a secret's value) is never overwritten by a merge: that is a conflict.
 */
import { lstat, mkdtemp, readdir, rm, rmdir, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { PROJECT_CONFIG, STATE_DIR } from "../../project.js";
import { looksLikeBareRepository } from "../repository-shape.js";
import { GitError } from "../run.js";
import { branchBounds } from "./branches.js";
import { branchOf, checkBranchName, realFolder, type BranchName } from "./names.js";
import { captureTree, commitTree, openBranchRepository, standIns, workspaceTreeStore, type BranchRepository } from "./repository.js";

/** A change of the merged result the workspace did not get, and why. */
export interface WithheldChange {
  path: string;
  reason: string;
}

export interface BranchConflict {
  /** The branch that did not merge. */
  branch: string;
  paths: string[];
  /** git's one-line account of each conflict (`CONFLICT (content): Merge conflict in …`), or loopgraph's. */
  details: string[];
}

export type ApplyResult =
  | { status: "applied"; applied: string[]; withheld: WithheldChange[] }
  | { status: "conflict"; conflict: BranchConflict };

export interface MergeBranchesOptions {
  workspace: string;
  branches: readonly BranchName[];
  /** The run's secrets: the workspace's content is captured with them redacted. */
  secrets?: readonly string[];
}

/** Applies one branch's change to the workspace; see `mergeBranches`. */
export function applyBranch(options: { workspace: string; branch: BranchName; secrets?: readonly string[] }): Promise<ApplyResult> {
  return mergeBranches({ workspace: options.workspace, branches: [options.branch], secrets: options.secrets });
}

/**
 * Merges the branches' changes, in order, into the workspace's current content; writes the result
 * only when all merged. On a conflict nothing in the workspace has changed, and the conflict
 * names the first branch that did not merge.
 */
export async function mergeBranches({ workspace, branches, secrets = [] }: MergeBranchesOptions): Promise<ApplyResult> {
  for (const branch of branches) checkBranchName(branch);
  const repo = await openBranchRepository(workspace);
  const current = await captureTree(repo, workspaceTreeStore(repo), secrets);
  const withheldFiles = await standIns(repo);
  let merged = current;
  for (const branch of branches) {
    const step = await mergeOne(repo, merged, branch);
    if ("conflict" in step) return { status: "conflict", conflict: step.conflict };
    const secretPaths = (await treeChanges(repo, merged, step.tree))
      .filter((change) => withheldFiles.has(change.oldId) || withheldFiles.has(change.newId))
      .map((change) => change.path);
    if (secretPaths.length > 0) {
      const details = secretPaths.map(
        (path) => `${path}: loopgraph keeps this file only with a secret's value redacted, so it cannot merge a change to it`,
      );
      return { status: "conflict", conflict: { branch: branchOf(branch), paths: secretPaths, details } };
    }
    merged = step.tree;
  }
  return writeMerged(repo, current, merged);
}

/** The tree of `onto` with the branch's change merged in, or the conflict. */
async function mergeOne(
  repo: BranchRepository,
  onto: string,
  branch: BranchName,
): Promise<{ tree: string } | { conflict: BranchConflict }> {
  const { base, tip } = await branchBounds(repo, branch);
  // git 2.39's merge-tree finds the merge base itself: a commit on the branch's base makes it that base.
  const ontoCommit = await commitTree(repo, onto, [base], `loopgraph: the workspace, to merge ${branchOf(branch)} into`);
  const { output, exitCode } = await repo.outcome(["merge-tree", "--write-tree", "-z", "--name-only", ontoCommit, tip], [1]);
  const { tree, paths, messages } = parseMergeTree(output);
  if (exitCode === 0) return { tree };
  const details = messages.filter((message) => !message.startsWith("Auto-merging"));
  return { conflict: { branch: branchOf(branch), paths, details } };
}

/**
 * `merge-tree --write-tree -z --name-only`: the tree, the conflicted paths, an empty field, then
 * per message its number of paths, the paths, its type and its text.
 */
function parseMergeTree(output: string): { tree: string; paths: string[]; messages: string[] } {
  const fields = output.split("\0");
  const tree = fields[0] ?? "";
  let i = 1;
  const paths = new Set<string>();
  for (; i < fields.length && fields[i] !== ""; i++) paths.add(fields[i]!);
  const messages: string[] = [];
  for (i++; i < fields.length && fields[i] !== ""; ) {
    const count = Number(fields[i]);
    i += 1 + count + 1;
    messages.push((fields[i] ?? "").trim());
    i++;
  }
  if (!/^[0-9a-f]{40,64}$/.test(tree)) throw new GitError(`git merge-tree: unexpected output ${JSON.stringify(output.slice(0, 80))}`);
  return { tree, paths: [...paths], messages };
}

interface TreeChange {
  path: string;
  status: string;
  oldMode: string;
  newMode: string;
  oldId: string;
  newId: string;
}

const SYMLINK_MODE = "120000";
const GITLINK_MODE = "160000";

async function treeChanges(repo: BranchRepository, from: string, to: string): Promise<TreeChange[]> {
  const fields = (await repo.run(["diff-tree", "-r", "-z", "--no-renames", from, to])).split("\0");
  const changes: TreeChange[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [oldMode = "", newMode = "", oldId = "", newId = "", status = ""] = fields[i]!.slice(1).split(" ");
    changes.push({ path: fields[i + 1]!, status, oldMode, newMode, oldId, newId });
  }
  return changes;
}

/** Writes into the workspace what differs from `from` (its content as captured) to `to`, but what must not be written. */
async function writeMerged(repo: BranchRepository, from: string, to: string): Promise<ApplyResult> {
  const changes = await treeChanges(repo, from, to);
  const repositories = await repositoryFolders(repo, to, changes);
  const withheld: WithheldChange[] = [];
  const toWrite: TreeChange[] = [];
  for (const change of changes) {
    const reason = configures(change.path, repositories) ?? (await refusal(repo, to, change));
    if (reason) withheld.push({ path: change.path, reason });
    else toWrite.push(change);
  }
  for (const change of toWrite) if (change.status === "D") await removeFile(repo.workspace, change.path);
  // What is still there, where a new file goes, is what no branch holds (an ignored file, folder or link): it stays.
  const kept = new Set<string>();
  for (const change of toWrite) {
    const reason = change.status === "A" ? await occupied(repo.workspace, change.path) : undefined;
    if (reason) withheld.push({ path: change.path, reason });
    else kept.add(change.path);
  }
  const written = toWrite.filter((change) => kept.has(change.path));
  await checkout(
    repo,
    to,
    written.filter((change) => change.status !== "D").map((change) => change.path),
  );
  return { status: "applied", applied: written.map((change) => change.path), withheld };
}

/**
 * Why a change to `path` must not be written, if it configures git or loopgraph: a `.git` or
 * `.loopgraph` on its way, a `loopgraph.yaml`, or a place in one of `repositories`.
 */
function configures(path: string, repositories: ReadonlySet<string>): string | undefined {
  const parts = path.split("/");
  const stateName = parts.find((part) => [".git", STATE_DIR].includes(part.toLowerCase()));
  if (stateName) return `in a ${stateName}, which configures git or loopgraph: not written`;
  if (parts.at(-1) === PROJECT_CONFIG) return `a ${PROJECT_CONFIG}, which configures a later loopgraph run there: not written`;
  const depth = parts.slice(0, -1).findIndex((_, i) => repositories.has(parts.slice(0, i + 1).join("/")));
  if (depth === -1) return undefined;
  const at = parts.slice(0, depth + 1).join("/");
  return `in ${at}/, which git would take for a repository (HEAD with objects/ and refs/): its config would run in the user's git there: not written`;
}

/**
 * The folders (not the workspace itself) on the way to a changed path that git would take for a
 * repository after the merge: what the merged tree holds there, with what the workspace holds
 * there besides (files the tree leaves out, such as ignored ones).
 */
async function repositoryFolders(repo: BranchRepository, tree: string, changes: readonly TreeChange[]): Promise<Set<string>> {
  const folders = new Set(
    changes.flatMap(({ path }) =>
      path
        .split("/")
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join("/")),
    ),
  );
  const found = new Set<string>();
  if (folders.size === 0) return found;
  const names = new Map<string, Set<string>>();
  const listed = await repo.run(["ls-tree", "-r", "-t", "-z", "--name-only", tree]);
  for (const path of listed.split("\0").filter(Boolean)) {
    const at = path.lastIndexOf("/");
    const folder = at === -1 ? "" : path.slice(0, at);
    if (folders.has(folder)) names.set(folder, (names.get(folder) ?? new Set()).add(path.slice(at + 1)));
  }
  for (const folder of folders) {
    const own = names.get(folder) ?? new Set<string>();
    const real = await realFolder(repo.workspace, folder.split("/")).catch(() => undefined);
    if (real) for (const name of await readdir(real).catch(() => [])) own.add(name);
    if (looksLikeBareRepository(own)) found.add(folder);
  }
  return found;
}

/** Why a change must not be written, if it must not. */
async function refusal(repo: BranchRepository, tree: string, change: TreeChange): Promise<string | undefined> {
  if (change.oldMode === GITLINK_MODE || change.newMode === GITLINK_MODE) return "a nested repository (submodule): not applied";
  if (change.newMode !== SYMLINK_MODE) return undefined;
  const target = await repo.run(["cat-file", "blob", change.newId]);
  if (linkLeadsAway(change.path, target))
    return `a symbolic link to ${JSON.stringify(target)}, which leads out of the workspace or into a .git or ${STATE_DIR}: not written`;
  if (await passesThroughLink(repo, tree, change.path, target))
    return `a symbolic link to ${JSON.stringify(target)}, which passes through another link (that may lead anywhere): not written`;
  return undefined;
}

/** Whether a (lexically inside) target, or a folder on its way, is itself a link in `tree`: where it leads is not the text's. */
async function passesThroughLink(repo: BranchRepository, tree: string, path: string, target: string): Promise<boolean> {
  const parts = target.split("/").filter((part) => part !== "" && part !== ".");
  const ups = parts.filter((part) => part === "..").length;
  const folder = path.split("/").slice(0, -1);
  const start = folder.slice(0, folder.length - ups);
  const names = parts.slice(ups);
  const prefixes = names.map((_, i) => [...start, ...names.slice(0, i + 1)].join("/"));
  if (prefixes.length === 0) return false;
  const listed = await repo.run(["ls-tree", "-z", tree, "--", ...prefixes], { env: { GIT_LITERAL_PATHSPECS: "1" } });
  return listed.split("\0").some((entry) => entry.startsWith(`${SYMLINK_MODE} `));
}

/**
 * Whether a link at `path` to `target` may lead out of the workspace, or into what configures git
 * or loopgraph. Judged from the target's text alone, so strictly: an absolute target, more `..`
 * than the link's depth, or a `..` after a name (where it leads depends on what that name is: a
 * link to `.` makes `name/..` the workspace's parent).
 */
export function linkLeadsAway(path: string, target: string): boolean {
  if (target.startsWith("/") || target.includes("\\") || target === "") return true;
  const parts = target.split("/").filter((part) => part !== "" && part !== ".");
  const firstName = parts.findIndex((part) => part !== "..");
  const ups = firstName === -1 ? parts.length : firstName;
  const names = parts.slice(ups);
  if (names.includes("..")) return true;
  if (names.some((name) => [".git", STATE_DIR].includes(name.toLowerCase()))) return true;
  return ups > path.split("/").length - 1;
}

/**
 * What the workspace holds at `path`, or instead of a folder on its way, though the content the
 * merge started from does not (a file, folder or link git ignores, which no branch holds): git
 * would replace it (a folder with all it holds) by what the branch added there.
 */
async function occupied(workspace: string, path: string): Promise<string | undefined> {
  const parts = path.split("/");
  for (let i = 1; i <= parts.length; i++) {
    const at = parts.slice(0, i).join("/");
    const info = await lstat(join(workspace, at)).catch(() => undefined);
    if (!info) return undefined;
    if (i < parts.length && info.isDirectory()) continue;
    const what = info.isSymbolicLink() ? "a symbolic link" : info.isDirectory() ? "a folder" : "a file";
    return `the workspace has ${what} at ${at} that no branch holds (ignored): the merge would replace it: not written`;
  }
  return undefined;
}

/** Removes a file the merge deleted, and the folders it leaves empty; no link on the way is followed. */
async function removeFile(workspace: string, path: string): Promise<void> {
  const folders = path.split("/").slice(0, -1);
  const folder = await realFolder(workspace, folders).catch(() => undefined);
  if (!folder) return; // gone already, or behind something that is no folder: nothing of the workspace to remove there
  const file = join(folder, path.split("/").pop()!);
  const info = await lstat(file).catch(() => undefined);
  if (!info || info.isDirectory()) return;
  await unlink(file);
  for (let dir = folder; dir !== workspace && dir.startsWith(workspace); dir = dirname(dir)) {
    if (
      !(await rmdir(dir).then(
        () => true,
        () => false,
      ))
    )
      break;
  }
}

/** Writes `paths` as they are in `tree` (git replaces, never follows, a link on the way). */
async function checkout(repo: BranchRepository, tree: string, paths: string[]): Promise<void> {
  if (paths.length === 0) return;
  const scratch = await mkdtemp(join(tmpdir(), "loopgraph-apply-"));
  const index = join(scratch, "index");
  try {
    await repo.run(["read-tree", tree], { indexFile: index });
    await repo.run(["checkout-index", "--force", "-z", "--stdin"], { indexFile: index, input: paths.map((path) => `${path}\0`).join("") });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
