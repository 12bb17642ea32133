/**
 * The Review's check command (`check:` of a review node): the graph author's command, such as the
 * project's tests, run where the reviewed Coder worked (its branch worktree, for a worktree
 * coder) as the Coder's shell runs commands: in the run's sandbox, with the agent's environment,
 * its process group killed on timeout or cancellation. It passes when it exits 0.
 */
import { dirname, join } from "node:path";
import { cancelledByUser } from "../../errors.js";
import { openBranchWorktree } from "../../git/worktrees/index.js";
import { STATE_DIR } from "../../project.js";
import type { RunContext } from "../../runtime/context.js";
import { performEffect } from "../../runtime/effects.js";
import { availableSandbox } from "../../tools/sandbox.js";
import { endingText, outputTail, runWithInput } from "../../tools/shell.js";
import type { ToolContext } from "../../tools/types.js";
import type { CommandCheckResult } from "../../state/looper.js";

/** The output the review keeps of a failed check: its end, where test runners print their summary. */
const OUTPUT_TAIL_CHARS = 2_000;

/** Where a reviewed change is: a worktree coder's branch, or (none) the run's workspace. */
export interface CheckPlace {
  /** The name the check's record goes under (the review, or its instance `review[i]`). */
  caller: string;
  branch?: { node: string; index: number };
}

/**
 * Runs the check for one reviewed change; recorded, so a recorded replay takes the outcome from the
 * record and runs nothing. Only a cancelled run stops it; any other failure is the result's.
 */
export async function runCheckCommand(
  ctx: RunContext,
  check: { command: string; timeoutMs: number },
  place: CheckPlace,
): Promise<CommandCheckResult> {
  const request = {
    kind: "hook" as const,
    node: place.caller,
    name: "check",
    args: { command: check.command, ...(place.branch && { branch: place.branch }) },
  };
  return performEffect(ctx, request, async (): Promise<CommandCheckResult> => {
    let result: CommandCheckResult;
    try {
      result = await runIn(ctx, check, place);
    } catch (error) {
      result = notRun(check.command, `could not run it: ${(error as Error).message.split("\n")[0]}`);
    }
    // A cancelled check has no outcome: the step runs again on resume.
    if (cancelledByUser(ctx.signal)) throw ctx.signal.reason;
    return result;
  });
}

async function runIn(ctx: RunContext, check: { command: string; timeoutMs: number }, place: CheckPlace): Promise<CommandCheckResult> {
  const workspace = ctx.runWorkspace ?? ctx.workspace;
  // The folder as the branch's tip holds it: reopened from the branch when the run that made it ended.
  const folder = place.branch
    ? (await openBranchWorktree({ workspace, threadId: ctx.threadId, ...place.branch, secrets: ctx.secrets ?? [] })).dir
    : ctx.workspace;
  // The graph author's own command (a trusted declaration): it runs as the run's commands do (in the OS sandbox where one can start).
  const sandbox = ctx.sandbox ?? availableSandbox(ctx.env);
  const where: ToolContext = {
    workspace: folder,
    env: ctx.env,
    artifactsDir: join(workspace, STATE_DIR, "artifacts", ctx.threadId),
    signal: ctx.signal,
    sandbox,
    secrets: ctx.secrets,
    // In a worktree, git must not climb to the user's repository above it (see coder/worktree.ts).
    commandVariables: { ...ctx.commandVariables, ...(place.branch && { GIT_CEILING_DIRECTORIES: dirname(folder) }) },
    ...(ctx.commandGroups && { commandGroups: ctx.commandGroups }),
  };
  const outcome = await runWithInput(check.command, undefined, where, check.timeoutMs);
  const output = outputTail(outcome, OUTPUT_TAIL_CHARS);
  const passed = outcome.exitCode === 0;
  const how = endingText(outcome, check.timeoutMs);
  const comment = passed ? `\`${check.command}\` passed` : `\`${check.command}\` failed (it ${how})${output ? `:\n${output}` : ""}`;
  return {
    ok: true,
    rating: passed ? "normal" : "critical",
    comments: [comment],
    command: check.command,
    passed,
    exitCode: outcome.exitCode,
  };
}

/** A check that did not run: it did not pass, and the review is not complete. */
function notRun(command: string, error: string): CommandCheckResult {
  return { ok: false, comments: [], error, command, passed: false, exitCode: null };
}
