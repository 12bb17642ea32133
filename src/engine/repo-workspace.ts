/**
 * Workspaces of queued runs that name a repository (`run --queue --repo URL|PATH [--ref REF]`):
 * whichever machine runs the thread (a worker, or `resume --approve` anywhere) clones the
 * repository into its own scratch directory, checks out the base commit and applies the patch the
 * store holds of the workspace's latest state. Every file-changing step saves that patch again, so
 * a run taken over by another machine goes on from the same files. When the run ends, its result
 * becomes one commit on the base commit, pushed to the branch `loopgraph/<thread>`; without push
 * access the patch stays in the store (`loopgraph patch THREAD`).
 *
 * On disk, under LOOPGRAPH_WORKSPACES (default ~/.cache/loopgraph/workspaces), per thread:
 * `repo.git`, a bare clone only loopgraph writes (results are committed and pushed from it), and
 * `workspace`, the agent's working copy (a clone sharing its objects).
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { ConfigError } from "../errors.js";
import { remoteGit } from "../git/remote.js";
import { git, GitError, LOOPGRAPH_IDENTITY } from "../git/run.js";
import { requireThread, withTables, type StoreOptions } from "../store/tables.js";
import type { RepoResult, RepoSource, RepoWorkspaceRecord, RepoWorkspaceTable } from "../runs/repo-workspaces.js";
import { openSnapshotRepository, type SnapshotRepository } from "../snapshots/shadow-repo.js";

/** The branch a thread's result is pushed to. */
export function resultBranch(threadId: string): string {
  return `loopgraph/${threadId}`;
}

/** Whether the thread's result branch is a valid branch name (git's rules: no `..`, no trailing `.` or `.lock`, …). */
export function namesResultBranch(threadId: string): Promise<boolean> {
  return git(["check-ref-format", `refs/heads/${resultBranch(threadId)}`], { cwd: tmpdir() }).then(
    () => true,
    () => false,
  );
}

const URL_FORM = /^([a-z][a-z0-9+.-]*):\/\//i;
/** `user@host:path`, git's scp-like ssh form. */
const SCP_FORM = /^[^/:@\s]+@[^/:\s]+:/;
const SCHEMES = new Set(["https", "http", "ssh", "git", "file"]);
const COMMIT_ID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

/**
 * The repository and ref of a queued run, checked: a URL (https, ssh, git, file, or
 * `user@host:path`) without a password, or a local path (made absolute); the ref (default: the
 * repository's HEAD) resolved to the commit every worker starts from. One-line errors (exit 2).
 */
