// A `function` node of graphs/example-review.yaml: plain TypeScript over the graph state.
interface ReviewState {
  outputs: Record<string, unknown>;
}

export function textStats(state: ReviewState) {
  const finalText = String(state.outputs.revise ?? state.outputs.draft ?? "");
  const words = finalText.split(/\s+/).filter(Boolean).length;
  return { output: { words, characters: finalText.length, revised: state.outputs.revise !== undefined } };
}
