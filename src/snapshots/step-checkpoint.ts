import type { RunnableConfig } from "@langchain/core/runnables";
import type { StepCheckpoint } from "../runs/snapshot-log.js";

/**
 * The checkpoint a node's step started from, read from the config LangGraph passes to the node.
 * LangGraph leaves `checkpoint_id` unset there; `checkpoint_ns` is the task's own namespace
 * (`coder:<task>|tools:<task>`) and `checkpoint_map` maps the namespace of every enclosing
 * graph (`""` for the root, `coder:<task>` for the Coder) to the checkpoint it ran from.
 */
export function stepCheckpoint(config: RunnableConfig | undefined): StepCheckpoint | undefined {
  const configurable = config?.configurable ?? {};
  const taskNs = typeof configurable.checkpoint_ns === "string" ? configurable.checkpoint_ns : "";
  const map = configurable.checkpoint_map as Record<string, string> | undefined;
  const separator = taskNs.lastIndexOf("|");
  const ns = separator < 0 ? "" : taskNs.slice(0, separator);
  const id = map?.[ns];
  return id === undefined ? undefined : { ns, id, map: { ...map } };
}
