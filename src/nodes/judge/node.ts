import { AIMessage } from "@langchain/core/messages";
import type { RunContext } from "../../runtime/context.js";
import type { GraphDefinition } from "../../format/types.js";
import { decideAttempts, readAttempts } from "./compare.js";
import { decide } from "./decide.js";
import { readJudgeInput } from "./input.js";
import type { JudgeResult } from "../../state/looper.js";
import { renderPrompt } from "../../runtime/prompt.js";
import { startNodeSession } from "../../runtime/model-session.js";
import type { NodeFunction } from "../../runtime/node-function.js";
import type { JudgeNodeDefinition } from "./schema.js";
import { visitNumber } from "../../state/map.js";
import { readRegularText } from "../../diagnostics/regular-file.js";

/**
 * Reads the round's task, Coder and Review results and drains every pending message, asks the
 * model for `continue {nextTask}` or `terminate {reason}`, and writes the guarded decision
 * (a JudgeResult) to `outputs.<node>`. Only an auth error from the model fails the node.
 */
export function createJudgeNode(def: JudgeNodeDefinition, graph: GraphDefinition, ctx: RunContext): NodeFunction {
  const template = readRegularText(def.promptFile);
  const compareTemplate = readRegularText(def.comparePromptFile);

  return async (state) => {
    // No token streaming: the model's raw JSON is not the decision once the guards have run.
    const session = startNodeSession(ctx, def, graph, state, { streamTokens: false });

    // A mapped coder's instances reviewed each are attempts at one task: the Judge compares them and picks one.
    const coders = state.outputs[def.coder];
    const result =
      Array.isArray(coders) && Array.isArray(state.outputs[def.review])
        ? await decideAttempts(
            state.task,
            readAttempts(coders, state.outputs[def.review]),
            renderPrompt(compareTemplate, state),
            session.ask,
          )
        : await decide(
            readJudgeInput(state, { judge: def.id, coder: def.coder, review: def.review }),
            renderPrompt(template, state),
            session.ask,
          );

    const text = describeJudgeResult(result);
    ctx.emit({ type: "message", threadId: ctx.threadId, node: def.id, content: text });
    const visit = visitNumber(state, def.id);
    return {
      messages: [new AIMessage({ id: `${def.id}-decision-${visit}`, name: def.id, content: text })],
      outputs: { [def.id]: result },
      ...session.bookkeeping(),
    };
  };
}

/** The decision as the message log shows it. */
export function describeJudgeResult(result: JudgeResult): string {
  const by = { model: "the model", rule: "a rule over the model", fallback: "the rules (fallback)" }[result.source];
  const took =
    result.consumedPending > 0 ? `; took ${result.consumedPending} pending message${result.consumedPending === 1 ? "" : "s"}` : "";
  const lines = [`Judge: ${result.decision} (decided by ${by}${took})`];
  if (result.decision === "pick") lines.push(`Picked: attempt ${result.attempt}${result.branch ? ` (${result.branch})` : ""}`);
  lines.push(result.decision === "continue" ? `Next task:\n${result.nextTask}` : `Reason: ${result.reason}`);
  if (result.notes.length > 0) lines.push(`Notes:\n${result.notes.map((note) => `- ${note}`).join("\n")}`);
  return lines.join("\n");
}
