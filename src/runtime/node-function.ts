import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import type { GraphStateValue } from "../state/graph-state.js";

/** A node's writes: plain values, merged into the state by the channels' reducers. */
export type NodeUpdate = Partial<GraphStateValue>;

/** What every node kind compiles to: a LangGraph node function over the shared state. */
export type NodeFunction = (state: GraphStateValue, config: LangGraphRunnableConfig) => Promise<NodeUpdate>;
