import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { LoopgraphError } from "../errors.js";
import type { AgentNodeDefinition, GraphDefinition } from "../graph/types.js";
import { pickModelSpec, type RunContext } from "../engine/context.js";
import type { NodeUsage } from "../state/graph-state.js";
import { renderPrompt } from "./prompt.js";
import { parseStructuredOutput, structuredOutputInstruction, toZod } from "./structured-output.js";
import type { NodeFunction, NodeUpdate } from "./types.js";

export function messageText(message: BaseMessage): string {
  if (typeof message.content === "string") return message.content;
  return message.content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("");
}

/**
 * An LLM node: system prompt (rendered from the state) + conversation → one answer, written to
 * `messages` and `outputs[<node>]`. With a schema, the answer must be JSON matching it; an
 * invalid answer is retried once with the validation error.
 */
export function createAgentNode(def: AgentNodeDefinition, graph: GraphDefinition, ctx: RunContext): NodeFunction {
  const template = readFileSync(def.promptFile, "utf8");
  const schema = def.schema ? toZod(def.schema) : undefined;

  return async (state) => {
    const spec = pickModelSpec(def.model, ctx.runModel, graph.model);
    const model = ctx.model(spec);
    const consumed = [...(state.scripted[spec] ?? [])];
    const usage: NodeUsage = { inputTokens: 0, outputTokens: 0, ...state.usage[def.id] };

    const ask = async (messages: BaseMessage[]): Promise<AIMessage> => {
      const result = await model.call(messages, {
        node: def.id,
        consumed,
        signal: ctx.signal,
        onToken: (delta) => ctx.emit({ type: "message", threadId: ctx.threadId, node: def.id, delta }),
        onRetry: ({ attempt, maxAttempts, delayMs, error }) =>
          ctx.emit({ type: "retry", threadId: ctx.threadId, node: def.id, attempt, maxAttempts, delayMs, message: error.message }),
      });
      if (result.scriptedIndex !== undefined) consumed.push(result.scriptedIndex);
      usage.inputTokens += result.usage.inputTokens;
      usage.outputTokens += result.usage.outputTokens;
      return result.message;
    };

    let system = renderPrompt(template, state);
    if (def.schema) system += `\n\n${structuredOutputInstruction(def.schema)}`;
    const conversation = def.history && state.messages.length > 0 ? state.messages : [new HumanMessage(state.task)];
    const prompt = [new SystemMessage(system), ...conversation];

    let answer = await ask(prompt);
    let output: unknown = messageText(answer);
    if (schema) {
      let parsed = parseStructuredOutput(messageText(answer), schema);
      if (!parsed.ok) {
        const repair = new HumanMessage(`Your answer could not be used: ${parsed.error}. Answer again with the JSON only.`);
        answer = await ask([...prompt, answer, repair]);
        parsed = parseStructuredOutput(messageText(answer), schema);
        if (!parsed.ok) {
          throw new LoopgraphError(`node "${def.id}": the model's answer does not match the output schema after one retry: ${parsed.error}`);
        }
      }
      output = parsed.value;
    }

    const text = messageText(answer);
    ctx.emit({ type: "message", threadId: ctx.threadId, node: def.id, content: text });
    const update: NodeUpdate = {
      messages: [new AIMessage({ content: text, id: answer.id ?? randomUUID(), name: def.id })],
      outputs: { [def.id]: output },
      usage: { [def.id]: usage },
    };
    if (consumed.length > 0) update.scripted = { [spec]: consumed };
    return update;
  };
}
