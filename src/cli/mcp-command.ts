import type { GlobalOptions } from "./global-options.js";
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import pc from "picocolors";
import { ConfigError } from "../errors.js";
import { loadGraph, resolveGraphPath } from "../graph/index.js";
import { trustedGraphMcpServers } from "../graph/mcp-servers.js";
import { projectRoot } from "../project.js";
import { McpHub, type McpListing } from "../tools/mcp.js";
import type { McpServer } from "../tools/mcp-servers.js";
import { availableSandbox } from "../tools/sandbox.js";
import { printable } from "./terminal-text.js";
import { mergeByName } from "../tools/merge-by-name.js";

export interface McpListOptions extends GlobalOptions {
  graph?: string;
  workspace?: string;
  json?: boolean;
  noSandbox?: boolean;
  cwd?: string;
}

/**
 * `loopgraph mcp list`: the MCP servers a run here would have (the config files', and a graph's
 * with `--graph`), each started or contacted as a run would, with its tools or why it is not
 * available. Exit 1 when a server is not available.
 */
export async function mcpListCommand(options: McpListOptions): Promise<number> {
  const cwd = options.cwd ?? process.cwd();
  const { env } = options.settings;
  const notes: string[] = [];
  const fromGraph =
    options.graph === undefined
      ? []
      : trustedGraphMcpServers(await loadGraph(resolveGraphPath(options.graph, cwd, undefined, { env, notes })), env, notes);
  for (const note of notes) process.stderr.write(`loopgraph: ${note}\n`);
  const servers = mergeByName(fromGraph, options.settings.mcpServers);
  let workspace: string;
  try {
    workspace = realpathSync(resolve(cwd, options.workspace ?? projectRoot(cwd)));
  } catch {
    throw new ConfigError(`workspace ${options.workspace} does not exist: pass an existing directory with --workspace`);
  }
  const sandbox = availableSandbox(env, { noSandbox: options.noSandbox });
  const hub = new McpHub(servers, { workspace, sandbox, env });
  const listings: { server: McpServer; listing: McpListing }[] = [];
  try {
    for (const server of servers) listings.push({ server, listing: await hub.list([server.name]) });
  } finally {
    await hub.close();
  }
  const unavailable = listings.some(({ listing }) => listing.unavailable.length > 0);
  if (options.json) {
    const shown = listings.map(({ server, listing }) => ({
      name: server.name,
      transport: server.transport,
      declaredIn: server.origin,
      ...(server.transport === "stdio" ? { sandboxed: server.sandbox && sandbox.name === "bubblewrap" } : { url: server.url }),
      available: listing.unavailable.length === 0,
      ...(listing.unavailable[0] ? { reason: listing.unavailable[0].reason } : {}),
      tools: listing.tools.map(({ name, tool, description }) => ({ name, tool, description })),
    }));
    process.stdout.write(`${JSON.stringify({ servers: shown }, null, 2)}\n`);
    return unavailable ? 1 : 0;
  }
  if (servers.length === 0) {
    process.stdout.write("no MCP servers are declared: add mcp_servers: to your config file or a graph (see docs/mcp.md)\n");
    return 0;
  }
  const lines: string[] = [];
  for (const { server, listing } of listings) {
    const where =
      server.transport === "http"
        ? server.url
        : server.sandbox && sandbox.name === "bubblewrap"
          ? "stdio, in the sandbox"
          : "stdio, unconfined";
    const state = listing.unavailable[0] ? pc.red(`not available: ${listing.unavailable[0].reason}`) : `${listing.tools.length} tools`;
    lines.push(`${pc.bold(server.name)}  ${pc.dim(`${printable(where)}; ${printable(server.origin)}`)}  ${printable(state)}`);
    for (const tool of listing.tools) lines.push(`  ${tool.name}  ${pc.dim(printable(tool.description.split("\n")[0]!.slice(0, 100)))}`);
  }
  process.stdout.write(`${lines.join("\n")}\n`);
  return unavailable ? 1 : 0;
}
