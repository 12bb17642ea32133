import type { GraphDefinition } from "../format/types.js";
import { nodeKinds } from "../nodes/registry.js";
import type { McpServer } from "../tools/mcp-servers.js";
import { mergeByName } from "../tools/config-variable.js";

/** The MCP servers a graph and the graphs inside it declare (an outer graph's replacing an inner one's of the same name). */
export function graphMcpServers(graph: GraphDefinition): McpServer[] {
  const inner = Object.values(graph.nodes).flatMap((node) => {
    const kind = nodeKinds.of(node);
    return [...(kind.inlineGraph ? [kind.inlineGraph(node)] : []), ...(kind.linkedGraphs?.(node) ?? [])];
  });
  return mergeByName(...inner.map(graphMcpServers), graph.mcpServers ?? []);
}
