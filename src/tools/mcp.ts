/**
 * The MCP client: connections to the servers a run declares (mcp-servers.ts), made when a tool of
 * theirs is first needed and closed when the run's execution ends, and their tools as Coder tools
 * (`server__tool`). A stdio server runs in the OS sandbox with the agent's environment, as the
 * shell tool's commands do. The SDK is loaded only by a run that has servers.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { z } from "zod";
import { packageVersion } from "../package.js";
import { agentEnvironment } from "./environment.js";
import { existsSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { expandVariables, mcpToolName, type McpServer, type McpStdioServer } from "./mcp-servers.js";
import { protectedPaths } from "./protected-entries.js";
import { SANDBOX_OFF, sandboxForDeclared, type Sandbox } from "./sandbox.js";
import { ToolError, type ToolDefinition, type ToolOutput } from "./types.js";

/** One tool of a server, as the Coder offers it (stored in its state, so a recorded replay needs no server). */
export interface McpToolInfo {
  /** What the model calls it: `server__tool`. */
  name: string;
  server: string;
  /** The server's own name for it. */
  tool: string;
  description: string;
  /** Its input's JSON Schema. */
  parameters: Record<string, unknown>;
}

/** The tools of some servers, and the servers that could not give theirs (why, in one line). */
export interface McpListing {
  tools: McpToolInfo[];
  unavailable: { server: string; reason: string }[];
}

export interface McpHubOptions {
  /** Absolute, real path: a stdio server runs there. */
  workspace: string;
  /** The run's sandbox: a stdio server runs in it unless the user's own declaration says otherwise. */
  sandbox: Sandbox;
  /** loopgraph's environment (the run's settings'). */
  env: NodeJS.ProcessEnv;
}

interface Connection {
  client: Client;
  /** The last of what a stdio server wrote to stderr. */
  stderr(): string;
}

const STDERR_KEPT = 2_000;
const CONNECT_TIMEOUT_MS = 30_000;

