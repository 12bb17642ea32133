import { HumanMessage, SystemMessage, type AIMessage, type BaseMessage } from "@langchain/core/messages";
import { z } from "zod";
import { ModelError } from "../../errors.js";
import type { JudgeResult } from "../../state/looper.js";
import { askStructured, messageText, type ModelSession } from "../../runtime/model-session.js";
import { parseStructuredOutput } from "../../runtime/structured-output.js";
import { formatJudgeInput, type JudgeInput } from "./input.js";
import { guardDecision, ruleDecision, type JudgeDecision } from "./rules.js";

/** The model's answer. Extra keys (a model's "reasoning") are dropped rather than rejected. */
export const judgeDecisionSchema = z.discriminatedUnion("decision", [
  z.object({ decision: z.literal("continue"), nextTask: z.string().trim().min(1, "nextTask must not be empty") }),
  z.object({ decision: z.literal("terminate"), reason: z.string().trim().min(1, "reason must not be empty") }),
]) satisfies z.ZodType<JudgeDecision>;

/** Appended to the Judge's system prompt, so a custom prompt cannot lose the answer format. */
export const DECISION_FORMAT = [
  "Answer with a single JSON object and nothing else, in one of these two forms:",
  '{"decision": "continue", "nextTask": "<the complete task for the Coder\'s next round>"}',
  '{"decision": "terminate", "reason": "<why the loop ends, in one sentence>"}',
].join("\n");

/** Sends messages to the Judge's model and returns its answer. */
export type AskModel = ModelSession["ask"];

const RAW_ANSWER_SHOWN = 200;

/**
 * The Judge's decision: the model's, under the rules' guards; or, when the model fails or answers
 * invalidly twice, the rules' own. Model errors other than auth never escape.
 */
export async function decide(input: JudgeInput, systemPrompt: string, ask: AskModel): Promise<JudgeResult> {
  const consumedPending = input.pending.length;
  const prompt = [new SystemMessage(`${systemPrompt.trimEnd()}\n\n${DECISION_FORMAT}`), new HumanMessage(formatJudgeInput(input))];
  const answer = await askForDecision(ask, prompt, judgeDecisionSchema);
  if (answer.decision) {
    const guarded = guardDecision(input, answer.decision);
    return {
      ...guarded.decision,
      consumedPending,
      source: guarded.notes.length > 0 ? "rule" : "model",
      notes: [...answer.notes, ...guarded.notes],
    };
  }
  const fallback = ruleDecision(input);
  return { ...fallback.decision, consumedPending, source: "fallback", notes: [...answer.notes, `fallback: ${fallback.why}`] };
}

/**
 * The model's decision, checked by `schema`, with one repair retry that quotes the validation
 * error; none when the model failed or answered invalidly twice (the notes say what happened).
 * Auth errors stop the run.
 */
export async function askForDecision<T>(
  ask: AskModel,
  prompt: BaseMessage[],
  schema: z.ZodType<T>,
): Promise<{ decision?: T; notes: string[] }> {
  let calls = 0;
  let firstAnswer: AIMessage | undefined;
  const recordingAsk: AskModel = async (messages) => {
    calls += 1;
    const answer = await ask(messages);
    firstAnswer ??= answer;
    return answer;
  };
  // A second call is only made after an invalid first answer.
  const repairNotes = (): string[] => (calls > 1 && firstAnswer ? [invalidFirstAnswerNote(firstAnswer, schema)] : []);
  try {
    const structured = await askStructured(recordingAsk, prompt, schema);
    if (structured.ok) return { decision: structured.value as T, notes: repairNotes() };
    return {
      notes: [...repairNotes(), `the repeated answer was invalid too (${structured.error}): ${quote(messageText(structured.answer))}`],
    };
  } catch (error) {
    if (!(error instanceof ModelError) || error.kind === "auth") throw error;
    return { notes: [...repairNotes(), `the model call failed (${error.kind}: ${error.message})`] };
  }
}

function invalidFirstAnswerNote(answer: AIMessage, schema: z.ZodType<unknown>): string {
  const parsed = parseStructuredOutput(messageText(answer), schema);
  const error = parsed.ok ? "" : ` (${parsed.error})`;
  return `the model's answer was invalid${error}: ${quote(messageText(answer))}; asked once more with the validation error`;
}

function quote(text: string): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return JSON.stringify(oneLine.length > RAW_ANSWER_SHOWN ? `${oneLine.slice(0, RAW_ANSWER_SHOWN)}…` : oneLine);
}
