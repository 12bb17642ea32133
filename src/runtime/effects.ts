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