/** One line of an error message, without control characters (a server's text is not trusted). */
function oneLine(text: string, max = 300): string {
  const line = text
    .replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

export class McpHub {
  private readonly connections = new Map<string, Promise<Connection>>();
  private readonly env: NodeJS.ProcessEnv;
  /** The hubs of other folders (`in`), closed with this one. */
  private readonly elsewhere = new Map<string, McpHub>();

  constructor(
    readonly servers: readonly McpServer[],
    private readonly options: McpHubOptions,
  ) {
    this.env = options.env;
  }

  /** The tools of the named servers; a server that cannot start or answer is listed as unavailable. */
  async list(names: readonly string[], signal?: AbortSignal): Promise<McpListing> {
    const listing: McpListing = { tools: [], unavailable: [] };
    const taken = new Set<string>();
    for (const name of names) {
      const server = this.server(name);
      try {
        const { client } = await this.connection(server);
        for (let cursor: string | undefined, first = true; first || cursor !== undefined; first = false) {
          const page = await client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: server.timeoutMs });
          for (const tool of page.tools) {
            let exposed = mcpToolName(server.name, tool.name);
            for (let n = 2; taken.has(exposed); n++) exposed = `${mcpToolName(server.name, tool.name).slice(0, 60)}_${n}`;
            taken.add(exposed);
            const { $schema: _, ...parameters } = tool.inputSchema as Record<string, unknown>;
            listing.tools.push({
              name: exposed,
              server: server.name,
              tool: tool.name,
              description: tool.description ?? tool.title ?? tool.name,
              parameters,
            });
          }
          cursor = page.nextCursor;
        }
      } catch (error) {
        if (signal?.aborted) throw error;
        listing.unavailable.push({ server: name, reason: await this.failure(name, error) });
      }
    }
    return listing;
  }

  /** Calls a server's tool: its content as text, a failure as a ToolError. */
  async call(name: string, tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolOutput> {
    const server = this.server(name);
    let result: Awaited<ReturnType<Client["callTool"]>>;
    try {
      const { client } = await this.connection(server);
      result = await client.callTool({ name: tool, arguments: args }, undefined, { signal, timeout: server.timeoutMs });
    } catch (error) {
      if (signal?.aborted) throw new ToolError("failed", "cancelled before it finished");
      const code = (error as { code?: unknown }).code;
      // -32001: the SDK's request timeout.
      if (code === -32001)
        throw new ToolError(
          "timeout",
          `MCP server "${name}" did not answer ${tool} within ${server.timeoutMs / 1000}s (its timeout: in mcp_servers)`,
        );
      throw new ToolError("failed", `MCP server "${name}": ${await this.failure(name, error)}`);
    }
    const text = resultText(result);
    if (result.isError) throw new ToolError("failed", text || `${tool} failed (the server gave no reason)`);
    return { content: text };
  }

  /**
   * The same servers working in another folder (a worktree Coder's, whose stdio servers must
   * change its files, not the run's workspace): started there when first used, closed with this hub.
   */
  in(workspace: string): McpHub {
    if (workspace === this.options.workspace) return this;
    let hub = this.elsewhere.get(workspace);
    if (!hub) this.elsewhere.set(workspace, (hub = new McpHub(this.servers, { ...this.options, workspace })));
    return hub;
  }

  /** Closes every connection (a stdio server's process with it), the other folders' hubs' too. */
  async close(): Promise<void> {
    const open = [...this.connections.values()];
    this.connections.clear();
    const others = [...this.elsewhere.values()];
    this.elsewhere.clear();
    await Promise.all(others.map((hub) => hub.close()));
    // A connection that never opened has nothing to close; one that fails to close is gone anyway.
    await Promise.all(open.map(async (pending) => (await pending.catch(() => undefined))?.client.close().catch(() => undefined)));
  }

  private server(name: string): McpServer {
    const server = this.servers.find((candidate) => candidate.name === name);
    if (!server) throw new ToolError("tool_not_found", `no MCP server "${name}" is declared for this run`);
    return server;
  }

  /** Why a server failed, in one line (with the end of its stderr); the connection is dropped, so the next use starts it again. */
  private async failure(name: string, error: unknown): Promise<string> {
    const pending = this.connections.get(name);
    this.connections.delete(name);
    // The failure being told is `error`: a connection that never opened, or fails to close, adds nothing to it.
    const connection = await pending?.catch(() => undefined);
    const stderr = connection?.stderr() ?? (error as { stderr?: string }).stderr ?? "";
    await connection?.client.close().catch(() => undefined);
    const message = oneLine(error instanceof Error ? error.message : String(error));
    const tail = oneLine(
      stderr
        .split("\n")
        .filter((line) => line.trim())
        .slice(-3)
        .join(" | "),
      400,
    );
    return `${tail ? `${message} (stderr: ${tail})` : message}${this.sandboxHint(this.server(name))}`;
  }

  /** Why a server that failed may have failed because of where it ran: the sandbox has no network and an empty home. */
  private sandboxHint(server: McpServer): string {
    if (server.transport !== "stdio" || (server.trusted && !server.sandbox) || server.network || this.options.sandbox.name !== "bubblewrap")
      return "";
    return (
      "; it ran in the OS sandbox, which has no network and an empty home: a server that downloads itself " +
      "(npx -y …) needs `network: true` in your declaration, or install it and name its program"
    );
  }

  private connection(server: McpServer): Promise<Connection> {
    let pending = this.connections.get(server.name);
    if (!pending) {
      pending = this.connect(server);
      this.connections.set(server.name, pending);
    }
    return pending;
  }

  private async connect(server: McpServer): Promise<Connection> {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const client = new Client({ name: "loopgraph", version: packageVersion() });
    if (server.transport === "http") {
      const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
      const headers = Object.fromEntries(
        Object.entries(server.headers).map(([key, value]) => [key, this.expand(server, value, `headers.${key}`)]),
      );
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers } }), {
        timeout: CONNECT_TIMEOUT_MS,
      });
      return { client, stderr: () => "" };
    }
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const sandbox = this.sandboxFor(server);
    const env: NodeJS.ProcessEnv = { ...agentEnvironment(this.env) };
    for (const [key, value] of Object.entries(server.env)) env[key] = this.expand(server, value, `env.${key}`);
    const wrapped = sandbox.wrap([server.command, ...server.args], this.options.workspace, env, protectedPaths(this.options.workspace));
    const transport = new StdioClientTransport({
      command: wrapped.file,
      args: wrapped.args,
      env: Object.fromEntries(Object.entries(wrapped.env).filter((entry): entry is [string, string] => entry[1] !== undefined)),
      cwd: this.options.workspace,
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_KEPT);
    });
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
    } catch (error) {
      // The connect's error is the one to report.
      await client.close().catch(() => undefined);
      throw Object.assign(error instanceof Error ? error : new Error(String(error)), { stderr });
    }
    return { client, stderr: () => stderr };
  }

  /**
   * Where a stdio server runs: in the OS sandbox (without network unless the user's own declaration
   * allows it; with the workspace read-only when the declaration is not the user's); outside it only by the user's own declaration (`sandbox: false`) or, for theirs,
   * where no sandbox can start. A server from a project's file or a graph never runs unconfined.
   */
  private sandboxFor(server: Extract<McpServer, { transport: "stdio" }>): Sandbox {
    const { sandbox } = this.options;
    if (server.trusted && !server.sandbox) return SANDBOX_OFF;
    const confined = sandboxForDeclared(sandbox, server.trusted, this.env, {
      network: server.network,
      readable: programFolders(server, this.env),
    });
    if (confined) return confined;
    const why = sandbox.name === "off" ? "the sandbox is off for this run" : "no OS sandbox can start here (install bubblewrap)";
    throw new Error(
      `not started: it is declared in ${server.origin}, and such a server runs only in the OS sandbox, but ${why}; declare it in your user config to run it without`,
    );
  }

  private expand(server: McpServer, value: string, key: string): string {
    return server.trusted ? expandVariables(value, this.env, `MCP server "${server.name}" (${key})`) : value;
  }
}

