import { lineage as chainTo } from "../engine/checkpoint-tree.js";
import type { CheckpointSummary } from "../engine/inspect.js";

/**
 * One lineage of a thread's root checkpoints, oldest first: the chain of parents of its newest
 * checkpoint, or, with `through`, of the newest checkpoint that descends from that one. A thread
 * with branches (forks in the same thread) has records on each; a replay follows one lineage.
 */
export function lineage(checkpoints: readonly CheckpointSummary[], through?: string): CheckpointSummary[] {
  const byId = new Map(checkpoints.map((checkpoint) => [checkpoint.checkpointId, checkpoint]));
  const items = checkpoints.map((checkpoint) => ({ id: checkpoint.checkpointId, parentId: checkpoint.parentId }));
  for (const leaf of [...checkpoints].reverse()) {
    const chain = chainTo(items, leaf.checkpointId);
    if (through === undefined || chain.includes(through)) return chain.map((id) => byId.get(id)!);
  }
  return [];
}
