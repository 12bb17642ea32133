import type { GraphDefinition } from "../format/types.js";
import { nodeKinds } from "../nodes/registry.js";
import type { McpServer } from "../tools/mcp-servers.js";
import { mergeByName } from "../tools/merge-by-name.js";
import { untrustedReason } from "../trust/trust.js";

/** The MCP servers a graph and the graphs inside it declare (an outer graph's replacing an inner one's of the same name). */
export function graphMcpServers(graph: GraphDefinition): McpServer[] {
  const inner = Object.values(graph.nodes).flatMap((node) => {
    const kind = nodeKinds.of(node);
    return [...(kind.inlineGraph ? [kind.inlineGraph(node)] : []), ...(kind.linkedGraphs?.(node) ?? [])];
  });
  return mergeByName(...inner.map(graphMcpServers), graph.mcpServers ?? []);
}

/**
 * The graph's MCP servers (graphMcpServers) less those declared in a graph file the user does not
 * trust as it is (src/trust/), each of which gets a line in `notes`.
 */
export function trustedGraphMcpServers(graph: GraphDefinition, env: NodeJS.ProcessEnv, notes: string[]): McpServer[] {
  return graphMcpServers(graph).filter((server) => {
    const untrusted = untrustedReason(server.origin, env);
    if (untrusted)
      notes.push(`MCP server "${server.name}" of ${server.origin} is not started (${untrusted}): review it, then run \`loopgraph trust\``);
    return !untrusted;
  });
}
