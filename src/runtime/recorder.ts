import type { Recorder, RecordingTable } from "../runs/recordings.js";
import { callerName, nextCallSite } from "./call-site.js";

/**
 * The recorder of a run (RunContext.record): stores each record under the task it is made in
 * (see Recordings for the keying rule). Calls made outside a graph task are not recorded: they
 * have no place in the run's checkpoint lineage.
 */
export function createRecorder(recordings: RecordingTable, threadId: string, secrets: readonly string[]): Recorder {
  return ({ node, ...data }) => {
    const site = nextCallSite();
    if (!site) return;
    recordings.put(
      {
        threadId,
        checkpointId: site.checkpointId,
        taskPath: site.taskPath,
        callIndex: site.callIndex,
        node: callerName(node ?? site.taskName),
      },
      data,
      secrets,
    );
  };
}
