/**
 * MCP servers as the user declares them (`mcp_servers:` in a config file or a graph), checked by
 * hand (the config is read by every command, without a schema library), and the names their tools
 * get: `server__tool`.
 *
 *     mcp_servers:
 *       everything:                       # stdio: loopgraph starts the server
 *         command: npx
 *         args: [-y, "@modelcontextprotocol/server-everything"]
 *         env: { LOG_LEVEL: debug }       # ${VAR} takes loopgraph's variable (your user config only)
 *         sandbox: true                   # in the OS sandbox, like the shell tool (false: your user config only)
 *         network: false                  # the sandboxed server may reach the network (your user config only)
 *         timeout: 60                     # seconds a call may take
 *       docs:                             # streamable HTTP
 *         url: http://127.0.0.1:3001/mcp
 *         headers: { Authorization: "Bearer ${DOCS_TOKEN}" }
 *
 * A server declared where the agent or a planted repository could have written it (a project's
 * `loopgraph.yaml`, a graph) is `trusted: false`: it always runs in the sandbox without network,
 * and passes on none of loopgraph's variables.
 */
import type { Problem } from "../diagnostics/yaml-file.js";
import { mappingEntry } from "../diagnostics/yaml-file.js";

interface McpServerCommon {
  name: string;
  /** Milliseconds a call may take. */
  timeoutMs: number;
  /** Declared by the user themselves (their config file, their environment): may pass variables, leave the sandbox or reach the network. */
  trusted: boolean;
  /** Where it was declared, for messages. */
  origin: string;
}

export interface McpStdioServer extends McpServerCommon {
  transport: "stdio";
  command: string;
  args: string[];
  /** Set for the server besides the agent's environment; `${VAR}` is expanded from loopgraph's (trusted only). */
  env: Record<string, string>;
  sandbox: boolean;
  network: boolean;
}

export interface McpHttpServer extends McpServerCommon {
  transport: "http";
  url: string;
  /** `${VAR}` is expanded from loopgraph's environment (trusted only). */
  headers: Record<string, string>;
}

export type McpServer = McpStdioServer | McpHttpServer;

const DEFAULT_TIMEOUT_SECONDS = 60;
const SERVER_KEYS = ["command", "args", "env", "sandbox", "network", "timeout", "url", "headers"];
/** Server names: the prefix of their tools' names, before `__`. */
const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,29}$/;
/** `${VAR}` in a value. */
const VARIABLE_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Where a declaration comes from: the user's own (config file, environment), or a file that comes with the project. */
export type McpDeclarationSource = { trusted: true; origin: string } | { trusted: false; origin: string; where: string };

/**
 * Checks `mcp_servers:` (a mapping of name → server); returns the servers, or the problems (paths
 * relative to the mapping's key `at`).
 */
