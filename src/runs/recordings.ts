import type { ModelError } from "../errors.js";
import { redactSecrets } from "./redact.js";
import type { TokenUsage } from "../state/graph-state.js";

/** A tool call of a recorded model answer. */
export interface RecordedToolCall {
  id?: string;
  name: string;
  args: Record<string, unknown>;
}

/** A tool call whose argument text was not one JSON object: the raw text, and why. */
export interface RecordedInvalidToolCall {
  id?: string;
  name: string;
  args: string;
  error: string;
}

/** A model's answer as the graph used it: no headers, no provider metadata. */
export interface RecordedModelOutput {
  id?: string;
  /** The message content: text, or the provider's content parts. */
  content: unknown;
  toolCalls: RecordedToolCall[];
  /** Absent when there were none (and in records written before it existed). */
  invalidToolCalls?: RecordedInvalidToolCall[];
  usage: TokenUsage;
}

export interface RecordedModelError {
  kind: ModelError["kind"];
  message: string;
}

/** Effects on the world outside the graph state: Coder tools, git reads of the workspace, the thread's inbox, `function` nodes. */
export type EffectKind = "tool" | "git" | "inbox" | "function" | "mcp" | "hook";

/** What one record holds: a model call's answer or failure, an effect's result, or a user's answer to an approval. */
export type RecordData =
  | { kind: "model"; output: RecordedModelOutput; error?: undefined }
  | { kind: "model"; error: RecordedModelError; output?: undefined }
  | { kind: EffectKind; name: string; args: unknown; result: unknown }
  | { kind: "approval"; name: string; args: unknown; answer: unknown };

/** Where a record was made. */
export interface RecordKey {
  threadId: string;
  /** The root checkpoint the step started from (its step is that checkpoint's step + 1). */
  checkpointId: string;
  /** The LangGraph task path (checkpoint namespace), e.g. `coder:<task id>|model:<task id>`. */
  taskPath: string;
  /** Order of the call within one execution of the task, from 0. */
  callIndex: number;
  /** The caller: the node (or Review check, e.g. `review.task_log`) that scripted responses name. */
  node: string;
}

export type Recording = RecordKey & RecordData & { id: number; createdAt: string };

/** A record as a node hands it over; the recorder adds where it was made (`node` defaults to the task's name). */
export type RecordInput = RecordData & { node?: string };

/** Stores one record with the run (RunContext.record). */
export type Recorder = (input: RecordInput) => void;

export interface RecordingRow {
  id: number;
  thread_id: string;
  checkpoint_id: string;
  task_path: string;
  call_index: number;
  node: string;
  data: string;
  created_at: string;
}

/**
 * The recordings of runs, in the run store: every model answer (or model failure), every effect's
 * result (tool calls, git reads of the workspace, inbox reads) and every approval answer, so a run
 * can be replayed without a model and without side effects, or exported as a scripted model.
 *
 * Keying rule. Side effects of nodes are at-least-once: a step interrupted by a crash, a failure or
 * an approval question runs again from the same checkpoint. LangGraph derives a task's id from the
 * checkpoint it starts from, its step and its node, so the re-run has the same task path (and a
 * subgraph's inner steps that had finished are not re-run at all). A record is therefore keyed by
 * (thread, task path, call index), where the call index counts the calls of one execution of the
 * task; the first call of an execution (index 0) deletes whatever an earlier execution of the same
 * task path recorded. The rows of a task path are always those of its latest execution, and ids
 * (insertion order) give the order the calls were made in along the thread's checkpoint lineage.
 * The root checkpoint a step started from is kept too: a replay takes the records of the steps
 * after its starting checkpoint, on the lineage it follows (a thread with forks has several).
 *
 * Writing. Records are queued and written in one go with the next checkpoint write of the run
 * (the checkpoint saver's write hook, see openStore: in the transaction of the task's pending
 * writes, which LangGraph saves when the task ends, fails or is interrupted), or when the store
 * closes, or before a `list` — not in a transaction each. A process killed mid-task loses the
 * records its task made so far; the task runs again from its checkpoint on resume anyway, and
 * records again (the same at-least-once as an effect interrupted before its record was written).
 *
 * Everything stored passes through redactSecrets: no API key or Authorization value is written.
 */
export interface RecordingTable {
  /** Queues a record (written with the run's next checkpoint write); `secrets` (values of credentials) are replaced by `[redacted]`. */
  put(key: RecordKey, data: RecordData, secrets?: readonly string[]): void;
  /** A thread's records, in the order the calls were made (what is queued is written first). */
  list(threadId: string): Promise<Recording[]>;
}

/** A queued record: its key, and its row as both stores' insert statements take it (named parameters). */
export interface QueuedRecord {
  key: RecordKey;
  row: Record<string, unknown>;
}

/** The row of a record, redacted. */
export function recordRow(key: RecordKey, data: RecordData, secrets: readonly string[]): QueuedRecord {
  return {
    key,
    row: {
      thread_id: key.threadId,
      checkpoint_id: key.checkpointId,
      task_path: key.taskPath,
      call_index: key.callIndex,
      node: key.node,
      kind: data.kind,
      name: "name" in data ? data.name : null,
      data: redactSecrets(JSON.stringify(data), secrets),
      created_at: new Date().toISOString(),
    },
  };
}

/** A record from its row (the columns are the same in both stores). */
export function recordingOf(row: RecordingRow): Recording {
  return {
    ...(JSON.parse(row.data) as RecordData),
    id: Number(row.id),
    threadId: row.thread_id,
    checkpointId: row.checkpoint_id,
    taskPath: row.task_path,
    callIndex: row.call_index,
    node: row.node,
    createdAt: row.created_at,
  };
}

/**
 * Records waiting to be written: taken as a batch by the writer, given back when the write failed.
 */
export class RecordQueue {
  private pending: QueuedRecord[] = [];

  put(key: RecordKey, data: RecordData, secrets: readonly string[] = []): void {
    this.pending.push(recordRow(key, data, secrets));
  }

  get size(): number {
    return this.pending.length;
  }

  /** Writes the queued records with `write`, in the order they were made; on failure they stay queued (before any queued since). */
  write<T>(write: (batch: readonly QueuedRecord[]) => T): T | undefined {
    if (this.pending.length === 0) return undefined;
    const batch = this.pending;
    this.pending = [];
    const restore = () => {
      this.pending = [...batch, ...this.pending];
    };
    try {
      const result = write(batch);
      if (result instanceof Promise) return result.catch((error: unknown) => (restore(), Promise.reject(error))) as T;
      return result;
    } catch (error) {
      restore();
      throw error;
    }
  }
}
