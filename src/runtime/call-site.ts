import { getConfig } from "@langchain/langgraph";
import { instanceName } from "../state/map.js";

/** The LangGraph task a call is made in. */
export interface TaskSite {
  /** The task path (checkpoint namespace), e.g. `coder:<task id>|model:<task id>`. */
  taskPath: string;
  /** The root checkpoint the root step started from. */
  checkpointId: string;
  /** The innermost task's node name (`model` in the path above). */
  taskName: string;
}

export interface CallSite extends TaskSite {
  /** Order of the call within this execution of the task, from 0. */
  callIndex: number;
}

/** LangGraph's per-execution scratchpad of a task: a new object each time the task runs (or re-runs after an interrupt). */
const SCRATCHPAD = "__pregel_scratchpad";
const callCounts = new WeakMap<object, number>();

/** The task the caller runs in (read from LangGraph's async-local config), or undefined outside a graph task. */
export function currentTask(): TaskSite | undefined {
  return taskOf(getConfig()?.configurable);
}

/** The current task and the index of this call within the task's current execution (each call counts one). */
export function nextCallSite(): CallSite | undefined {
  const configurable = getConfig()?.configurable;
  const task = taskOf(configurable);
  const execution: unknown = configurable?.[SCRATCHPAD];
  if (!task || typeof execution !== "object" || execution === null) return undefined;
  const callIndex = callCounts.get(execution) ?? 0;
  callCounts.set(execution, callIndex + 1);
  return { ...task, callIndex };
}

function taskOf(configurable: Record<string, unknown> | undefined): TaskSite | undefined {
  const taskPath = configurable?.checkpoint_ns;
  const checkpointId = (configurable?.checkpoint_map as Record<string, unknown> | undefined)?.[""];
  if (typeof taskPath !== "string" || taskPath === "" || typeof checkpointId !== "string") return undefined;
  const innermost = taskPath.split("|").at(-1)!;
  return { taskPath, checkpointId, taskName: innermost.slice(0, innermost.lastIndexOf(":")) || innermost };
}

/** The map instances running in this process, by their task's root segment (`node:<task id>`). */
const runningInstances = new Map<string, { node: string; index: number }>();

/**
 * Runs `run` as instance `index` of the mapped `node`, in the task of `config`: the calls made in
 * it (and in the graphs it runs) are named `node[index]` for the record (see `callerName`).
 */
export async function asInstance<T>(
  config: { configurable?: Record<string, unknown> },
  node: string,
  index: number,
  run: () => Promise<T>,
): Promise<T> {
  const root = String(config.configurable?.checkpoint_ns ?? "").split("|")[0];
  if (!root) return run();
  runningInstances.set(root, { node, index });
  try {
    return await run();
  } finally {
    runningInstances.delete(root);
  }
}

/** The map instance the caller runs in, if any. */
export function currentInstance(): { node: string; index: number } | undefined {
  const root = currentTask()?.taskPath.split("|")[0];
  return root === undefined ? undefined : runningInstances.get(root);
}

/**
 * The name a call of `node` is recorded and replayed under: in a map's instance, `node[i]` (and
 * `node[i].check` for a caller named `node.check`), so that the instances' records, which come
 * in whatever order they ran, are matched instance by instance; elsewhere `node` itself.
 */
export function callerName(node: string): string {
  const instance = currentInstance();
  if (!instance) return node;
  const named = instanceName(instance.node, instance.index);
  if (node === instance.node) return named;
  return node.startsWith(`${instance.node}.`) ? `${named}${node.slice(instance.node.length)}` : node;
}
