import type { RunnableConfig } from "@langchain/core/runnables";
import type { SnapshotTable } from "../runs/snapshot-log.js";
import { isConnectionLost } from "../store/postgres/outage.js";
import { stopsRun } from "../store/store.js";
import { isMcpToolName } from "../tools/mcp-servers.js";
import { BUILTIN_TOOLS } from "../tools/registry.js";
import { pinThreadBranch } from "../git/commit.js";
import { openSnapshotRepository, type SnapshotRepository } from "./shadow-repo.js";
import { stepCheckpoint } from "./step-checkpoint.js";

/** A tool call about to run in a node. */
export interface ToolStep {
  node: string;
  tool: string;
  toolCallId: string;
  /** The config LangGraph passed to the node: it tells which checkpoint the step started from. */
  config?: RunnableConfig;
  /** A step that is no tool call but writes the workspace (a merge node's): snapshotted whatever `tool` is. */
  writesFiles?: true;
}

/** Workspace snapshots around tool steps, for `loopgraph rewind` (see RunContext.snapshots). */
export interface ToolStepSnapshots {
  /** Runs the step; when its tool can change files, snapshots the workspace before and after it. */
  around<T>(step: ToolStep, run: () => Promise<T>): Promise<T>;
}

/**
 * Tools that can change files: those that edit, the shell, and MCP servers' tools (a stdio server
 * works in the workspace); and `git_commit`, whose step `rewind` must see to undo its commit.
 */
const FILE_CHANGING = new Set(
  BUILTIN_TOOLS.filter((tool) => tool.effect === "edit" || tool.effect === "execute" || tool.effect === "commit").map((tool) => tool.name),
);
const changesFiles = (tool: string): boolean => FILE_CHANGING.has(tool) || isMcpToolName(tool);

export interface ToolStepSnapshotsOptions {
  threadId: string;
  workspace: string;
  log: SnapshotTable;
  /** Told once, when snapshots fail (git missing …): the run goes on without them. */
  warn(message: string): void;
  /** Values no snapshot may hold (the run's secrets). */
  secrets?: readonly string[];
  /** Told of the workspace's tree after each file-changing step (a repository workspace saves its state then). */
  stepped?(repo: SnapshotRepository, tree: string): Promise<void>;
}

/**
 * Snapshots for one run: the first failure turns them off for the rest of the run, with a warning;
 * but a store locked by another program beyond the busy timeout, or full, stops the step (and the
 * run, which ends interrupted: see `Thread.execute`), since the snapshot log would miss the step.
 */
export function createToolStepSnapshots(options: ToolStepSnapshotsOptions): ToolStepSnapshots {
  const { threadId, workspace, log } = options;
  let repository: Promise<SnapshotRepository> | undefined;
  let off = false;
  const turnOff = (error: unknown): void => {
    // The store stopped the run (locked, full, or its server gone): not a reason to give up snapshots.
    if (stopsRun(error) || isConnectionLost(error)) throw error;
    if (off) return;
    off = true;
    const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
    options.warn(
      `workspace snapshots are off for the rest of this run (${reason}): \`loopgraph rewind\` cannot restore the files it changes`,
    );
  };

  let pinned: Promise<void> | undefined;
  return {
    async around(step, run) {
      const checkpoint = stepCheckpoint(step.config);
      const changing = step.writesFiles || changesFiles(step.tool);
      // The branch the thread's work starts on is the one its commits go to (git/commit.ts); without git, none.
      if (changing) await (pinned ??= pinThreadBranch(workspace, threadId).catch(() => undefined));
      if (off || !checkpoint || !changing) return run();
      let opened: { seq: number; before: string; repo: SnapshotRepository } | undefined;
      try {
        repository ??= openSnapshotRepository(workspace, { secrets: options.secrets ?? [] });
        const repo = await repository;
        const before = await repo.capture();
        const seq = await log.open({
          threadId,
          checkpoint,
          node: step.node,
          tool: step.tool,
          toolCallId: step.toolCallId,
          treeBefore: before,
        });
        opened = { seq, before, repo };
      } catch (error) {
        turnOff(error);
      }
      try {
        return await run();
      } finally {
        if (opened && !off) {
          const { seq, before, repo } = opened;
          try {
            const after = await repo.capture();
            const paths = (await repo.diff(before, after)).map((change) => change.path);
            await repo.keep([before, after], `${threadId} #${seq} ${step.tool} ${step.toolCallId}`);
            await log.close(threadId, seq, after, paths);
            await options.stepped?.(repo, after);
          } catch (error) {
            turnOff(error);
          }
        }
      }
    },
  };
}