export function checkMcpServers(
  value: unknown,
  source: McpDeclarationSource,
  at: (string | number)[] = ["mcp_servers"],
): { servers: McpServer[]; problems: Problem[] } {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return {
      servers: [],
      problems: [{ path: at, at: "value", message: "mcp_servers must be a mapping of server names to { command, args } or { url }" }],
    };
  }
  const problems: Problem[] = [];
  const servers: McpServer[] = [];
  const userOnly = (key: string) =>
    source.trusted
      ? undefined
      : `${source.where} cannot set ${key} for an MCP server (a planted file must not): declare the server in your user config`;
  for (const [name, raw] of Object.entries(value as Record<string, unknown>)) {
    const path = [...at, name];
    if (!SERVER_NAME.test(name)) {
      problems.push({
        path,
        at: "key",
        message: `MCP server name "${name}" must be letters, digits and - (at most 30): its tools are named ${name.replace(/[^A-Za-z0-9-]/g, "-")}__<tool>`,
      });
    }
    const entry = mappingEntry(raw, path, problems, SERVER_KEYS, {
      name: "an MCP server",
      notMapping: "an MCP server is a mapping: { command, args, env } (stdio) or { url, headers } (streamable HTTP)",
    });
    if (!entry) continue;
    const { fields, bad } = entry;
    const isStdio = fields.command !== undefined;
    if (isStdio === (fields.url !== undefined)) {
      problems.push({ path, at: "value", message: 'an MCP server has either "command" (stdio) or "url" (streamable HTTP)' });
      continue;
    }
    const wrongTransport = isStdio ? ["headers"] : ["args", "env", "sandbox", "network"];
    for (const key of wrongTransport)
      if (fields[key] !== undefined) bad(key, `${key} is for ${isStdio ? "HTTP" : "stdio"} servers (${isStdio ? "url" : "command"})`);
    const timeout = fields.timeout ?? DEFAULT_TIMEOUT_SECONDS;
    if (typeof timeout !== "number" || !(timeout > 0) || timeout > 86_400)
      bad("timeout", "timeout must be the seconds a call may take (a number, at most 86400)");
    const strings = (key: string, shape: "list" | "map"): string[] | Record<string, string> | undefined => {
      const field = fields[key];
      if (field === undefined) return shape === "list" ? [] : {};
      const ok =
        shape === "list"
          ? Array.isArray(field) && field.every((item) => typeof item === "string")
          : field !== null &&
            typeof field === "object" &&
            !Array.isArray(field) &&
            Object.values(field).every((item) => typeof item === "string");
      if (!ok) {
        bad(key, shape === "list" ? `${key} must be a list of strings` : `${key} must be a mapping of names to strings`);
        return undefined;
      }
      if (shape === "map" && !source.trusted && Object.values(field as Record<string, string>).some((item) => /\$\{/.test(item))) {
        bad(key, userOnly(`\${VAR} references in ${key}`)!);
      }
      return field as string[] | Record<string, string>;
    };
    const common = { name, timeoutMs: Math.round(Number(timeout) * 1000), trusted: source.trusted, origin: source.origin };
    if (isStdio) {
      if (typeof fields.command !== "string" || fields.command.trim() === "")
        bad("command", "command must be the program that starts the server, e.g. npx");
      const args = strings("args", "list") as string[] | undefined;
      const env = strings("env", "map") as Record<string, string> | undefined;
      for (const key of ["sandbox", "network"] as const) {
        if (fields[key] !== undefined && typeof fields[key] !== "boolean") bad(key, `${key} must be true or false`);
      }
      if (fields.sandbox === false && userOnly("sandbox: false")) bad("sandbox", userOnly("sandbox: false")!);
      if (fields.network === true && userOnly("network: true")) bad("network", userOnly("network: true")!);
      if (entry.clean() && args && env) {
        servers.push({
          ...common,
          transport: "stdio",
          command: fields.command as string,
          args,
          env,
          sandbox: fields.sandbox !== false,
          network: fields.network === true,
        });
      }
    } else {
      if (typeof fields.url !== "string" || !/^https?:\/\/[^\s]+$/.test(fields.url))
        bad("url", "url must be the http(s) URL of a streamable-HTTP MCP endpoint, e.g. http://127.0.0.1:3001/mcp");
      const headers = strings("headers", "map") as Record<string, string> | undefined;
      if (entry.clean() && headers) servers.push({ ...common, transport: "http", url: fields.url as string, headers });
    }
  }
  return { servers, problems };
}

/** `${VAR}` references replaced by loopgraph's variables (an unset one is an error naming it). */
export function expandVariables(text: string, env: NodeJS.ProcessEnv, where: string): string {
  return text.replace(VARIABLE_REFERENCE, (_, name: string) => {
    const value = env[name];
    if (value === undefined) throw new Error(`${where} uses \${${name}}, which is not set`);
    return value;
  });
}

/** The separator between a server's name and its tool's. Built-in tools never have it. */
export const MCP_SEPARATOR = "__";

/** The name the model calls a server's tool by: `server__tool`, in the characters every provider accepts (at most 64). */
export function mcpToolName(server: string, tool: string): string {
  return `${server}${MCP_SEPARATOR}${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`.slice(0, 64);
}

/** Whether a tool name is an MCP server's tool (`server__tool`). */
export function isMcpToolName(name: string): boolean {
  return name.includes(MCP_SEPARATOR);
}
