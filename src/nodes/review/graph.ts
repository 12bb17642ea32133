import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import type { CoderResult } from "../coder/types.js";
import { nodeModelSpec, type RunContext } from "../../runtime/context.js";
import { performEffect } from "../../runtime/effects.js";
import { ModelError } from "../../errors.js";
import type { GraphDefinition } from "../../format/types.js";
import type { CommandCheckResult, ReviewCheckResult, ReviewResult } from "../../state/looper.js";
import { askStructured, startModelSession } from "../../runtime/model-session.js";
import { structuredOutputInstruction, toZod } from "../../runtime/structured-output.js";
import { mergeConsumed, type ScriptedConsumed, type TokenUsage } from "../../state/graph-state.js";
import { branchChangesToRead } from "../../git/worktrees/index.js";
import { captureBaseline, changesSinceBaseline } from "./baseline.js";
import { runCheckCommand, type CheckPlace } from "./command-check.js";
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
import { readRegularText } from "../../diagnostics/regular-file.js";

const lastValue = <T>(_: T, next: T): T => next;
const mergeRecords = <T extends object>(left: T, right: T): T => ({ ...left, ...right });

/** One change the Review looks at: a Coder's result, and where its work is. */
export interface ReviewSubject extends CheckPlace {
  /** Undefined when the Coder left no result. */
  coder?: CoderResult;
}

/** A check node's results, one per subject (in the subjects' order). */
type CheckResults = Partial<Record<CheckName, ReviewCheckResult[]>> & { command?: CommandCheckResult[] };

/**
 * The Review's own state. It reviews a list of subjects (one Coder's result, or each instance of
 * a mapped Coder): every check node checks all of them, and the checks run in one superstep, so
 * what they write is merged, never overwritten.
 */
const ReviewState = Annotation.Root({
  task: Annotation<string>({ reducer: lastValue, default: () => "" }),
  subjects: Annotation<ReviewSubject[]>({ reducer: lastValue, default: () => [] }),
  /** The round's workspace baseline (`roundBaseline` of the graph state), for a subject in the run's workspace. */
  baseline: Annotation<string | undefined>({ reducer: lastValue, default: () => undefined }),
  scripted: Annotation<Record<string, ScriptedConsumed>>({ reducer: mergeConsumed, default: () => ({}) }),
  /** Each subject's diff. */
  diffs: Annotation<DiffReading[]>({ reducer: lastValue, default: () => [] }),
  checks: Annotation<CheckResults>({ reducer: mergeRecords, default: () => ({}) }),
  /** Tokens each model check spent in this review, over all subjects. */
  usage: Annotation<Partial<Record<ModelCheckName, TokenUsage>>>({ reducer: mergeRecords, default: () => ({}) }),
  /** Each subject's review. */
  results: Annotation<ReviewResult[]>({ reducer: lastValue, default: () => [] }),
});

export type ReviewStateValue = typeof ReviewState.State;
type ReviewUpdate = Partial<ReviewStateValue>;

/** The name a model check calls the model under: scripted responses for it name this `node`. */
function checkCallerName(caller: string, check: ModelCheckName): string {
  return `${caller}.${check}`;
}

const sumUsage = (usages: readonly TokenUsage[]): TokenUsage => ({
  inputTokens: usages.reduce((sum, usage) => sum + usage.inputTokens, 0),
  outputTokens: usages.reduce((sum, usage) => sum + usage.outputTokens, 0),
});

/**
 * The Review as a LangGraph subgraph: `read_diff` takes each subject's diff (the run's workspace
 * since the round began, or a worktree coder's branch), then `specs_breakdown`, `task_log`,
 * `git_diff` (and `command`, with a check command) run in parallel (one superstep), each over
 * every subject, and `merge` joins them. A check that fails records `{ok: false, error}` and the
 * others still count; only a cancelled run or a model auth error stops the Review.
 */
