import type { GraphDefinition, NodeDefinition } from "../../format/types.js";

/** The Mediator: talks with the user and drives a Looper that runs `loop` as the linked thread `<thread>.loop`. */
export interface MediatorNodeDefinition extends NodeDefinition {
  kind: "mediator";
  /** Absolute path of the Markdown system prompt (default: the package's prompts/mediator.md). */
  promptFile: string;
  /** The graph the Looper runs (it has a looper node), already loaded and validated. */
  loop: GraphDefinition;
}
