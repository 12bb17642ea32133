import { AIMessage } from "@langchain/core/messages";
import { combinedCoderResult, type CoderResult } from "../coder/types.js";
import type { GraphStateValue } from "../../state/graph-state.js";
import type { RunContext } from "../../runtime/context.js";
import type { GraphDefinition } from "../../format/types.js";
import type { ReviewResult } from "../../state/looper.js";
import { buildReviewGraph, type ReviewStateValue, type ReviewSubject } from "./graph.js";
import type { CoderNodeDefinition } from "../coder/definition.js";
import { SINGLE_RUN_INDEX } from "../coder/worktree.js";
import type { ReviewNodeDefinition } from "./schema.js";
import type { TokenUsage } from "../../state/graph-state.js";
import type { NodeFunction, NodeUpdate } from "../../runtime/node-function.js";
import { instanceName, visitNumber } from "../../state/map.js";

export type { ReviewNodeDefinition } from "./schema.js";

/**
 * The `review` node kind: runs the Review subgraph over `outputs.<coder>` and its real diff: the
 * workspace's since `roundBaseline`, or a worktree coder's branch. A mapped coder's instances are
 * reviewed each (together, in one run of the subgraph), and the output is the list of their
 * reviews in item order; otherwise it is the one ReviewResult. Without a round baseline it takes
 * one and stores it as `roundBaseline`, so the next review shows the changes made after this one.
 *
 * The model checks call the model as `<node>.specs_breakdown` and `<node>.task_log` (instance i of
 * a mapped coder: `<node>[i].specs_breakdown` …). They run concurrently, so a script names the
 * check of each review response: both checks start from the same consumed list, and a response
 * without `node` could be taken by both.
 */
export function createReviewNode(def: ReviewNodeDefinition, graph: GraphDefinition, ctx: RunContext): NodeFunction {
  const review = buildReviewGraph(def, graph, ctx);
  const coderDef = graph.nodes[def.coder] as Partial<CoderNodeDefinition> | undefined;
  const branchOf = (index: number) => (coderDef?.workspace === "worktree" ? { branch: { node: def.coder, index } } : {});
  return async (state, config) => {
    const visit = visitNumber(state, def.id);
    const output = state.outputs[def.coder];
    // Reviewed after a merge: the parts' merged work in the workspace, as one piece of work.
    const merged = def.merge === undefined ? undefined : mergedWork(state, def.merge, output);
    const mapped = Array.isArray(output) && !merged;
    let subjects: ReviewSubject[];
    if (merged) subjects = [{ caller: def.id, coder: merged.coder }];
    else if (mapped) {
      subjects = output.map((instance, index) => ({
        caller: instanceName(def.id, index),
        coder: asCoderResult(instance),
        ...branchOf(index),
      }));
    } else subjects = [{ caller: def.id, coder: asCoderResult(output), ...branchOf(SINGLE_RUN_INDEX) }];
    const baseline = merged ? merged.baseline : state.roundBaseline;
    const input: Partial<ReviewStateValue> = { task: state.task, subjects, baseline, scripted: state.scripted };
    const final = (await review.invoke(input, config).catch(rethrowFirst)) as ReviewStateValue;
    const text = mapped ? formatReviews(def.coder, final.results) : formatReview(final.results[0]!);
    ctx.emit({ type: "message", threadId: ctx.threadId, node: def.id, content: text });

    const usage: TokenUsage = { inputTokens: 0, outputTokens: 0, ...state.usage[def.id] };
    for (const spent of Object.values(final.usage)) {
      usage.inputTokens += spent.inputTokens;
      usage.outputTokens += spent.outputTokens;
    }
    const update: NodeUpdate = {
      outputs: { [def.id]: mapped ? final.results : final.results[0] },
      messages: [new AIMessage({ id: `${def.id}-result-${visit}`, name: def.id, content: text })],
      usage: { [def.id]: usage },
      scripted: final.scripted,
    };
    const diff = final.diffs[0];
    if (!mapped && !merged && diff?.status === "no_baseline") update.roundBaseline = diff.baselineTaken;
    return update;
  };
}

/**
 * The work a merge node applied: the coder's parts as one result (a mapped coder's instances, or
 * its one result), and the workspace as it was before the merge; no baseline when it did not run.
 */
function mergedWork(state: GraphStateValue, merge: string, output: unknown): { coder: CoderResult; baseline?: string } {
  const parts = Array.isArray(output) ? output.map(asCoderResult) : [asCoderResult(output)];
  const baseline = (state.outputs[merge] as { baseline?: unknown } | undefined)?.baseline;
  return { coder: combinedCoderResult(parts), ...(typeof baseline === "string" && { baseline }) };
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

/** The reviews of a mapped coder's instances as one message: their ratings in a line, then each review. */
function formatReviews(coder: string, results: readonly ReviewResult[]): string {
  if (results.length === 0) return `Review: ${coder} made no attempt to review`;
  const ratings = results.map((result, index) => `${instanceName(coder, index)} ${result.rating}`).join(" · ");
  const each = results.map((result, index) => `${instanceName(coder, index)}: ${formatReview(result)}`);
  return [`Review of ${results.length} attempts: ${ratings}`, ...each].join("\n\n");
}

/** The review as one message: the rating, then a comment per line. */
export function formatReview(result: ReviewResult): string {
  return [`Review: ${result.rating}`, ...result.comments.map((comment) => `- ${comment}`)].join("\n");
}
