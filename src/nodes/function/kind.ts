import { basename } from "node:path";
import { z } from "zod";
import { nodeCommon } from "../../format/node-schema.js";
import type { FunctionNodeDefinition } from "./definition.js";
import { defineNodeKind } from "../../runtime/node-kind.js";
import { createFunctionNode, loadUserFunction } from "./node.js";

const functionNode = z.strictObject({
  kind: z.literal("function"),
  ...nodeCommon,
  module: z
    .string()
    .regex(/\.(ts|js|mjs)$/, { error: "function module must be a .ts, .js or .mjs file" })
    .describe("Module relative to the graph file"),
  export: z.string().describe('Exported function name (default "default")').default("default"),
  writes: z
    .array(z.string())
    .describe("The state fields the function may return under vars (default: any); returning another fails the node")
    .optional(),
});

/** An exported TypeScript or JavaScript function `(state, {node, threadId, workspace}) => {output?, vars?}`. */
export const functionKind = defineNodeKind({
  kind: "function",
  schema: functionNode,
  usesModel: false,
  drawnAsSubroutine: true,
  varsWritten: (raw) => raw.writes ?? "any",
  resolve(raw, common, files): FunctionNodeDefinition | undefined {
    const module = files.file(raw.module, "module", "function module");
    if (module === undefined) return undefined;
    return { ...common, kind: "function", module, exportName: raw.export, ...(raw.writes && { writes: raw.writes }) };
  },
  files: (def) => [def.module],
  sideEffects: (def) => [`runs ${basename(def.module)}:${def.exportName}`],
  create: async (def, graph, ctx) => createFunctionNode(def, await loadUserFunction(def, ctx.env), ctx, graph),
});
