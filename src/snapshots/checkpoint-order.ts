import { ConfigError } from "../errors.js";
import type { StepCheckpoint } from "../runs/snapshot-log.js";
import type { Store } from "../store/store.js";

/**
 * Where checkpoints stand relative to each other in a thread: a root checkpoint or a
 * subgraph's (a Coder tool step's) is located by the checkpoint of each enclosing graph
 * (LangGraph's `checkpoint_map`). A step is at or after checkpoint N when, at the deepest graph
 * they share, it ran from N or from a descendant of N: branches that do not descend from N are
 * not after it, even if they ran later. (Inside a subgraph run, a step of a branch forked from
 * the root checkpoint that run started from counts as after it.)
 */

/** Checkpoint id → parent id, per namespace of one thread. */
export type ParentLookup = (ns: string) => Map<string, string | undefined>;

/** Parent links of a thread's checkpoints in the namespaces of `steps` (their own and their enclosing graphs'), read once each. */
export async function parentLookup(store: Store, threadId: string, steps: readonly StepCheckpoint[]): Promise<ParentLookup> {
  const namespaces = new Set(steps.flatMap((step) => [step.ns, ...Object.keys(step.map)]));
  const links = new Map<string, Map<string, string | undefined>>();
  for (const ns of namespaces) links.set(ns, await store.checkpoints.parentLinks(threadId, ns));
  return (ns) => links.get(ns) ?? new Map();
}

/**
 * A checkpoint of the thread, root or subgraph, by id or unique prefix, with the checkpoints of
 * its enclosing graphs; one-line errors (exit 2) when none or several match.
 */
export async function resolveCheckpoint(store: Store, threadId: string, idOrPrefix: string): Promise<StepCheckpoint> {
  const matches = idOrPrefix ? await store.checkpoints.checkpointsWithPrefix(threadId, idOrPrefix) : [];
  const ids = new Set(matches.map((match) => match.id));
  if (ids.size !== 1) {
    const problem = ids.size === 0 ? "no checkpoint" : "more than one checkpoint";
    throw new ConfigError(
      `${problem} of thread "${threadId}" matches "${idOrPrefix}": see \`loopgraph rewind ${threadId} --list\` or \`loopgraph inspect ${threadId}\``,
    );
  }
  const { ns, id } = matches[0]!;
  const tuple = await store.saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id } });
  const parents = (tuple?.metadata?.parents ?? {}) as Record<string, string>;
  return { ns, id, map: { ...parents, [ns]: id } };
}

/** Depth of a namespace: 0 for the root graph, 1 for `coder:<task>`, 2 for `a:<task>|coder:<task>` … */
const depth = (ns: string): number => (ns === "" ? 0 : ns.split("|").length);

/** True when the step (where it started) is at or after the checkpoint `target`. */
export function isAtOrAfter(step: StepCheckpoint, target: StepCheckpoint, parents: ParentLookup): boolean {
  const levels = Object.keys(target.map).sort((a, b) => depth(a) - depth(b));
  for (const ns of levels) {
    const ours = step.map[ns];
    const theirs = target.map[ns]!;
    if (ours === undefined) return false;
    if (ours === theirs) continue;
    return descendsFrom(ours, theirs, parents(ns));
  }
  return true;
}

function descendsFrom(id: string, ancestor: string, links: Map<string, string | undefined>): boolean {
  let current = links.get(id);
  for (let hops = 0; current !== undefined && hops <= links.size; hops++) {
    if (current === ancestor) return true;
    current = links.get(current);
  }
  return false;
}
