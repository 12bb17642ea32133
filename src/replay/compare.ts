import type { CheckpointSummary } from "../engine/inspect.js";
import type { Divergence } from "./divergence.js";
import type { StepRecording } from "./record-source.js";
import type { ThreadRecord } from "../runs/thread-registry.js";

/** The nodes that ran at each root step, as `inspect` shows them. */
export interface StepNodes {
  step: number;
  nodes: string[];
}

export function stepNodes(checkpoints: readonly CheckpointSummary[], afterStep: number): StepNodes[] {
  return checkpoints.filter((c) => c.step > afterStep).map((c) => ({ step: c.step, nodes: [...c.nodes].sort() }));
}

const names = (nodes: readonly string[]): string => nodes.join(", ") || "nothing";

/**
 * The first step where the replay ran other nodes than the record, or (when it ran to its end)
 * ended at another step. Running past the end of an incomplete record (an interrupted, paused or
 * crashed run) is not a divergence.
 */
export function routingDivergence(
  recorded: readonly StepNodes[],
  replayed: readonly StepNodes[],
  { recordComplete, ranToEnd }: { recordComplete: boolean; ranToEnd: boolean },
): Divergence | undefined {
  const recordedAt = new Map(recorded.map((entry) => [entry.step, entry.nodes]));
  for (const { step, nodes } of replayed) {
    const expected = recordedAt.get(step);
    if (expected === undefined) {
      if (!recordComplete || !ranToEnd) return undefined;
      const last = recorded.at(-1)?.step;
      return {
        kind: "routing",
        step,
        message: `at step ${step} the replay ran ${names(nodes)}, but the record ended after step ${last ?? "its start"}`,
        actual: nodes,
      };
    }
    if (names(expected) !== names(nodes)) {
      return {
        kind: "routing",
        step,
        message: `at step ${step} the replay ran ${names(nodes)}; the record ran ${names(expected)}`,
        expected,
        actual: nodes,
      };
    }
  }
  const next = recorded.find((entry) => entry.step > (replayed.at(-1)?.step ?? -Infinity));
  if (next && ranToEnd) {
    return {
      kind: "routing",
      step: next.step,
      message: `the replay ended before step ${next.step}, where the record ran ${names(next.nodes)}`,
      expected: next.nodes,
    };
  }
  return undefined;
}

/** Records the replay never asked for. */
export function unusedRecordsDivergence(remaining: readonly StepRecording[]): Divergence | undefined {
  const first = remaining[0];
  if (!first) return undefined;
  const what = first.kind === "model" ? "a model call" : first.kind === "approval" ? `an approval of ${first.name}` : first.name;
  return {
    kind: "unused_records",
    step: first.step,
    node: first.node,
    message: `the replay ended with ${remaining.length} recorded call(s) it never made, the first: ${what} by ${first.node} at step ${first.step}`,
  };
}

export interface Ending {
  status: ThreadRecord["status"];
  error?: string;
}

/** How the run ends, as one phrase. */
export function describeEnding({ status, error }: Ending): string {
  const word = status === "running" ? "stopped without an end (crashed or killed)" : status;
  return error ? `${word}: ${error}` : word;
}

/** A replay that ended otherwise than the recorded run (both ran to their end). */
export function outcomeDivergence(recorded: Ending, replayed: Ending): Divergence | undefined {
  if (recorded.status === replayed.status && (recorded.error ?? "") === (replayed.error ?? "")) return undefined;
  return {
    kind: "outcome",
    message: `the recorded run ${describeEnding(recorded)}; the replay ${describeEnding(replayed)}`,
    expected: recorded,
    actual: replayed,
  };
}
