/** Tokens in and out, of a model call or summed per node. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** The tokens of every node of a state's `usage` channel, summed. */
export function totalUsage(usage: Readonly<Record<string, TokenUsage>>): TokenUsage {
  const total: TokenUsage = { inputTokens: 0, outputTokens: 0 };
  for (const node of Object.values(usage)) {
    total.inputTokens += node.inputTokens;
    total.outputTokens += node.outputTokens;
  }
  return total;
}
