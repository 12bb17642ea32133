import { AIMessage } from "@langchain/core/messages";
import type { CoderResult } from "../coder/types.js";
import type { RunContext } from "../../runtime/context.js";
import type { GraphDefinition } from "../../format/types.js";
import type { ReviewResult } from "../../state/looper.js";
import { buildReviewGraph, type ReviewStateValue } from "./graph.js";
import type { ReviewNodeDefinition } from "./schema.js";
import type { TokenUsage } from "../../state/graph-state.js";
import type { NodeFunction, NodeUpdate } from "../../runtime/node-function.js";
import { visitNumber } from "../../state/map.js";

export type { ReviewNodeDefinition } from "./schema.js";

/**
 * The `review` node kind: runs the Review subgraph over `outputs.<coder>` and the workspace's diff
 * since `roundBaseline`; the ReviewResult lands in `outputs.<node>`. Without a round baseline it
 * takes one and stores it as `roundBaseline`, so the next review shows the changes made after this one.
 *
 * The model checks call the model as `<node>.specs_breakdown` and `<node>.task_log`. They run
 * concurrently, so a script names the check of each review response: both checks start from the
 * same consumed list, and a response without `node` could be taken by both.
 */
export function createReviewNode(def: ReviewNodeDefinition, graph: GraphDefinition, ctx: RunContext): NodeFunction {
  const review = buildReviewGraph(def, graph, ctx);
  return async (state, config) => {
    const visit = visitNumber(state, def.id);
    const input: Partial<ReviewStateValue> = {
      task: state.task,
      coder: asCoderResult(state.outputs[def.coder]),
      baseline: state.roundBaseline,
      scripted: state.scripted,
    };
    const final = (await review.invoke(input, config).catch(rethrowFirst)) as ReviewStateValue;
    const result = final.result!;
    const text = formatReview(result);
    ctx.emit({ type: "message", threadId: ctx.threadId, node: def.id, content: text });

    const usage: TokenUsage = { inputTokens: 0, outputTokens: 0, ...state.usage[def.id] };
    for (const spent of Object.values(final.usage)) {
      usage.inputTokens += spent.inputTokens;
      usage.outputTokens += spent.outputTokens;
    }
    const update: NodeUpdate = {
      outputs: { [def.id]: result },
      messages: [new AIMessage({ id: `${def.id}-result-${visit}`, name: def.id, content: text })],
      usage: { [def.id]: usage },
      scripted: final.scripted,
    };
    if (final.diff?.status === "no_baseline") update.roundBaseline = final.diff.baselineTaken;
    return update;
  };
}

/** Both model checks stopping (an auth error, a cancelled run) fail one superstep twice: one error says it. */
function rethrowFirst(error: unknown): never {
  throw error instanceof AggregateError && error.errors.length > 0 ? error.errors[0] : error;
}

function asCoderResult(output: unknown): CoderResult | undefined {
  const candidate = output as Partial<CoderResult> | undefined;
  return candidate && (candidate.status === "success" || candidate.status === "failure") && Array.isArray(candidate.toolCalls)
    ? (output as CoderResult)
    : undefined;
}

/** The review as one message: the rating, then a comment per line. */
export function formatReview(result: ReviewResult): string {
  return [`Review: ${result.rating}`, ...result.comments.map((comment) => `- ${comment}`)].join("\n");
}
