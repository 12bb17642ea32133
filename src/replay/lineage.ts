import type { CheckpointSummary } from "../engine/inspect.js";

/**
 * One lineage of a thread's root checkpoints, oldest first: the chain of parents of its newest
 * checkpoint, or, with `through`, of the newest checkpoint that descends from that one. A thread
 * with branches (forks in the same thread) has records on each; a replay follows one lineage.
 */
export function lineage(checkpoints: readonly CheckpointSummary[], through?: string): CheckpointSummary[] {
  const byId = new Map(checkpoints.map((checkpoint) => [checkpoint.checkpointId, checkpoint]));
  const chainOf = (leaf: CheckpointSummary): CheckpointSummary[] => {
    const chain: CheckpointSummary[] = [];
    for (let at: CheckpointSummary | undefined = leaf; at; at = at.parentId === undefined ? undefined : byId.get(at.parentId)) chain.push(at);
    return chain.reverse();
  };
  for (const leaf of [...checkpoints].reverse()) {
    const chain = chainOf(leaf);
    if (through === undefined || chain.some((checkpoint) => checkpoint.checkpointId === through)) return chain;
  }
  return [];
}
