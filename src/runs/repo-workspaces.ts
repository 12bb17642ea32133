/**
 * The repositories queued runs work on (`run --queue --repo URL|PATH --ref REF`): a run's
 * workspace is a clone that any worker rebuilds from what is kept here (the base commit, and the
 * patch from it to the workspace's latest state), so a run does not depend on one machine's disk.
 * Kept in a PostgreSQL store only (the queue needs one).
 */

/** Which repository, and which commit of it, a run starts from. */
export interface RepoSource {
  /** A URL git can clone, or an absolute path. */
  repo: string;
  /** The ref as given (a branch, tag or commit). */
  ref: string;
  /** The commit the ref named when the run was queued: every worker starts from this one. */
  commit: string;
}

/** Where a run's result went once it ended. */
export interface RepoResult {
  /** The commit made of the result on top of the base commit (none when nothing changed). */
  commit?: string;
  /** The branch it was pushed to; undefined when the push failed (see pushError) or nothing changed. */
  branch?: string;
  /** Why the push failed (no push access …): the patch is kept instead (`loopgraph patch`). */
  pushError?: string;
  at: string;
}

export interface RepoWorkspaceRecord extends RepoSource {
  threadId: string;
  /** The tree of the checkout of `commit`, as snapshots write it: what `patch` applies to. */
  baseTree?: string;
  /** The workspace's latest saved state, and the patch from `baseTree` to it (binary-safe, `git apply`). */
  tree?: string;
  patch?: Buffer;
  /** Set when the run ended and its result was delivered; cleared when it runs again. */
  result?: RepoResult;
}

export interface RepoWorkspaceTable {
  create(threadId: string, source: RepoSource): Promise<void>;
  get(threadId: string): Promise<RepoWorkspaceRecord | undefined>;
  /** Saves the workspace's state (after a step changed files): what another machine rebuilds it from. */
  saveProgress(threadId: string, state: { baseTree: string; tree: string; patch: Buffer }): Promise<void>;
  /** Records where the result of the ended run went. */
  saveResult(threadId: string, result: RepoResult): Promise<void>;
}

/**
 * What a thread that works on a repository records as its workspace: the repository and ref, for
 * people to read. A local thread's workspace is an absolute path; this never is one.
 */
export function repoWorkspaceLabel(source: Pick<RepoSource, "repo" | "ref">): string {
  return `git ${source.repo} ${source.ref}`;
}

/** Whether a thread's recorded workspace names a repository that workers clone (not a directory). */
export function isRepoWorkspace(workspace: string): boolean {
  return workspace.startsWith("git ");
}
