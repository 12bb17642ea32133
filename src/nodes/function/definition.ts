import type { NodeDefinition } from "../../format/types.js";

export interface FunctionNodeDefinition extends NodeDefinition {
  kind: "function";
  /** Absolute path of a .ts/.js/.mjs module. */
  module: string;
  /** Name of the exported function (default "default"). */
  exportName: string;
  /** The state fields its result may set under `vars` (`writes:`); undefined: any. */
  writes?: string[];
}