/** Markers of a program's own folder: a package, a Python or Rust or Go project. */
const PROGRAM_ROOT_MARKERS = ["package.json", "pyproject.toml", "Cargo.toml", "go.mod"];

/**
 * The folders of a user's stdio server's own files, made readable in the sandbox (which hides
 * `/tmp` and the home directories): for each absolute path in its command and arguments that
 * exists, the nearest folder above it that is a package or project, else the path's own folder;
 * never `/`, `/tmp` or a home directory itself (where the user's keys are).
 */
export function programFolders(server: Pick<McpStdioServer, "command" | "args">, env: NodeJS.ProcessEnv): string[] {
  const homes = new Set(["/", "/tmp", "/home", "/root", ...(env.HOME ? [resolve(env.HOME)] : [])]);
  const folders = new Set<string>();
  for (const path of [server.command, ...server.args]) {
    if (!isAbsolute(path) || !existsSync(path)) continue;
    const start = statSync(path).isDirectory() ? path : dirname(path);
    let folder: string | undefined;
    for (let dir = start; !homes.has(dir) && dir !== dirname(dir); dir = dirname(dir)) {
      if (PROGRAM_ROOT_MARKERS.some((marker) => existsSync(join(dir, marker)))) {
        folder = dir;
        break;
      }
    }
    folder ??= start;
    if (!homes.has(folder) && dirname(folder) !== "/home") folders.add(folder);
  }
  return [...folders];
}

type ContentItem = {
  type: string;
  text?: string;
  mimeType?: string;
  data?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; text?: string; mimeType?: string };
};

/** A tool result's content as text for the model: text as is, other content described in a line. */
function resultText(result: { content?: unknown; structuredContent?: unknown; toolResult?: unknown }): string {
  const items = Array.isArray(result.content) ? (result.content as ContentItem[]) : [];
  const parts = items.map((item) => {
    switch (item.type) {
      case "text":
        return item.text ?? "";
      case "image":
      case "audio":
        return `[${item.type}: ${item.mimeType ?? "unknown type"}, ${Math.floor(((item.data?.length ?? 0) * 3) / 4)} bytes, not shown]`;
      case "resource":
        return item.resource?.text ?? `[resource ${item.resource?.uri ?? ""} (${item.resource?.mimeType ?? "binary"}), not shown]`;
      case "resource_link":
        return `[resource link: ${item.uri ?? ""}${item.name ? ` (${item.name})` : ""}]`;
      default:
        return `[${item.type} content, not shown]`;
    }
  });
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent, null, 2);
  if (parts.length === 0 && result.toolResult !== undefined) return JSON.stringify(result.toolResult, null, 2);
  return parts.join("\n");
}

const ANY_OBJECT = z.record(z.string(), z.unknown());

/** A server's tool as a Coder tool: the server checks its arguments; calls go through the hub the run has. */
export function mcpToolDefinition(info: McpToolInfo, hub: () => McpHub): ToolDefinition<Record<string, unknown>> {
  return {
    name: info.name,
    description: `${info.description}\n(Tool "${info.tool}" of the MCP server "${info.server}".)`,
    effect: "external",
    schema: ANY_OBJECT,
    parameters: info.parameters,
    run: (args, ctx) => hub().call(info.server, info.tool, args, ctx.signal),
  };
}
