import { redactJson } from "../runs/redact.js";
import type { EffectRequest, RunContext } from "./context.js";

/**
 * Performs an effect and records its result with the run. In a recorded replay
 * (`ctx.replayEffect`) the recorded result is returned instead and nothing is performed.
 * Results must be JSON (they are stored as such); failures belong in the result, not thrown.
 * The values of the run's secrets are redacted from a result before anything sees it: the model,
 * the state, the record.
 */
export async function performEffect<T>(ctx: RunContext, request: EffectRequest, perform: () => Promise<T>): Promise<T> {
  const result = ctx.replayEffect ? ((await ctx.replayEffect(request)) as T) : redactJson(await perform(), ctx.secrets ?? []);
  ctx.record?.({ kind: request.kind, node: request.node, name: request.name, args: request.args, result });
  return result;
}

/**
 * `performEffect` of a step that may fail: its failure is recorded as `{ error }` with the error's
 * message (so a recorded replay fails the same way), its value as `{ result }`, and the failure
 * thrown as `fail(message)`.
 */
export async function performFallibleEffect<T>(
  ctx: RunContext,
  request: EffectRequest,
  perform: () => Promise<T>,
  fail: (message: string) => Error,
): Promise<T> {
  const outcome = await performEffect(ctx, request, async (): Promise<{ result?: T; error?: string }> => {
    try {
      return { result: await perform() };
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    }
  });
  if (outcome.error !== undefined) throw fail(outcome.error);
  return outcome.result as T;
}