export function buildReviewGraph(def: ReviewNodeDefinition, graph: GraphDefinition, ctx: RunContext) {
  const verdictInstruction = structuredOutputInstruction(CHECK_VERDICT_SCHEMA);
  const systemPrompts: Record<ModelCheckName, string> = {
    specs_breakdown: `${readRegularText(def.specsPrompt).trim()}\n\n${verdictInstruction}`,
    task_log: `${readRegularText(def.taskLogPrompt).trim()}\n\n${verdictInstruction}`,
  };
  const verdictSchema = toZod(CHECK_VERDICT_SCHEMA);
  const spec = nodeModelSpec(def, graph, ctx.settings);

  const askModel = async (check: ModelCheckName, state: ReviewStateValue, subject: ReviewSubject, input: string) => {
    const session = startModelSession(ctx, {
      spec,
      node: checkCallerName(subject.caller, check),
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
    return { result, usage: session.usage, consumed: session.consumed() };
  };

  /** A model check over every subject at once; `input` is undefined for a subject it cannot check (its result is then `skip`'s). */
  const modelCheck =
    (check: ModelCheckName, input: (state: ReviewStateValue, index: number) => string | ReviewCheckResult) =>
    async (state: ReviewStateValue): Promise<ReviewUpdate> => {
      const asked = await Promise.all(
        state.subjects.map(async (subject, index) => {
          const given = input(state, index);
          return typeof given === "string"
            ? askModel(check, state, subject, given)
            : { result: given, usage: undefined, consumed: undefined };
        }),
      );
      const update: ReviewUpdate = {
        checks: { [check]: asked.map((one) => one.result) },
        usage: { [check]: sumUsage(asked.flatMap((one) => one.usage ?? [])) },
      };
      const consumed = asked.map((one) => one.consumed).filter((one) => one !== undefined);
      if (consumed.length > 0) {
        update.scripted = consumed.reduce<Record<string, ScriptedConsumed>>((all, one) => mergeConsumed(all, { [spec]: one }), {});
      }
      return update;
    };

  const readOneDiff = async (state: ReviewStateValue, subject: ReviewSubject): Promise<DiffReading> => {
    const read = async (): Promise<DiffReading> => {
      try {
        if (subject.branch) {
          const branch = { workspace: ctx.workspace, threadId: ctx.threadId, ...subject.branch };
          return { status: "read", facts: summariseChanges(await branchChangesToRead(branch), def.maxDiffChars) };
        }
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
    const args = subject.branch ? { branch: subject.branch } : { baseline: state.baseline ?? null };
    return performEffect(ctx, { kind: "git", node: subject.caller, name: "git_diff", args }, read);
  };

  const readDiff = async (state: ReviewStateValue): Promise<ReviewUpdate> => ({
    diffs: await Promise.all(state.subjects.map((subject) => readOneDiff(state, subject))),
  });

  const specsBreakdown = modelCheck("specs_breakdown", (state, i) => specsInput(state.task, state.subjects[i]!.coder, state.diffs[i]!));

  const taskLog = modelCheck("task_log", (state, i) => {
    const coder = state.subjects[i]!.coder;
    return coder ? taskLogInput(state.task, coder) : { ok: false, comments: [], error: `no Coder result at outputs.${def.coder}` };
  });

  const gitDiff = async (state: ReviewStateValue): Promise<ReviewUpdate> => ({
    checks: { git_diff: state.subjects.map((subject, i) => rateDiff(state.diffs[i]!, subject.coder, def.maxDiffChars)) },
  });

  const command = async (state: ReviewStateValue): Promise<ReviewUpdate> => ({
    checks: { command: await Promise.all(state.subjects.map((subject) => runCheckCommand(ctx, def.check!, subject))) },
  });

  const merge = async (state: ReviewStateValue): Promise<ReviewUpdate> => ({
    results: state.subjects.map((subject, i) => {
      const checks = Object.fromEntries(Object.entries(state.checks).map(([name, results]) => [name, results[i]]));
      return mergeReview(checks, subject.coder);
    }),
  });

  // Typed as one name: the builder's node names are those added below, and `command` only with a check.
  const checks = [...CHECK_NAMES, ...(def.check ? ["command"] : [])] as "git_diff"[];
  const builder = new StateGraph(ReviewState)
    .addNode("read_diff", readDiff)
    .addNode("specs_breakdown", specsBreakdown)
    .addNode("task_log", taskLog)
    .addNode("git_diff", gitDiff)
    .addNode("merge", merge);
  if (def.check) builder.addNode("command" as "git_diff", command);
  builder.addEdge(START, "read_diff");
  for (const check of checks) builder.addEdge("read_diff", check);
  return builder.addEdge(checks, "merge").addEdge("merge", END).compile({ name: def.id });
}
