import { AIMessage, type MessageContent } from "@langchain/core/messages";
import type { RecordedModelOutput } from "../runs/recordings.js";
import type { TokenUsage } from "../state/graph-state.js";

/** What is recorded of a model's answer: content, tool calls and usage; never headers or provider metadata. */
export function recordedOutput(message: AIMessage, usage: TokenUsage): RecordedModelOutput {
  return {
    ...(message.id ? { id: message.id } : {}),
    content: message.content,
    toolCalls: (message.tool_calls ?? []).map(({ id, name, args }) => ({ ...(id ? { id } : {}), name, args })),
    ...(message.invalid_tool_calls?.length && {
      invalidToolCalls: message.invalid_tool_calls.map(({ id, name, args, error }) => ({
        ...(id ? { id } : {}),
        name: name ?? "",
        args: args ?? "",
        error: error ?? "",
      })),
    }),
    usage: { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens },
  };
}

/** The answer a recorded output stands for, as the model returned it. */
export function messageFromRecord(output: RecordedModelOutput): AIMessage {
  const message = new AIMessage({
    ...(output.id ? { id: output.id } : {}),
    content: output.content as MessageContent,
    tool_calls: output.toolCalls.map(({ id, name, args }) => ({ id, name, args, type: "tool_call" as const })),
    invalid_tool_calls: (output.invalidToolCalls ?? []).map(({ id, name, args, error }) => ({
      id,
      name,
      args,
      error,
      type: "invalid_tool_call" as const,
    })),
  });
  message.usage_metadata = {
    input_tokens: output.usage.inputTokens,
    output_tokens: output.usage.outputTokens,
    total_tokens: output.usage.inputTokens + output.usage.outputTokens,
  };
  return message;
}
