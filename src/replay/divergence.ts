import { LoopgraphError } from "../errors.js";

/**
 * How a recorded replay departed from the record:
 * - `node`: a node made a call at another step than the record has it (it was not recorded at that point);
 * - `unrecorded_call`: a node made a model call or an effect the record has nothing left for;
 * - `tool_args`: a tool call (or git read, inbox read, approval) with another name or arguments than recorded;
 * - `routing`: another node ran at a step than the one recorded, or the run ended at another step;
 * - `unused_records`: the replay ended with recorded calls it never made;
 * - `outcome`: the replay ended otherwise than the recorded run (finished, failed with another error, paused).
 */
export type DivergenceKind = "node" | "unrecorded_call" | "tool_args" | "routing" | "unused_records" | "outcome";

export interface Divergence {
  kind: DivergenceKind;
  /** The root step (LangGraph superstep of the thread) it happened at. */
  step?: number;
  node?: string;
  /** One line saying what happened and what the record has. */
  message: string;
  expected?: unknown;
  actual?: unknown;
}

/** Thrown inside the replayed graph to end it at a divergence or at the end of the record. */
export class ReplayStop extends LoopgraphError {
  override name = "ReplayStop";
}

/** Divergences in the order they happened: by step, those without one last. */
export function byStep(divergences: readonly Divergence[]): Divergence[] {
  return divergences
    .map((divergence, index) => ({ divergence, index }))
    .sort((a, b) => (a.divergence.step ?? Infinity) - (b.divergence.step ?? Infinity) || a.index - b.index)
    .map(({ divergence }) => divergence);
}

const clip = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** `name {"args": …}`, cut to a readable length. */
export function describeCall(name: string, args: unknown, max = 160): string {
  return `${name} ${clip(JSON.stringify(args) ?? "", max)}`;
}

/** How a call departs from the recorded one: the other tool, or the arguments that differ (`path: "a" (recorded "b")`). */
export function describeCallDifference(recorded: { name: string; args: unknown }, actual: { name: string; args: unknown }): string {
  if (recorded.name !== actual.name)
    return `${describeCall(actual.name, actual.args)}, where the record has ${describeCall(recorded.name, recorded.args)}`;
  const json = (value: unknown): string => JSON.stringify(value) ?? "undefined";
  const [before, after] = [recorded.args, actual.args];
  if (!isRecord(before) || !isRecord(after)) return `${actual.name} ${clip(json(after), 100)} (recorded ${clip(json(before), 100)})`;
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  const shown = keys
    .filter((key) => json(before[key]) !== json(after[key]))
    .map((key) => `${key}: ${clip(json(after[key]), 60)} (recorded ${clip(json(before[key]), 60)})`);
  return `${actual.name} with ${shown.join(", ")}`;
}
