/** Records of a run as the recordings tests make them (tests/store.contract.test.ts, tests/recordings.test.ts). */
import type { RecordData, RecordKey } from "../../src/runs/recordings.js";
import type { Store } from "../../src/store/store.js";

/** Where a record was made: a task path and call index of thread `threadId`, at checkpoint cp-1. */
export const recordKey = (taskPath: string, callIndex: number, threadId = "t1"): RecordKey => ({
  threadId,
  checkpointId: "cp-1",
  taskPath,
  callIndex,
  node: "coder",
});

/** A shell tool call's record whose result is `content`. */
export const toolRecord = (content: string): RecordData => ({
  kind: "tool",
  name: "shell",
  args: { command: "ls" },
  result: { ok: true, content },
});

/** The thread's records as listed: a tool record's content, else its kind. */
export const listedContents = async (store: Store, threadId = "t1"): Promise<unknown[]> =>
  (await store.recordings.list(threadId)).map((r) => (r.kind === "tool" ? (r.result as { content: string }).content : r.kind));
