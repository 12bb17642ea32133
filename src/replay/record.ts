import { checkpointTree, lineage, type TreeItem } from "../engine/checkpoint-tree.js";
import { nodesRun, parentIdOf, rootCheckpoints } from "../engine/inspect.js";
import type { Store } from "../store/store.js";
import { START_NODE } from "../format/types.js";
import { mapInstanceOf } from "../state/map.js";

/** LangGraph marks the node(s) scheduled to run next with a `branch:to:<node>` channel in the checkpoint. */
export const SCHEDULED_PREFIX = "branch:to:";

/** LangGraph keeps the `Send`s to run next (a map's instances) in this channel. */
const SENDS_CHANNEL = "__pregel_tasks";

/** The nodes a checkpoint schedules next: its `branch:to:<node>` channels, and the nodes of its `Send`s, each once. */
function scheduledIn(values: Record<string, unknown>): string[] {
  const branches = Object.keys(values)
    .filter((channel) => channel.startsWith(SCHEDULED_PREFIX))
    .map((channel) => channel.slice(SCHEDULED_PREFIX.length));
  const sends = values[SENDS_CHANNEL];
  const sent = Array.isArray(sends)
    ? sends.map((send) => (send as { node?: unknown }).node).filter((node) => typeof node === "string")
    : [];
  return [...new Set([...branches, ...sent])].sort();
}

/**
 * The mapped nodes a checkpoint sends over an empty list: their one instance runs nothing and
 * counts no visit, so only the `Send` tells that the node's step was theirs.
 */
function emptyMapsSent(values: Record<string, unknown>): string[] {
  const sends = values[SENDS_CHANNEL];
  if (!Array.isArray(sends)) return [];
  return sends
    .filter((send: { node?: unknown; args?: unknown }) => {
      const args = send.args;
      return typeof send.node === "string" && typeof args === "object" && args !== null && mapInstanceOf(args)?.count === 0;
    })
    .map((send: { node: string }) => send.node);
}

/**
 * The nodes that ran in the step that made a checkpoint from its parent: those whose visit count
 * rose, and the maps the parent sent over an empty list (which count none).
 */
function stepNodes(parent: RecordedStep | undefined, values: Record<string, unknown>, source: string): string[] {
  const ran = nodesRun(parent?.values ?? {}, values);
  // Only a step the graph ran (not a fork's edit or copy) ran what its parent had scheduled.
  if (parent === undefined || source !== "loop") return ran;
  return [...new Set([...ran, ...emptyMapsSent(parent.values)])];
}

/** One root checkpoint of a run, as replay reads it. */
export interface RecordedStep extends TreeItem {
  step: number;
  /** LangGraph's checkpoint source: "input", "loop", "update" (a fork's edit) or "fork". */
  source: string;
  /** The channel values as the nodes saw them (messages are message objects). */
  values: Record<string, unknown>;
  /** The nodes that ran in this step (their visit count rose, or a map of theirs ran over an empty list). */
  ran: string[];
  /** The nodes the run scheduled next, as recorded; empty where the run ended. */
  scheduled: string[];
}

/** A thread's root checkpoints, every branch, oldest first. */
export interface RunRecord {
  steps: ReadonlyMap<string, RecordedStep>;
  items: readonly RecordedStep[];
  /** The newest checkpoint, where `resume` continues (undefined before the first one). */
  head?: string;
}

export async function readRunRecord(store: Store, threadId: string): Promise<RunRecord> {
  const steps = new Map<string, RecordedStep>();
  for (const tuple of await rootCheckpoints(store, threadId)) {
    const values = tuple.checkpoint.channel_values as Record<string, unknown>;
    const parentId = parentIdOf(tuple);
    const parent = parentId === undefined ? undefined : steps.get(parentId);
    const source = tuple.metadata?.source ?? "loop";
    steps.set(tuple.checkpoint.id, {
      id: tuple.checkpoint.id,
      ...(parentId !== undefined ? { parentId } : {}),
      step: tuple.metadata?.step ?? 0,
      source,
      values,
      ran: stepNodes(parent, values, source),
      scheduled: scheduledIn(values),
    });
  }
  const items = [...steps.values()];
  return { steps, items, head: checkpointTree(items).head };
}

/** The steps from the run's input to its newest checkpoint: the branch `resume` continues. */
export function headLineage(record: RunRecord): RecordedStep[] {
  return record.head === undefined ? [] : lineage(record.items, record.head).map((id) => record.steps.get(id)!);
}

/** Whether the checkpoint holds the run's input, not yet in the state (nothing has routed yet). */
export const isInputStep = (step: RecordedStep): boolean => step.step < 0 || step.source === "input";

/**
 * The nodes whose outgoing edges decided what runs after this checkpoint: the nodes that ran,
 * START where the input entered the state, and for a fork's edit ("update") or copy ("fork"),
 * those of the checkpoint it was made from. Undefined for an input checkpoint.
 */
export function routingSources(record: RunRecord, step: RecordedStep): string[] | undefined {
  if (isInputStep(step)) return undefined;
  if (step.ran.length > 0) return step.ran;
  if (step.source !== "update" && step.source !== "fork") return [START_NODE];
  const parent = step.parentId === undefined ? undefined : record.steps.get(step.parentId);
  return (parent && routingSources(record, parent)) ?? [START_NODE];
}
