import type pg from "pg";
import type { RepoResult, RepoSource, RepoWorkspaceRecord, RepoWorkspaceTable } from "../../runs/repo-workspaces.js";

/** The repositories of queued runs, and their workspaces' state (see repo-workspaces.ts). */
export class PostgresRepoWorkspaces implements RepoWorkspaceTable {
  constructor(private readonly pool: pg.Pool) {}

  async create(threadId: string, source: RepoSource): Promise<void> {
    // A row without its thread (an enqueue killed before it recorded the thread) is replaced whole.
    await this.pool.query(
      `INSERT INTO loopgraph_repo_workspaces (thread_id, repo, ref, commit, updated_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (thread_id) DO UPDATE SET repo = $2, ref = $3, commit = $4, base_tree = NULL, tree = NULL, patch = NULL, result = NULL, updated_at = $5`,
      [threadId, source.repo, source.ref, source.commit, new Date().toISOString()],
    );
  }

  async get(threadId: string): Promise<RepoWorkspaceRecord | undefined> {
    const { rows } = await this.pool.query<{
      repo: string;
      ref: string;
      commit: string;
      base_tree: string | null;
      tree: string | null;
      patch: Buffer | null;
      result: string | null;
    }>(`SELECT repo, ref, commit, base_tree, tree, patch, result FROM loopgraph_repo_workspaces WHERE thread_id = $1`, [threadId]);
    const row = rows[0];
    if (!row) return undefined;
    return {
      threadId,
      repo: row.repo,
      ref: row.ref,
      commit: row.commit,
      ...(row.base_tree ? { baseTree: row.base_tree } : {}),
      ...(row.tree ? { tree: row.tree } : {}),
      ...(row.patch ? { patch: row.patch } : {}),
      ...(row.result ? { result: JSON.parse(row.result) as RepoResult } : {}),
    };
  }

  async saveProgress(threadId: string, state: { baseTree: string; tree: string; patch: Buffer }): Promise<void> {
    await this.pool.query(
      `UPDATE loopgraph_repo_workspaces SET base_tree = $2, tree = $3, patch = $4, result = NULL, updated_at = $5 WHERE thread_id = $1`,
      [threadId, state.baseTree, state.tree, state.patch, new Date().toISOString()],
    );
  }

  async saveResult(threadId: string, result: RepoResult): Promise<void> {
    await this.pool.query(`UPDATE loopgraph_repo_workspaces SET result = $2, updated_at = $3 WHERE thread_id = $1`, [
      threadId,
      JSON.stringify(result),
      new Date().toISOString(),
    ]);
  }
}
