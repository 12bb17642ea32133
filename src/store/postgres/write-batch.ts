/**
 * The regular pending writes of one `putWrites` call (a task's outputs), two or more, stored as
 * one row of `loopgraph_checkpoint_writes`: a row costs its key (thread, checkpoint and task ids)
 * in the table and again in its index, several times what a small write holds. The row is keyed
 * by the first write's index; its value frames each write's index, channel, type and bytes.
 * Special writes (errors, interrupts, ...), which replace an earlier one, and sends (`__pregel_tasks`,
 * read on their own for checkpoints before format 4) keep a row each.
 */
import { TASKS, WRITES_IDX_MAP } from "@langchain/langgraph-checkpoint";
import { frameItems, unframeItems } from "../../checkpoint/item-framing.js";
import { packed } from "./packing.js";

export const WRITES_BATCH_TYPE = "lg:writes";
/** WRITES_BATCH_TYPE as rows of schema 3 and before name it. */
const LEGACY_WRITES_BATCH_TYPE = "loopgraph:writes";
/** Whether a write row's type (unpacked) is WRITES_BATCH_TYPE (of any schema). */
export const isWritesBatch = (type: string): boolean => type === WRITES_BATCH_TYPE || type === LEGACY_WRITES_BATCH_TYPE;
/**
 * The channel column of a batch's row, never read (LangGraph reserves names starting with "__":
 * no channel has one). Rows of schema 3 and before have `__writes_batch__`.
 */
export const WRITES_BATCH_CHANNEL = "__b";

/** One pending write as stored, its value not compressed yet. */
export interface WriteEntry {
  readonly idx: number;
  readonly channel: string;
  readonly type: string;
  readonly value: Uint8Array;
}

/** A write to store, and what to store instead where the logged items it refers to are gone (see item-logs.ts). */
export type PlannedWrite = WriteEntry & { readonly whole?: { readonly type: string; readonly value: Uint8Array } };

/** A row of the writes table, its value (and its stand-in) compressed where worth it. */
export interface WriteRow {
  readonly idx: number;
  readonly channel: string;
  readonly type: string;
  readonly value: Buffer;
  readonly wholeType: string | null;
  readonly wholeValue: Buffer | null;
}

function batchable(write: WriteEntry): boolean {
  return !(write.channel in WRITES_IDX_MAP) && write.channel !== TASKS;
}

function frameWrites(writes: readonly WriteEntry[]): Uint8Array {
  const keys = { type: "json", bytes: Buffer.from(JSON.stringify(writes.map((write) => [write.idx, write.channel])), "utf8") };
  return frameItems([keys, ...writes.map((write) => ({ type: write.type, bytes: write.value }))]);
}

/** The rows that store `writes`: the batchable ones in one row when there are two or more. */
export function writeRows(writes: readonly PlannedWrite[]): WriteRow[] {
  const batch = writes.filter(batchable);
  const single = batch.length >= 2 ? writes.filter((write) => !batchable(write)) : writes;
  const rows = single.map((write): WriteRow => {
    const [type, value] = packed(write.type, write.value);
    const whole = write.whole ? packed(write.whole.type, write.whole.value) : undefined;
    return { idx: write.idx, channel: write.channel, type, value, wholeType: whole?.[0] ?? null, wholeValue: whole?.[1] ?? null };
  });
  if (batch.length < 2) return rows;
  const [type, value] = packed(WRITES_BATCH_TYPE, frameWrites(batch));
  const whole = batch.some((write) => write.whole)
    ? packed(WRITES_BATCH_TYPE, frameWrites(batch.map((write) => (write.whole ? { ...write, ...write.whole } : write))))
    : undefined;
  rows.push({
    idx: batch[0]!.idx,
    channel: WRITES_BATCH_CHANNEL,
    type,
    value,
    wholeType: whole?.[0] ?? null,
    wholeValue: whole?.[1] ?? null,
  });
  return rows;
}

/** The writes a batch's value (uncompressed) holds. */
export function unframeWrites(data: Uint8Array): WriteEntry[] {
  const [keys, ...values] = unframeItems(data);
  const entries = JSON.parse(Buffer.from(keys!.bytes).toString("utf8")) as [number, string][];
  return entries.map(([idx, channel], i) => ({ idx, channel, type: values[i]!.type, value: values[i]!.bytes }));
}
