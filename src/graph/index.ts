export { evaluateCondition, getPath } from "../format/condition.js";
export { graphJsonSchema, renderGraphJsonSchema } from "./json-schema.js";
export { listGraphs, type GraphListing } from "./list.js";
export { loadGraph, resolveGraphPath } from "./load.js";
export { needsTask } from "./placeholders.js";
export { describeCondition, drawMermaid } from "./mermaid.js";
export { nodeKindNames } from "./schema.js";
export * from "../format/types.js";
export { packageGraphsDir } from "../package.js";