export async function checkRepoSource(
  repo: string,
  ref: string | undefined,
  threadId: string,
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<RepoSource> {
  const given = repo.trim();
  if (!given || given.startsWith("-") || /[\0-\x1f\x7f]/.test(given))
    throw new ConfigError(`--repo "${repo}" is not a repository URL or path`);
  let location: string;
  const scheme = URL_FORM.exec(given)?.[1]?.toLowerCase();
  if (scheme) {
    if (!SCHEMES.has(scheme))
      throw new ConfigError(`--repo: the ${scheme}:// scheme is not supported: use https://, ssh://, git://, file:// or a path`);
    let url: URL;
    try {
      url = new URL(given);
    } catch {
      throw new ConfigError(`--repo "${given}" is not a valid URL`);
    }
    if (url.password) {
      throw new ConfigError(
        "--repo: the URL holds a password, which loopgraph would store with the run: give the URL without it and let git find the credentials (a credential helper, an ssh key)",
      );
    }
    location = given;
  } else if (SCP_FORM.test(given)) {
    location = given;
  } else if (/^[a-z][a-z0-9+.-]*::/i.test(given)) {
    throw new ConfigError(`--repo: remote helpers (${given.split("::")[0]}::) are not supported: use a URL or a path`);
  } else {
    location = resolve(options.cwd, given);
    if (!existsSync(location)) throw new ConfigError(`--repo: no repository at ${location}`);
  }
  if (!(await namesResultBranch(threadId)))
    throw new ConfigError(`thread id "${threadId}" cannot name the result branch ${resultBranch(threadId)}: pass --thread with another id`);
  const wanted = ref?.trim() || "HEAD";
  if (wanted.startsWith("-") || /[\0-\x20\x7f~^:?*[\\]/.test(wanted))
    throw new ConfigError(`--ref "${wanted}" is not a branch, tag or commit name`);
  let listed: string;
  try {
    listed = await remoteGit(["ls-remote", "--", location], { cwd: tmpdir(), env: options.env });
  } catch (error) {
    throw new ConfigError(`cannot read the repository ${location}: ${(error as Error).message}`);
  }
  return { repo: location, ref: wanted, commit: pickCommit(listed, wanted, location) };
}

/** The commit `ref` names among `git ls-remote`'s lines: a branch, a tag (peeled), a full ref, or a commit id. */
function pickCommit(listed: string, ref: string, repo: string): string {
  const refs = new Map(
    listed
      .split("\n")
      .filter(Boolean)
      .map((line) => {
        const [id = "", name = ""] = line.split("\t");
        return [name, id] as const;
      }),
  );
  for (const name of [ref, `refs/heads/${ref}`, `refs/tags/${ref}^{}`, `refs/tags/${ref}`]) {
    const id = refs.get(name);
    if (id) return id;
  }
  // A commit id: the clone checks that it is there.
  if (COMMIT_ID.test(ref)) return ref;
  throw new ConfigError(
    ref === "HEAD"
      ? `the repository ${repo} has no HEAD: pass --ref BRANCH`
      : `--ref ${ref}: no such branch or tag in ${repo} (a commit is given by its full id)`,
  );
}

/** The scratch directories of this machine's repository workspaces. */
function workspacesRoot(env: NodeJS.ProcessEnv): string {
  const configured = env.LOOPGRAPH_WORKSPACES;
  if (configured) return resolve(configured);
  return join(
    env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(homedir(), ".cache"),
    "loopgraph",
    "workspaces",
  );
}

/** What this machine last did in a thread's directory: the workspace holds `tree` (see `prepare`). */
interface LocalState {
  commit: string;
  baseTree: string;
  tree: string;
}

/** A thread's workspace on this machine, ready to run in. */
export class RepoWorkspace {
  private constructor(
    readonly threadId: string,
    private readonly table: RepoWorkspaceTable,
    private readonly source: RepoSource,
    private readonly dir: string,
    private state: LocalState,
    private readonly secrets: readonly string[],
  ) {}

  /** The agent's working copy. */
  get workspace(): string {
    return join(this.dir, "workspace");
  }

  private get bare(): string {
    return join(this.dir, "repo.git");
  }

  /**
   * The thread's workspace on this machine: reused when it holds the state the store last saved
   * (this machine saved it); otherwise made again, from a clone of the base commit and the saved
   * patch. `warn` is told when the files made again differ from the saved state.
   */
  static async prepare(
    table: RepoWorkspaceTable,
    record: RepoWorkspaceRecord,
    options: { env: NodeJS.ProcessEnv; secrets: readonly string[]; warn(message: string): void },
  ): Promise<RepoWorkspace> {
    const dir = join(workspacesRoot(options.env), record.threadId);
    const local = await readLocalState(dir);
    if (local && local.commit === record.commit && local.tree === (record.tree ?? local.baseTree) && existsSync(join(dir, "workspace"))) {
      return new RepoWorkspace(record.threadId, table, record, dir, local, options.secrets);
    }
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const bare = join(dir, "repo.git");
    const workspace = join(dir, "workspace");
    try {
      await remoteGit(["clone", "--bare", "--quiet", "--no-local", "--", record.repo, bare], { cwd: dir, env: options.env });
    } catch (error) {
      throw new ConfigError(`cannot clone ${record.repo} for thread "${record.threadId}": ${(error as Error).message}`);
    }
    if (!(await hasCommit(bare, record.commit))) {
      // Not on a branch or tag any more (a force-push): asked for by its id.
      // A server that refuses to give a commit by its id: the check below says the commit is missing.
      await remoteGit(["fetch", "--quiet", "--", record.repo, record.commit], { cwd: bare, env: options.env }).catch(() => undefined);
      if (!(await hasCommit(bare, record.commit)))
        throw new ConfigError(`the commit ${record.commit} of ${record.repo} (${record.ref}) the run started from is no longer there`);
    }
    await git(["clone", "--quiet", "--shared", "--no-checkout", "--", bare, workspace], { cwd: dir });
    await git(["checkout", "--quiet", "-B", resultBranch(record.threadId), record.commit], { cwd: workspace });
    const snapshots = await openSnapshotRepository(workspace, { secrets: options.secrets });
    const baseTree = await snapshots.capture();
    let tree = baseTree;
    if (record.patch && record.patch.length > 0) {
      await git(["apply", "--binary", "--whitespace=nowarn", "-"], { cwd: workspace, input: record.patch });
      tree = await snapshots.capture();
      if (record.tree && tree !== record.tree) {
        options.warn(
          `the workspace of thread "${record.threadId}" made again from its saved patch differs from the saved state (tree ${tree}, saved ${record.tree})`,
        );
      }
    }
    const state = { commit: record.commit, baseTree: record.baseTree ?? baseTree, tree: record.tree ?? tree };
    await writeLocalState(dir, state);
    return new RepoWorkspace(record.threadId, table, record, dir, state, options.secrets);
  }

  /** After a step changed files (the snapshot of its end is `tree`): saves the workspace's state in the store. */
  async saveProgress(snapshots: SnapshotRepository, tree: string): Promise<void> {
    if (tree !== this.state.tree) await this.save(snapshots, tree);
  }

  /** Saves the workspace as tree `tree` in the store (the patch from the base tree) and in this machine's state; returns the patch. */
  private async save(snapshots: SnapshotRepository, tree: string): Promise<Buffer> {
    const patch = await snapshots.patch(this.state.baseTree, tree);
    await this.table.saveProgress(this.threadId, { baseTree: this.state.baseTree, tree, patch });
    this.state = { ...this.state, tree };
    await writeLocalState(this.dir, this.state);
    return patch;
  }

  /**
   * The run ended: saves the workspace's final state, commits it on the base commit and pushes
   * that to `loopgraph/<thread>`. A failed push (no access …) is reported in the result, the
   * patch kept in the store; nothing changed: no commit, no push.
   */
  async publish(message: string, env: NodeJS.ProcessEnv): Promise<RepoResult> {
    const snapshots = await openSnapshotRepository(this.workspace, { secrets: this.secrets });
    const patch = await this.save(snapshots, await snapshots.capture());
    const at = new Date().toISOString();
    let result: RepoResult = { at };
    if (patch.length > 0) {
      const commit = await this.commit(patch, message);
      result = { at, commit };
      try {
        await remoteGit(["push", "--quiet", "--", this.source.repo, `+${commit}:refs/heads/${resultBranch(this.threadId)}`], {
          cwd: this.bare,
          env,
        });
        result.branch = resultBranch(this.threadId);
      } catch (error) {
        result.pushError = (error as Error).message;
      }
    }
    await this.table.saveResult(this.threadId, result);
    return result;
  }

  /** A commit of the base commit with `patch` applied, in the bare clone loopgraph alone writes. */
  private async commit(patch: Buffer, message: string): Promise<string> {
    const scratch = await mkdtemp(join(tmpdir(), "loopgraph-result-"));
    const options = { cwd: this.dir, repository: [`--git-dir=${this.bare}`], indexFile: join(scratch, "index") };
    try {
      await git(["read-tree", this.source.commit], options);
      await git(["apply", "--cached", "--binary", "--whitespace=nowarn", "-"], { ...options, input: patch });
      const tree = (await git(["write-tree"], options)).trim();
      return (
        await git(["commit-tree", "--no-gpg-sign", "-p", this.source.commit, "-m", message, tree], { ...options, env: LOOPGRAPH_IDENTITY })
      ).trim();
    } catch (error) {
      throw new GitError(`cannot make the result commit of thread "${this.threadId}": ${(error as Error).message}`);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }
}

async function hasCommit(bare: string, commit: string): Promise<boolean> {
  return git(["cat-file", "-e", `${commit}^{commit}`], { cwd: bare, repository: [`--git-dir=${bare}`] }).then(
    () => true,
    () => false,
  );
}

async function readLocalState(dir: string): Promise<LocalState | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, "state.json"), "utf8")) as LocalState;
  } catch {
    return undefined;
  }
}

