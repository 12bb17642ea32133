export { evaluateCondition, getPath } from "./condition.js";
export { graphJsonSchema, renderGraphJsonSchema } from "./json-schema.js";
export { listGraphs, type GraphListing } from "./list.js";
export { loadGraph, packageGraphsDir, resolveGraphPath } from "./load.js";
export { describeCondition, drawMermaid } from "./mermaid.js";
export { NODE_KINDS } from "./schema.js";
export * from "./types.js";
