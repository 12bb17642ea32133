/**
 * A Coder with `workspace: worktree` works in its own branch worktree (src/git/worktrees/): every
 * tool it calls, its shell and the sandbox see that folder as the workspace, so coders that run at
 * the same time never share a working tree, and the run's workspace is untouched until a merge
 * node applies the branch. Opening and committing the worktree are effects: recorded, and a
 * recorded replay takes them from the record without touching the workspace.
 */
import { dirname } from "node:path";
import { LoopgraphError } from "../../errors.js";
import { branchDiff, commitBranch, openBranchWorktree, type BranchFileChange } from "../../git/worktrees/index.js";
import type { RunContext } from "../../runtime/context.js";
import { performFallibleEffect } from "../../runtime/effects.js";

/** Which of a node's parallel runs (a map's instance, later): one run per node for now. */
export const SINGLE_RUN_INDEX = 0;

/** A Coder's worktree as its visit uses it. */
export interface CoderWorktree {
  dir: string;
  branch: string;
}

/** What a visit's branch holds at its end. */
export interface CoderBranch {
  branch: string;
  files: BranchFileChange[];
}

function gitEffect<T>(ctx: RunContext, node: string, name: string, index: number, perform: () => Promise<T>): Promise<T> {
  const request = { kind: "git" as const, node, name, args: { index } };
  return performFallibleEffect(ctx, request, perform, (message) => new LoopgraphError(`node "${node}": its branch worktree: ${message}`));
}

function branchOptions(ctx: RunContext, node: string, index: number) {
  return { workspace: ctx.workspace, threadId: ctx.threadId, node, index, secrets: ctx.secrets ?? [] };
}

/** The visit's worktree: the one an earlier visit (or the run before a crash) left, else a new one of the workspace as it is now. */
export function openCoderWorktree(ctx: RunContext, node: string, index = SINGLE_RUN_INDEX): Promise<CoderWorktree> {
  return gitEffect(ctx, node, "open_worktree", index, async () => {
    const worktree = await openBranchWorktree(branchOptions(ctx, node, index));
    return { dir: worktree.dir, branch: worktree.branch };
  });
}

/** Commits the worktree on its branch (a resume that commits again changes nothing) and says what the branch changed. */
export function commitCoderWorktree(ctx: RunContext, node: string, visit: number, index = SINGLE_RUN_INDEX): Promise<CoderBranch> {
  return gitEffect(ctx, node, "commit_worktree", index, async () => {
    const options = branchOptions(ctx, node, index);
    const worktree = await openBranchWorktree(options);
    await commitBranch(worktree, `loopgraph: ${node}, visit ${visit}`, options.secrets);
    return { branch: worktree.branch, files: (await branchDiff(worktree)).files };
  });
}

/**
 * The run's context as the Coder in `worktree` sees it: the folder is its workspace (its tools, its
 * shell's cwd, the sandbox's one writable folder); git run there without the sandbox cannot climb
 * to the user's repository (`GIT_CEILING_DIRECTORIES` is the thread's folder of worktrees); its
 * MCP servers' stdio processes run there too (a hub of their own, closed with the run's); no
 * workspace snapshots (its steps change only its branch). Everything else is read from
 * `ctx` when used: the engine sets some of it later (the approval a resume answers).
 */
export function worktreeContext(ctx: RunContext, dir: string): RunContext {
  const overrides: Partial<RunContext> = {
    workspace: dir,
    runWorkspace: ctx.runWorkspace ?? ctx.workspace,
    commandVariables: { ...ctx.commandVariables, GIT_CEILING_DIRECTORIES: dirname(dir) },
    snapshots: undefined,
    ...(ctx.mcp && { mcp: ctx.mcp.in(dir) }),
  };
  const own = (key: string | symbol) => Object.hasOwn(overrides, key);
  const value = (key: string | symbol) => overrides[key as keyof RunContext];
  return new Proxy(ctx, {
    get: (target, key, receiver) => (own(key) ? value(key) : Reflect.get(target, key, receiver)),
    has: (target, key) => own(key) || Reflect.has(target, key),
    // A copy (`{ ...ctx }`) gets the overrides too.
    ownKeys: (target) => [...new Set([...Reflect.ownKeys(target), ...Object.keys(overrides)])],
    getOwnPropertyDescriptor: (target, key) =>
      own(key)
        ? { value: value(key), writable: true, enumerable: true, configurable: true }
        : Reflect.getOwnPropertyDescriptor(target, key),
  });
}
