import type { EffectKind } from "../runs/recordings.js";
import type { RunContext } from "./context.js";

/** An effect on the world outside the graph state: a Coder tool call, a git read of the workspace, an inbox read, a `function` node. */
export interface EffectRequest {
  kind: EffectKind;
  /** The node it is made for (the Coder's, the Review's, the Looper's id). */
  node: string;
  /** The tool's name, or the effect's (`git_baseline`, `git_diff`, `read_inbox`), or a function node's export. */
  name: string;
  /** JSON arguments: a replay compares them with the record's. */
  args: unknown;
}

/**
 * Performs an effect and records its result with the run. In a recorded replay
 * (`ctx.replayEffect`) the recorded result is returned instead and nothing is performed.
 * Results must be JSON (they are stored as such); failures belong in the result, not thrown.
 */
export async function performEffect<T>(ctx: RunContext, request: EffectRequest, perform: () => Promise<T>): Promise<T> {
  const result = ctx.replayEffect ? ((await ctx.replayEffect(request)) as T) : await perform();
  ctx.record?.({ kind: request.kind, node: request.node, name: request.name, args: request.args, result });
  return result;
}
