/**
 * Running the user's hooks (declared as hook-config.ts reads them): each given a JSON description
 * of its event on stdin, run as the shell tool runs the agent's commands.
 */
import type { Hook, HookEvent } from "./hook-config.js";
import { availableSandbox, sandboxForDeclared } from "./sandbox.js";
import { endingText, runWithInput } from "./shell.js";
import type { ToolContext } from "./types.js";

/** What one hook did: recorded with the run, so a recorded replay takes the same decision without running it. */
export interface HookOutcome {
  command: string;
  /** Null when it did not exit by itself (a timeout, cancelled) or did not run (`skipped`). */
  exitCode: number | null;
  timedOut?: boolean;
  /** Why it did not run (a project's hook where no sandbox can start). */
  skipped?: string;
  stdout: string;
  stderr: string;
}

/** The most of a hook's output kept (each stream). */
const OUTPUT_KEPT = 8_000;
const clip = (text: string) =>
  text.length > OUTPUT_KEPT ? `${text.slice(0, OUTPUT_KEPT)}\n[… ${text.length - OUTPUT_KEPT} more characters]` : text;

/**
 * Runs one hook with `input` (JSON) on its stdin, in the workspace, as the shell tool runs a
 * command. A hook from a project's file runs only inside the OS sandbox, with the workspace
 * read-only: elsewhere it is skipped.
 */
export async function runHook(hook: Hook, input: object, ctx: ToolContext): Promise<HookOutcome> {
  // Where the shell tool would run it (its default: the best this machine has), a project's only in bubblewrap with the workspace read-only.
  const sandbox = sandboxForDeclared(ctx.sandbox ?? availableSandbox(ctx.env), hook.trusted, ctx.env);
  if (!sandbox) {
    const why = ctx.sandbox?.name === "off" ? "the sandbox is off for this run" : "no OS sandbox can start here";
    return {
      command: hook.command,
      exitCode: null,
      skipped: `not run: it is declared in ${hook.origin}, and such a hook runs only in the OS sandbox, but ${why}`,
      stdout: "",
      stderr: "",
    };
  }
  // A hook's output is its own, not the tool call's: it is not shown live.
  const where: ToolContext = { ...ctx, sandbox, onOutput: undefined };
  try {
    const outcome = await runWithInput(hook.command, `${JSON.stringify(input)}\n`, where, hook.timeoutMs);
    return {
      command: hook.command,
      exitCode: outcome.exitCode,
      ...(outcome.timedOut && { timedOut: true }),
      stdout: clip(outcome.stdout),
      stderr: clip(outcome.stderr),
    };
  } catch (error) {
    return {
      command: hook.command,
      exitCode: null,
      skipped: `could not start: ${(error as Error).message.split("\n")[0]}`,
      stdout: "",
      stderr: "",
    };
  }
}

/** The exit code with which a `before_tool` hook blocks a call. */
export const BLOCK_EXIT_CODE = 2;

/** Whether a `before_tool` hook's outcome blocks the call, and the reason the model is told. */
export function blockingReason(outcome: HookOutcome): string | undefined {
  const said = (outcome.stderr.trim() || outcome.stdout.trim()).slice(0, 2_000);
  if (outcome.exitCode === 0) {
    const decision = jsonDecision(outcome.stdout);
    return decision?.decision === "block" ? decision.reason || `the hook \`${outcome.command}\` blocked it` : undefined;
  }
  if (outcome.exitCode === BLOCK_EXIT_CODE) return said || `the hook \`${outcome.command}\` blocked it`;
  const how = outcome.skipped ?? `it ${endingText(outcome)}`;
  return `the before_tool hook \`${outcome.command}\` failed (${how}), so the call was not run${said ? `: ${said}` : ""}`;
}

function jsonDecision(stdout: string): { decision?: unknown; reason?: string } | undefined {
  const text = stdout.trim();
  if (!text.startsWith("{")) return undefined;
  try {
    const parsed = JSON.parse(text) as { decision?: unknown; reason?: unknown };
    return { decision: parsed.decision, ...(typeof parsed.reason === "string" && { reason: parsed.reason }) };
  } catch {
    return undefined;
  }
}

/** Why a hook other than `before_tool` failed, for a warning; undefined when it succeeded. */
export function hookFailure(event: HookEvent, outcome: HookOutcome): string | undefined {
  if (outcome.exitCode === 0) return undefined;
  const how = outcome.skipped ?? endingText(outcome);
  const said = outcome.stderr.trim().split("\n").slice(-3).join(" | ").slice(0, 400);
  return `the ${event} hook \`${outcome.command}\` ${how}${said ? `: ${said}` : ""}`;
}