function writeLocalState(dir: string, state: LocalState): Promise<void> {
  return writeFile(join(dir, "state.json"), JSON.stringify(state));
}

/** How a result reads for people: where it went, or where to get it. */
export function resultText(threadId: string, source: RepoSource, result: RepoResult, dbFlag: string): string {
  if (!result.commit) return `no file changed: nothing pushed to ${source.repo}`;
  if (result.branch)
    return `pushed ${result.commit.slice(0, 12)} to ${result.branch} in ${source.repo} (on ${source.ref} at ${source.commit.slice(0, 12)})`;
  return `not pushed to ${source.repo} (${result.pushError}): get the patch with loopgraph patch ${threadId}${dbFlag}`;
}

/** The repository a thread works on and its workspace's saved state (`loopgraph patch`, `wait`), read from the store. */
export async function readRepoWorkspace(threadId: string, options: StoreOptions): Promise<RepoWorkspaceRecord> {
  return withTables(options, "read", async (tables) => {
    const record = await requireThread(tables, threadId);
    const saved = await tables.repoWorkspaces?.get(record.threadId);
    if (!saved)
      throw new ConfigError(
        `thread "${record.threadId}" does not work on a repository: only a run queued with --repo keeps a patch (its files are in ${record.workspace})`,
      );
    return saved;
  });
}
