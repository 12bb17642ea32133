/**
 * Names and places of branch worktrees: the branch `loopgraph/<thread>/<node>-<index>`, the
 * ref that remembers its base, and the folders under `<workspace>/.loopgraph/worktrees/`.
 *
 * Thread and node ids become path components and ref components: each is checked (letters,
 * digits, `.`, `_`, `-`; no `..`, no separator, nothing git refuses in a ref), and every folder on
 * the way is checked to be a real folder, not a symbolic link, each time it is used: a link
 * planted there would lead loopgraph's own writes and removals elsewhere.
 */
import { lstat, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { STATE_DIR } from "../../project.js";
import { GitError } from "../run.js";

/** The folder of `.loopgraph/` that holds the worktrees, one folder per thread. */
export const WORKTREES_DIR = "worktrees";

/** As thread ids are (engine/thread.ts), and node ids fit in it; `..`, a trailing `.` and `.lock` are what git refuses in a ref. */
const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Which branch worktree: of which thread, node, and which of the node's parallel runs. */
export interface BranchName {
  threadId: string;
  node: string;
  index: number;
}

export function checkId(what: "thread" | "node", id: string): void {
  if (ID.test(id) && !id.includes("..") && !id.endsWith(".") && !id.endsWith(".lock")) return;
  throw new GitError(
    `${what} id ${JSON.stringify(id)} cannot name a branch worktree (letters, digits, ".", "_" and "-"; no "..", no separator)`,
  );
}

export function checkBranchName({ threadId, node, index }: BranchName): void {
  checkId("thread", threadId);
  checkId("node", node);
  if (!Number.isSafeInteger(index) || index < 0) throw new GitError(`branch worktree index ${index} is not a whole number ≥ 0`);
}

/** `<node>-<index>`: the index is digits only, so the last `-` separates it and no two names meet. */
function leaf({ node, index }: BranchName): string {
  return `${node}-${index}`;
}

/** The branch's short name, as the user sees it. */
export function branchOf(name: BranchName): string {
  return `loopgraph/${name.threadId}/${leaf(name)}`;
}

export function branchRef(name: BranchName): string {
  return `refs/heads/${branchOf(name)}`;
}

/** Outside `refs/heads`: the user's `git branch` does not list it; `threads prune` deletes it with the branch. */
export function baseRef(name: BranchName): string {
  return `refs/loopgraph/worktree-bases/${name.threadId}/${leaf(name)}`;
}

export function threadBranchPrefixes(threadId: string): string[] {
  return [`refs/heads/loopgraph/${threadId}/`, `refs/loopgraph/worktree-bases/${threadId}/`];
}

/** Workspace-relative folder names: `.loopgraph/worktrees/<thread>`. */
export function threadFolderParts(threadId: string): string[] {
  return [STATE_DIR, WORKTREES_DIR, threadId];
}

/** Where a branch worktree's files are, and its own index (beside the folder, where the coder working in it cannot write). */
export function worktreePlaces(workspace: string, name: BranchName): { dir: string; index: string } {
  const thread = join(workspace, ...threadFolderParts(name.threadId));
  return { dir: join(thread, leaf(name)), index: join(thread, `${leaf(name)}.index`) };
}

/**
 * `<root>/<parts…>` after checking that each part is a real folder, not a symbolic link nor
 * anything else (made when `create` and missing). Returns the path, or undefined when a part is
 * missing and not to be made.
 */
export async function realFolder(root: string, parts: readonly string[], create = false): Promise<string | undefined> {
  let path = root;
  for (const part of parts) {
    path = join(path, part);
    let info = await lstat(path).catch(() => undefined);
    if (!info && create) {
      await mkdir(path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST") throw new GitError(`cannot make ${path}: ${error.message}`);
      });
      info = await lstat(path);
    }
    if (!info) return undefined;
    if (!info.isDirectory())
      throw new GitError(`${path} is ${info.isSymbolicLink() ? "a symbolic link" : "not a folder"}: loopgraph will not use it`);
  }
  return path;
}
