import { randomUUID } from "node:crypto";
import { AIMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";
import { LoopgraphError } from "../../errors.js";
import type { GraphDefinition } from "../../format/types.js";
import type { RunContext } from "../../runtime/context.js";
import { renderPrompt } from "../../runtime/prompt.js";
import { askStructured, messageText, startNodeSession } from "../../runtime/model-session.js";
import { structuredOutputInstruction, toZod } from "../../runtime/structured-output.js";
import type { NodeFunction } from "../../runtime/node-function.js";
import type { AgentNodeDefinition } from "./definition.js";
import { readRegularText } from "../../diagnostics/regular-file.js";

/**
 * An LLM node: system prompt (rendered from the state) + conversation → one answer, written to
 * `messages` and `outputs[<node>]`. With a schema, the answer must be JSON matching it; an
 * invalid answer is retried once with the validation error.
 */
export function createAgentNode(def: AgentNodeDefinition, graph: GraphDefinition, ctx: RunContext): NodeFunction {
  const template = readRegularText(def.promptFile);
  const schema = def.schema ? toZod(def.schema) : undefined;

  return async (state) => {
    const session = startNodeSession(ctx, def, graph, state);

    let system = renderPrompt(template, state);
    if (def.schema) system += `\n\n${structuredOutputInstruction(def.schema)}`;
    const conversation = def.history && state.messages.length > 0 ? state.messages : [new HumanMessage(state.task)];
    const prompt = [new SystemMessage(system), ...conversation];

    let answer: AIMessage;
    let output: unknown;
    if (schema) {
      const structured = await askStructured(session.ask, prompt, schema);
      if (!structured.ok) {
        throw new LoopgraphError(
          `node "${def.id}": the model's answer does not match the output schema after one retry: ${structured.error}`,
        );
      }
      answer = structured.answer;
      output = structured.value;
    } else {
      answer = await session.ask(prompt);
      output = messageText(answer);
    }

    const text = messageText(answer);
    ctx.emit({ type: "message", threadId: ctx.threadId, node: def.id, content: text });
    return {
      messages: [new AIMessage({ content: text, id: answer.id ?? randomUUID(), name: def.id })],
      outputs: { [def.id]: output },
      ...session.bookkeeping(),
    };
  };
}
