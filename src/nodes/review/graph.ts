import { readFileSync } from "node:fs";
import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import type { CoderResult } from "../coder/types.js";
import { nodeModelSpec, type RunContext } from "../../runtime/context.js";
import { performEffect } from "../../runtime/effects.js";
import { ModelError } from "../../errors.js";
import type { GraphDefinition } from "../../format/types.js";
import type { ReviewCheckResult, ReviewResult } from "../../state/looper.js";
import { askStructured, startModelSession } from "../../runtime/model-session.js";
import { structuredOutputInstruction, toZod } from "../../runtime/structured-output.js";
import { mergeConsumed, type ScriptedConsumed, type TokenUsage } from "../../state/graph-state.js";
import { captureBaseline, changesSinceBaseline } from "./baseline.js";
import {
  CHECK_NAMES,
  CHECK_VERDICT_SCHEMA,
  mergeReview,
  rateDiff,
  specsInput,
  summariseChanges,
  taskLogInput,
  type CheckName,
  type CheckVerdict,
  type DiffReading,
  type ModelCheckName,
} from "./checks.js";
import type { ReviewNodeDefinition } from "./schema.js";

const lastValue = <T>(_: T, next: T): T => next;
const mergeRecords = <T extends object>(left: T, right: T): T => ({ ...left, ...right });

/** The Review's own state. The checks run in one superstep, so what they write is merged, never overwritten. */
const ReviewState = Annotation.Root({
  task: Annotation<string>({ reducer: lastValue, default: () => "" }),
  coder: Annotation<CoderResult | undefined>({ reducer: lastValue, default: () => undefined }),
  /** The round's workspace baseline (`roundBaseline` of the graph state). */
  baseline: Annotation<string | undefined>({ reducer: lastValue, default: () => undefined }),
  scripted: Annotation<Record<string, ScriptedConsumed>>({ reducer: mergeConsumed, default: () => ({}) }),
  diff: Annotation<DiffReading | undefined>({ reducer: lastValue, default: () => undefined }),
  checks: Annotation<Partial<Record<CheckName, ReviewCheckResult>>>({ reducer: mergeRecords, default: () => ({}) }),
  /** Tokens each model check spent in this review. */
  usage: Annotation<Partial<Record<ModelCheckName, TokenUsage>>>({ reducer: mergeRecords, default: () => ({}) }),
  result: Annotation<ReviewResult | undefined>({ reducer: lastValue, default: () => undefined }),
});

export type ReviewStateValue = typeof ReviewState.State;
type ReviewUpdate = Partial<ReviewStateValue>;

/** The name a model check calls the model under: scripted responses for it name this `node`. */
function checkCallerName(reviewId: string, check: ModelCheckName): string {
  return `${reviewId}.${check}`;
}

/**
 * The Review as a LangGraph subgraph: `read_diff` takes the workspace's diff since the round
 * began, then `specs_breakdown`, `task_log` and `git_diff` run in parallel (one superstep) and
 * `merge` joins them. A check that fails records `{ok: false, error}` and the others still count;
 * only a cancelled run or a model auth error stops the Review.
 */
export function buildReviewGraph(def: ReviewNodeDefinition, graph: GraphDefinition, ctx: RunContext) {
  const verdictInstruction = structuredOutputInstruction(CHECK_VERDICT_SCHEMA);
  const systemPrompts: Record<ModelCheckName, string> = {
    specs_breakdown: `${readFileSync(def.specsPrompt, "utf8").trim()}\n\n${verdictInstruction}`,
    task_log: `${readFileSync(def.taskLogPrompt, "utf8").trim()}\n\n${verdictInstruction}`,
  };
  const verdictSchema = toZod(CHECK_VERDICT_SCHEMA);

  const askModel = async (check: ModelCheckName, state: ReviewStateValue, input: string): Promise<ReviewUpdate> => {
    const spec = nodeModelSpec(def, graph, ctx.settings);
    const session = startModelSession(ctx, {
      spec,
      node: checkCallerName(def.id, check),
      consumed: state.scripted[spec],
      streamTokens: false,
    });
    let result: ReviewCheckResult;
    try {
      const answer = await askStructured(session.ask, [new SystemMessage(systemPrompts[check]), new HumanMessage(input)], verdictSchema);
      if (answer.ok) {
        const verdict = answer.value as CheckVerdict;
        result = { ok: true, rating: verdict.rating, comments: verdict.comments.map((comment) => comment.trim()).filter(Boolean) };
      } else {
        result = { ok: false, comments: [], error: `the model's answer does not match the output schema after one retry: ${answer.error}` };
      }
    } catch (error) {
      if (ctx.signal.aborted || (error instanceof ModelError && error.kind === "auth")) throw error;
      result = { ok: false, comments: [], error: error instanceof Error ? error.message : String(error) };
    }
    const update: ReviewUpdate = { checks: { [check]: result }, usage: { [check]: session.usage } };
    const consumed = session.consumed();
    if (consumed) update.scripted = { [spec]: consumed };
    return update;
  };

  const readDiff = async (state: ReviewStateValue): Promise<ReviewUpdate> => {
    const read = async (): Promise<DiffReading> => {
      try {
        return state.baseline === undefined
          ? { status: "no_baseline", baselineTaken: await captureBaseline(ctx.workspace, ctx.secrets) }
          : {
              status: "read",
              facts: summariseChanges(await changesSinceBaseline(ctx.workspace, state.baseline, ctx.secrets), def.maxDiffChars),
            };
      } catch (error) {
        return { status: "failed", error: error instanceof Error ? error.message : String(error) };
      }
    };
    // The diff is an outside input: recorded with the run, read from the record in a recorded replay.
    const request = { kind: "git" as const, node: def.id, name: "git_diff", args: { baseline: state.baseline ?? null } };
    return { diff: await performEffect(ctx, request, read) };
  };

  const specsBreakdown = (state: ReviewStateValue) => askModel("specs_breakdown", state, specsInput(state.task, state.coder, state.diff!));

  const taskLog = async (state: ReviewStateValue): Promise<ReviewUpdate> => {
    if (!state.coder) {
      return { checks: { task_log: { ok: false, comments: [], error: `no Coder result at outputs.${def.coder}` } } };
    }
    return askModel("task_log", state, taskLogInput(state.task, state.coder));
  };

  const gitDiff = async (state: ReviewStateValue): Promise<ReviewUpdate> => ({
    checks: { git_diff: rateDiff(state.diff!, state.coder, def.maxDiffChars) },
  });

  const merge = async (state: ReviewStateValue): Promise<ReviewUpdate> => ({ result: mergeReview(state.checks, state.coder) });

  return new StateGraph(ReviewState)
    .addNode("read_diff", readDiff)
    .addNode("specs_breakdown", specsBreakdown)
    .addNode("task_log", taskLog)
    .addNode("git_diff", gitDiff)
    .addNode("merge", merge)
    .addEdge(START, "read_diff")
    .addEdge("read_diff", "specs_breakdown")
    .addEdge("read_diff", "task_log")
    .addEdge("read_diff", "git_diff")
    .addEdge([...CHECK_NAMES], "merge")
    .addEdge("merge", END)
    .compile({ name: def.id });
}
