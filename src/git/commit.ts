/**
 * Commits made by loopgraph's own process in the user's repository, for the agent (`git_commit`)
 * or at the end of a run (`run --commit`): never by the agent's shell, to which `.git` is
 * read-only. Every command is loopgraph's hardened git (run.ts: no hooks, no fsmonitor, no
 * filter, no pager, no signing, no user or system config), with the repository and its work tree
 * named (`--git-dir`, `--work-tree`: a planted `core.worktree` moves nothing) and the message on
 * standard input (no option can be slipped in through it).
 *
 * Branches. The thread's branch is the branch HEAD was on at its first commit, kept in
 * `.loopgraph/commits/<thread>.json`. Commits go onto that branch; when it is `main`, `master`,
 * the remote's default branch, or HEAD was detached, they go onto `loopgraph/<thread>` instead,
 * made at HEAD and checked out (no file changes) by the first commit. A commit refuses when HEAD
 * is anywhere else (another branch, detached since): loopgraph never commits onto a branch the
 * thread did not start on. The same file lists every commit made, which `rewind` reads.
 */
import { randomUUID } from "node:crypto";
import { lstat, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { STATE_DIR } from "../project.js";
import { git, GitError, LOOPGRAPH_IDENTITY } from "./run.js";
import { copyIndex, writeTree, type TreeStore } from "./tree-store.js";
import { checkId, realFolder } from "./worktrees/names.js";
import { commitOf, ownRepository, stateFolder, type BranchRepository } from "./worktrees/repository.js";

/** The folder of `.loopgraph/` that holds each thread's commit log. */
const COMMITS_DIR = "commits";
/** Branches loopgraph does not commit onto: the agent's work goes onto `loopgraph/<thread>` beside them. */
const TRUNK_BRANCHES = new Set(["main", "master"]);
const HEADS = "refs/heads/";
/** A commit message's length limit (characters). */
const MAX_MESSAGE = 20_000;

/** One commit loopgraph made for a thread. */
export interface CommitEntry {
  /** What made it: the tool call's id, or `run --commit`. */
  key: string;
  /** When (ISO time). */
  at: string;
  /** The branch it went onto (full ref name). */
  branch: string;
  /** The branch's commit before it (absent: the repository had none). */
  before?: string;
  after: string;
  /** Set when this commit made the branch: where HEAD was (a branch's ref, or null when detached at `before`). */
  created?: { from: string | null };
}

/** A thread's commit log. */
interface CommitLog {
  /** The branch HEAD was on at the thread's first commit (null: detached; absent: no commit tried yet). */
  runBranch?: string | null;
  commits: CommitEntry[];
}

export interface CommitRequest {
  /** The workspace (absolute, real): the top folder of the repository's work tree. */
  workspace: string;
  threadId: string;
  message: string;
  /** Workspace-relative files and folders to commit, checked by the caller; absent: every change in the workspace. */
  paths?: readonly string[];
  /** Leave out the paths that are neither on disk nor in the branch's commit (a file made and deleted again), instead of failing on them. */
  skipMissing?: boolean;
  key: string;
  /** loopgraph's environment: the user's git identity comes from it and their global config. */
  env: NodeJS.ProcessEnv;
  /** Values no commit may hold (the run's secrets): a file holding one is committed with it redacted. */
  secrets?: readonly string[];
}

export type CommitOutcome =
  | {
      status: "committed";
      commit: string;
      branch: string;
      /** The branch was made by this commit, beside this one (short name). */
      createdFrom?: string;
      files: string[];
      /** Files committed with a secret's value redacted (or, hard-linked, as a note): how many. */
      redacted: number;
      /** The user's index could not be brought up to date (the commit stands). */
      indexProblem?: string;
    }
  | { status: "nothing"; branch: string }
  | { status: "refused"; reason: string };

const short = (ref: string): string => (ref.startsWith(HEADS) ? ref.slice(HEADS.length) : ref);

/** The commit a thread's work goes onto when its branch is a trunk (or HEAD was detached). */
export function threadBranch(threadId: string): string {
  return `${HEADS}loopgraph/${threadId}`;
}

/** Makes one commit of the workspace's changes (or of `paths`) on the thread's branch; see the file's comment. */
export async function commitWorkspace(request: CommitRequest): Promise<CommitOutcome> {
  const { workspace, threadId } = request;
  checkId("thread", threadId);
  const message = request.message.replace(/\s+$/, "");
  if (message.trim() === "") return { status: "refused", reason: "the commit message is empty" };
  if (message.includes("\0")) return { status: "refused", reason: "the commit message holds a NUL character" };
  if (message.length > MAX_MESSAGE) return { status: "refused", reason: `the commit message is longer than ${MAX_MESSAGE} characters` };
  const repo = await ownRepository(workspace);
  if (!repo)
    return {
      status: "refused",
      reason:
        "the workspace is not the top folder of a git repository's work tree (it has no repository, is a folder inside one, or is a Coder's branch worktree, whose work reaches the workspace through a merge)",
    };
  const log = await readLog(workspace, threadId);
  const head = await headRef(repo);
  if (log.runBranch === undefined) {
    log.runBranch = head;
    await writeLog(workspace, threadId, log);
  }
  const { runBranch } = log;
  const target = (await isTrunk(repo, runBranch)) ? threadBranch(threadId) : runBranch!;
  const tip = await commitOf(repo, target);
  let created: CommitEntry["created"];
  if (head !== target) {
    // The thread's own branch is made once, where the thread's branch (or its detached HEAD) is.
    const startable = target !== runBranch && tip === undefined && head === runBranch;
    if (!startable) return { status: "refused", reason: wrongHead(head, target, runBranch, tip !== undefined) };
    created = { from: head };
  }
  const before = created ? await commitOf(repo, "HEAD") : tip;
  if (created && before === undefined)
    return { status: "refused", reason: "the repository has no commit to start the thread's branch from" };

  const { tree, redacted } = await treeWithChanges(repo, before, request, request.secrets ?? []);
  const beforeTree = before ? (await repo.run(["rev-parse", `${before}^{tree}`])).trim() : undefined;
  if (tree === beforeTree) return { status: "nothing", branch: short(target) };
  const commit = (
    await repo.run(["commit-tree", "--no-gpg-sign", ...(before ? ["-p", before] : []), "-F", "-", tree], {
      env: await commitIdentity(request.env),
      input: `${message}\n`,
    })
  ).trim();
  const reflog = `loopgraph: ${request.key === RUN_COMMIT_KEY ? "run --commit" : "git_commit"} (thread ${threadId})`;
  let moved = false;
  try {
    // Compare-and-swap: a branch moved meanwhile (or one made meanwhile) is not overwritten.
    await repo.run(["update-ref", "-m", reflog, target, commit, created ? "" : (before ?? "")]);
    moved = true;
    if (created) await repo.run(["symbolic-ref", "-m", reflog, "HEAD", target]);
  } catch (error) {
    // A branch made for HEAD that could not be put on it is taken back: no commit is left half made.
    if (moved) await repo.run(["update-ref", "-d", target, commit]).catch(() => undefined);
    return { status: "refused", reason: `git would not move ${short(target)}: ${(error as Error).message}` };
  }
  log.commits.push({
    key: request.key,
    at: new Date().toISOString(),
    branch: target,
    ...(before ? { before } : {}),
    after: commit,
    ...(created ? { created } : {}),
  });
  await writeLog(workspace, threadId, log);
  const files = await changedPaths(repo, before, commit);
  const indexProblem = await resetIndex(repo, files);
  return {
    status: "committed",
    commit,
    branch: short(target),
    ...(created ? { createdFrom: created.from ? short(created.from) : "a detached HEAD" } : {}),
    files,
    redacted: redacted.length,
    ...(indexProblem ? { indexProblem } : {}),
  };
}

/**
 * Notes the branch HEAD is on as the thread's branch, unless one is noted already: before the
 * thread's first file-changing step (snapshots/tool-step-hook.ts), so that its commits go where
 * its work started even if HEAD moves before it commits. Nothing for a workspace without git.
 */
export async function pinThreadBranch(workspace: string, threadId: string): Promise<void> {
  checkId("thread", threadId);
  const log = await readLog(workspace, threadId);
  if (log.runBranch !== undefined) return;
  const repo = await ownRepository(workspace);
  if (repo) await writeLog(workspace, threadId, { ...log, runBranch: await headRef(repo) });
}

/** Why a commit is refused where HEAD is. */
function wrongHead(head: string | null, target: string, runBranch: string | null, targetExists: boolean): string {
  const where = head === null ? "HEAD is detached" : `HEAD is on ${short(head)}`;
  const nothing = "loopgraph commits only on the branch the thread works on; nothing was committed";
  if (target === runBranch) return `${where}, not on ${short(target)}, the branch this thread started on: ${nothing}`;
  const beside = runBranch ? short(runBranch) : "a detached HEAD";
  const back = targetExists ? ` (switch back to it, \`git switch ${short(target)}\`, to commit there)` : "";
  return `${where}, not on ${short(target)}, the thread's own branch beside ${beside}${back}: ${nothing}`;
}

/** The key of the commit `run --commit` makes. */
export const RUN_COMMIT_KEY = "run --commit";

/** What rewinding a thread's commits did (or, for a dry run, would do) to one branch. */
export interface CommitRewind {
  /** The branch's short name. */
  branch: string;
  /** moved: back to `to`; deleted: the thread's branch loopgraph made (HEAD back on `to`); kept: left as it is (`reason`). */
  action: "moved" | "deleted" | "kept";
  /** The commit it pointed at. */
  from?: string;
  /** The commit (moved) or the branch HEAD went back to (deleted). */
  to?: string;
  reason?: string;
}

/**
 * Undoes the commits loopgraph made for a thread at or after `since` (ISO time): each branch
 * goes back to where it was before the first of them, when it still points at the last (a
 * branch that moved since is left as it is, and said so); a branch the thread made is deleted
 * and HEAD goes back to where it was. The user's index follows for the files those commits
 * changed, when HEAD is on the branch: the work tree is the file rewind's.
 */
export async function rewindCommits(workspace: string, threadId: string, since: string, dryRun: boolean): Promise<CommitRewind[]> {
  checkId("thread", threadId);
  const log = await readLog(workspace, threadId);
  const undone = log.commits.filter((entry) => entry.at >= since);
  if (undone.length === 0) return [];
  const repo = await ownRepository(workspace);
  if (!repo) return [{ branch: "", action: "kept", reason: "the workspace is no longer the top of a git repository's work tree" }];
  const results: CommitRewind[] = [];
  const rewound = new Set<CommitEntry>();
  for (const branch of [...new Set(undone.map((entry) => entry.branch))]) {
    const entries = undone.filter((entry) => entry.branch === branch);
    const [first, last] = [entries[0]!, entries.at(-1)!];
    const tip = await commitOf(repo, branch);
    if (tip !== last.after) {
      const reason =
        tip === undefined ? "it no longer exists" : `it has moved since loopgraph's last commit on it (now ${tip.slice(0, 12)})`;
      results.push({ branch: short(branch), action: "kept", ...(tip && { from: tip }), reason: `left as it is: ${reason}` });
      continue;
    }
    const onBranch = (await headRef(repo)) === branch;
    if (first.created) {
      const back = first.created.from;
      results.push({ branch: short(branch), action: "deleted", from: tip, to: back ? short(back) : first.before! });
      if (!dryRun) {
        if (onBranch) {
          if (back) await repo.run(["symbolic-ref", "-m", "loopgraph: rewind", "HEAD", back]);
          else await repo.run(["update-ref", "--no-deref", "-m", "loopgraph: rewind", "HEAD", first.before!]);
        }
        await repo.run(["update-ref", "-d", "-m", "loopgraph: rewind", branch, tip]);
      }
    } else {
      if (first.before === undefined) {
        results.push({ branch: short(branch), action: "kept", from: tip, reason: "left as it is: its first commit is loopgraph's" });
        continue;
      }
      results.push({ branch: short(branch), action: "moved", from: tip, to: first.before });
      if (!dryRun) await repo.run(["update-ref", "-m", "loopgraph: rewind", branch, first.before, tip]);
    }
    for (const entry of entries) rewound.add(entry);
    if (!dryRun && onBranch) await resetIndex(repo, await changedPaths(repo, first.before, tip));
  }
  if (!dryRun && rewound.size > 0)
    await writeLog(workspace, threadId, { ...log, commits: log.commits.filter((entry) => !rewound.has(entry)) });
  return results;
}

// ---------------------------------------------------------------------------------------------

/** The tree of `before` with the workspace's changes (to `paths`, or all) added, through a throwaway index. */
async function treeWithChanges(
  repo: BranchRepository,
  before: string | undefined,
  { paths: named, skipMissing }: Pick<CommitRequest, "paths" | "skipMissing">,
  secrets: readonly string[],
): Promise<{ tree: string; redacted: string[] }> {
  const scratch = await mkdtemp(join(tmpdir(), "loopgraph-commit-"));
  try {
    const seedIndex = join(scratch, "seed");
    // From a copy of the user's index, `read-tree -m` keeps the file stamps of the entries it does not change: unchanged files are not hashed again.
    const seeded =
      before !== undefined &&
      (await copyIndex(repo.workspaceSeed, seedIndex)
        .then(() => repo.run(["read-tree", "-m", before], { indexFile: seedIndex }))
        .then(
          () => true,
          () => false,
        ));
    if (!seeded) {
      await rm(seedIndex, { force: true });
      await repo.run(before ? ["read-tree", before] : ["read-tree", "--empty"], { indexFile: seedIndex });
    }
    let paths = named;
    if (paths && skipMissing) {
      const tracked = new Set((await repo.run(["ls-files", "-z"], { indexFile: seedIndex })).split("\0"));
      const present = await Promise.all(
        paths.map((path) =>
          lstat(join(repo.workspace, path)).then(
            () => true,
            () => tracked.has(path),
          ),
        ),
      );
      paths = paths.filter((_, index) => present[index]);
      if (paths.length === 0) return { tree: (await repo.run(["write-tree"], { indexFile: seedIndex })).trim(), redacted: [] };
    }
    const store: TreeStore = {
      kind: "git",
      seedIndex,
      objects: repo.objects,
      workTree: repo.workspace,
      ownSeed: false,
      run: (args, indexFile, extra) => repo.run(args, { ...extra, ...(indexFile ? { indexFile } : {}) }),
    };
    return await writeTree(store, secrets, paths?.length ? paths : undefined);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Brings the user's index entries of `paths` to HEAD's, so `git status` shows the commit as committed; a failure is said, not thrown. */
async function resetIndex(repo: BranchRepository, paths: readonly string[]): Promise<string | undefined> {
  if (paths.length === 0) return undefined;
  try {
    await repo.run(["reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul"], {
      env: { GIT_LITERAL_PATHSPECS: "1" },
      input: paths.map((path) => `${path}\0`).join(""),
    });
    return undefined;
  } catch (error) {
    return `your index was not updated (${(error as Error).message}): \`git reset -q\` updates it`;
  }
}

/** Paths that differ between two commits (every path of `after` when there is no `before`). */
async function changedPaths(repo: BranchRepository, before: string | undefined, after: string): Promise<string[]> {
  const listed = before
    ? await repo.run(["diff-tree", "-r", "--no-renames", "--name-only", "-z", before, after])
    : await repo.run(["ls-tree", "-r", "--name-only", "-z", after]);
  return listed.split("\0").filter(Boolean);
}

/** The branch HEAD is on (full ref name), or null when it is detached. */
async function headRef(repo: BranchRepository): Promise<string | null> {
  const ref = (await repo.run(["symbolic-ref", "-q", "HEAD"]).catch(() => "")).trim();
  return ref.startsWith(HEADS) ? ref : null;
}

/** main, master, the remote's default branch, or no branch (detached): loopgraph commits beside it. */
async function isTrunk(repo: BranchRepository, branch: string | null): Promise<boolean> {
  if (branch === null) return true;
  const name = short(branch);
  if (TRUNK_BRANCHES.has(name)) return true;
  const remoteHead = (await repo.run(["symbolic-ref", "-q", "refs/remotes/origin/HEAD"]).catch(() => "")).trim();
  return remoteHead !== "" && remoteHead === `refs/remotes/origin/${name}`;
}

/**
 * Who commits: the user's git identity (GIT_AUTHOR_* / GIT_COMMITTER_* in loopgraph's
 * environment, else `user.name`/`user.email` of their global, then system, config), else
 * loopgraph's own. Never the repository's config: a planted `user.*` (or an include) is not
 * the user.
 */
export async function commitIdentity(env: NodeJS.ProcessEnv): Promise<Record<string, string>> {
  const home = env.HOME ?? homedir();
  const files = env.GIT_CONFIG_GLOBAL
    ? [env.GIT_CONFIG_GLOBAL]
    : [join(home, ".gitconfig"), join(env.XDG_CONFIG_HOME || join(home, ".config"), "git", "config")];
  if (!env.GIT_CONFIG_NOSYSTEM) files.push(env.GIT_CONFIG_SYSTEM || "/etc/gitconfig");
  const configured = async (key: string): Promise<string | undefined> => {
    for (const file of files) {
      const value = (await git(["config", "--file", file, "--get", key], { cwd: tmpdir() }).catch(() => "")).trim();
      if (value) return value;
    }
    return undefined;
  };
  const name = env.GIT_AUTHOR_NAME || (await configured("user.name"));
  const email = env.GIT_AUTHOR_EMAIL || (await configured("user.email"));
  const author = name && email ? { name, email } : { name: LOOPGRAPH_IDENTITY.GIT_AUTHOR_NAME, email: LOOPGRAPH_IDENTITY.GIT_AUTHOR_EMAIL };
  return {
    GIT_AUTHOR_NAME: author.name,
    GIT_AUTHOR_EMAIL: author.email,
    GIT_COMMITTER_NAME: env.GIT_COMMITTER_NAME || author.name,
    GIT_COMMITTER_EMAIL: env.GIT_COMMITTER_EMAIL || author.email,
  };
}

async function readLog(workspace: string, threadId: string): Promise<CommitLog> {
  const folder = await realFolder(workspace, [STATE_DIR, COMMITS_DIR]);
  if (!folder) return { commits: [] };
  const text = await readFile(join(folder, `${threadId}.json`), "utf8").catch(() => undefined);
  if (text === undefined) return { commits: [] };
  let log: Partial<CommitLog>;
  try {
    log = JSON.parse(text) as Partial<CommitLog>;
  } catch {
    log = { commits: [{} as CommitEntry] };
  }
  // Branches and commits from it become git's arguments: each must be what loopgraph writes (a branch's full name, a commit id).
  const commits = Array.isArray(log.commits) ? log.commits : [];
  const fits =
    (log.runBranch === undefined || log.runBranch === null || isBranch(log.runBranch)) &&
    commits.every(
      (entry) =>
        isBranch(entry?.branch) &&
        isCommitId(entry.after) &&
        (entry.before === undefined || isCommitId(entry.before)) &&
        typeof entry.at === "string" &&
        (entry.created === undefined || entry.created.from === null || isBranch(entry.created.from)),
    );
  if (!fits) throw new GitError(`${join(folder, `${threadId}.json`)} is not a commit log loopgraph wrote: move it away`);
  return { ...(log.runBranch !== undefined && { runBranch: log.runBranch }), commits };
}

const isBranch = (value: unknown): value is string =>
  typeof value === "string" && value.startsWith(HEADS) && value.length > HEADS.length && !/[\s\0-\x1f]/.test(value);
const isCommitId = (value: unknown): value is string => typeof value === "string" && /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(value);

async function writeLog(workspace: string, threadId: string, log: CommitLog): Promise<void> {
  const folder = await stateFolder(workspace, [COMMITS_DIR]);
  const file = join(folder, `${threadId}.json`);
  const temporary = `${file}.${randomUUID()}.tmp`;
  await writeFile(temporary, `${JSON.stringify(log, null, 2)}\n`);
  await rename(temporary, file);
}
