/**
 * The user's hooks at the points of a run (src/tools/hooks.ts runs one): before and after a tool
 * call (recorded effects: a recorded replay takes the same decisions without running them), and
 * at a session's start and end (not run in a recorded replay, which performs nothing).
 */
import { cancelledByUser } from "../errors.js";
import { toolMatches } from "../policy/index.js";
import type { Hook, HookEvent } from "../tools/hook-config.js";
import { blockingReason, hookFailure, runHook, type HookOutcome } from "../tools/hooks.js";
import type { ToolContext } from "../tools/types.js";
import type { RunContext } from "./context.js";
import { performEffect } from "./effects.js";

/** The hooks of `event` (for a tool event, those whose `tools` match the tool). */
export function hooksOf(ctx: RunContext, event: HookEvent, tool?: string): Hook[] {
  return (ctx.hooks ?? []).filter(
    (hook) => hook.event === event && (hook.tools === undefined || tool === undefined || toolMatches(hook.tools, tool)),
  );
}

/**
 * Runs the hooks in order with `input` on their stdin, each announced as a `hook` event; a
 * before_tool hook that blocks ends the list. A cancelled run (Ctrl-C) stops at once, nothing
 * recorded. With `record` (a tool call's hooks, inside a graph task), the outcomes are a recorded
 * effect.
 */
export async function runEventHooks(
  ctx: RunContext,
  hooks: readonly Hook[],
  input: { event: HookEvent } & Record<string, unknown>,
  tools: () => ToolContext,
  where: { node?: string; record?: { args: unknown } } = {},
): Promise<HookOutcome[]> {
  if (hooks.length === 0) return [];
  const perform = async (): Promise<HookOutcome[]> => {
    const outcomes: HookOutcome[] = [];
    for (const hook of hooks) {
      const outcome = await runHook(hook, input, tools());
      if (cancelledByUser(ctx.signal)) throw ctx.signal.reason;
      outcomes.push(outcome);
      if (input.event === "before_tool" && blockingReason(outcome) !== undefined) break;
    }
    return outcomes;
  };
  const node = where.node;
  const outcomes =
    where.record && node !== undefined
      ? await performEffect(ctx, { kind: "hook", node, name: input.event, args: where.record.args }, perform)
      : await perform();
  for (const outcome of outcomes) {
    const blocked = input.event === "before_tool" && blockingReason(outcome) !== undefined;
    const failure = blocked ? undefined : hookFailure(input.event, outcome);
    ctx.emit({
      type: "hook",
      threadId: ctx.threadId,
      ...(node !== undefined && { node }),
      event: input.event,
      command: outcome.command,
      exitCode: outcome.exitCode,
      ...(blocked && { blocked }),
      ...(failure && { failure }),
    });
  }
  return outcomes;
}
