import { isGraphBubbleUp } from "@langchain/langgraph";
import { CancelledError, cancelledByUser, LimitError, LoopgraphError } from "../errors.js";
import type { RunContext } from "./context.js";
import type { TokenUsage } from "../state/graph-state.js";
import type { NodeFunction } from "./node-function.js";
import { mapInstanceOf, visitNumber } from "../state/map.js";

/**
 * Wraps a node kind's function: counts the visit (the loop bound and `inspect` read it),
 * emits node_started / node_finished, and turns unexpected failures into one-line errors.
 */
export function instrumentNode(id: string, run: NodeFunction, ctx: RunContext): NodeFunction {
  return async (state, config) => {
    // A map's instances count one visit each: instance i is visit i + 1 of its step, and each
    // writes the count after all of them (the same value, so the writes agree).
    const instance = mapInstanceOf(state);
    const before = state.visits[id] ?? 0;
    const visit = visitNumber(state, id);
    const visitsAfter = before + (instance ? instance.count : 1);
    const which = instance ? { instance: instance.index } : {};
    ctx.emit({ type: "node_started", threadId: ctx.threadId, node: id, visit, ...which });
    const startedAt = performance.now();
    try {
      const update = await run(state, config);
      ctx.emit({
        type: "node_finished",
        threadId: ctx.threadId,
        node: id,
        usage: usageDelta(state.usage[id], update.usage?.[id]),
        durationMs: Math.round(performance.now() - startedAt),
        ...which,
      });
      return { ...update, visits: { ...update.visits, [id]: visitsAfter } };
    } catch (error) {
      // A limit (it names its node) stays a limit: the run ends `limited`, not failed; the user's
      // cancellation passes as it is (the engine tells it from a failure, see failureOutcome).
      if (isGraphBubbleUp(error) || error instanceof LimitError || error instanceof CancelledError || cancelledByUser(ctx.signal))
        throw error;
      const message = error instanceof Error ? error.message : String(error);
      const prefixed = message.startsWith(`node "${id}"`) ? message : `node "${id}" failed: ${message}`;
      // The cause stays with it: a store lock, for one, ends the run interrupted, not failed.
      throw new LoopgraphError(prefixed, undefined, { cause: error });
    }
  };
}

function usageDelta(before: TokenUsage | undefined, after: TokenUsage | undefined): TokenUsage | undefined {
  if (!after) return undefined;
  return {
    inputTokens: after.inputTokens - (before?.inputTokens ?? 0),
    outputTokens: after.outputTokens - (before?.outputTokens ?? 0),
  };
}
