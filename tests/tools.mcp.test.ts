/**
 * The MCP client against the reference server from npm (@modelcontextprotocol/server-everything),
 * started over stdio as a user would declare it: its tools as `server__tool`, calls, failures and
 * timeouts as typed tool errors, the agent's environment and the sandbox; and the declarations'
 * checks (what a project's file or a graph may not do).
 */
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { evaluatePolicy } from "../src/policy/index.js";
import { McpHub, programFolders } from "../src/tools/mcp.js";
import { checkMcpServers, expandVariables, mcpToolName, type McpServer, type McpStdioServer } from "../src/tools/mcp-servers.js";
import { availableSandbox, NO_SANDBOX, SANDBOX_OFF } from "../src/tools/sandbox.js";
import { ToolError } from "../src/tools/types.js";
import { lacks } from "./helpers/requirements.js";
import { tempWorkspace } from "./helpers/workspace.js";

const STDIO_FIXTURE = join(import.meta.dirname, "fixtures", "mcp", "everything-stdio.mjs");
const bubblewrap = availableSandbox({});

function stdioServer(overrides: Partial<McpStdioServer> = {}): McpStdioServer {
  return {
    name: "everything",
    transport: "stdio",
    command: process.execPath,
    args: [STDIO_FIXTURE],
    env: {},
    sandbox: true,
    network: false,
    timeoutMs: 10_000,
    trusted: true,
    origin: "test",
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<ToolError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ToolError);
  return error as ToolError;
}

describe("McpHub with the reference server over stdio", () => {
  const hubs: McpHub[] = [];
  const hubOf = (servers: McpServer[], workspace: string, sandbox = bubblewrap, env: NodeJS.ProcessEnv = process.env) => {
    const hub = new McpHub(servers, { workspace, sandbox, env });
    hubs.push(hub);
    return hub;
  };
  afterAll(async () => {
    await Promise.all(hubs.map((hub) => hub.close()));
  });

  it("lists the tools as server__tool, calls one, and reports the server's errors and timeouts as typed tool errors", async () => {
    const ws = tempWorkspace();
    const hub = hubOf([stdioServer({ timeoutMs: 1_500 })], ws.dir);
    const listing = await hub.list(["everything"]);
    expect(listing.unavailable).toEqual([]);
    const echo = listing.tools.find((tool) => tool.tool === "echo");
    expect(echo).toMatchObject({ name: "everything__echo", server: "everything", description: "Echoes back the input string" });
    expect(echo!.parameters).toMatchObject({ type: "object", properties: { message: { type: "string" } } });
    expect(echo!.parameters).not.toHaveProperty("$schema");
    expect(listing.tools.map((tool) => tool.name)).toContain("everything__get-sum");

    expect(await hub.call("everything", "echo", { message: "hi there" })).toEqual({ content: "Echo: hi there" });
    const invalid = await failure(hub.call("everything", "get-sum", { a: 1 }));
    expect(invalid.kind).toBe("failed");
    expect(invalid.message).toMatch(/Input validation error/);
    const slow = await failure(hub.call("everything", "trigger-long-running-operation", { duration: 5, steps: 1 }));
    expect(slow.kind).toBe("timeout");
    expect(slow.message).toMatch(/did not answer trigger-long-running-operation within 1.5s/);
    // The connection still works after a timeout.
    expect((await hub.call("everything", "get-sum", { a: 2, b: 3 })).content).toMatch(/5/);
    expect(await failure(hub.call("nowhere", "echo", {}))).toMatchObject({ kind: "tool_not_found" });
  });

  it.skipIf(lacks("sandbox", "the MCP server-in-bubblewrap test"))(
    "runs a stdio server in the sandbox with the agent's environment: no credentials, ${VAR} only for the user's own, the workspace read-only for a planted one",
    async () => {
      const ws = tempWorkspace();
      const env = { ...process.env, MY_SERVICE_TOKEN: "tok-never-shown-4711", PLAIN_SETTING: "plain-value" };
      const server = stdioServer({ env: { PASSED: "${PLAIN_SETTING}", TOKEN_FOR_SERVER: "${MY_SERVICE_TOKEN}" } });
      // A project's server comes with the repository: a copy of a dependency-free one in the workspace.
      copyFileSync(join(import.meta.dirname, "fixtures", "mcp", "minimal-server.mjs"), join(ws.dir, "minimal-server.mjs"));
      const planted: McpServer = {
        ...server,
        name: "planted",
        args: [join(ws.dir, "minimal-server.mjs")],
        trusted: false,
        env: { PASSED: "${PLAIN_SETTING}" },
      };
      const hub = hubOf([server, planted], ws.dir, bubblewrap, env);
      const own = (await hub.call("everything", "get-env", {})).content;
      expect(own).not.toMatch(/MY_SERVICE_TOKEN/);
      expect(own).toMatch(/"PASSED": "plain-value"/);
      // The user's own declaration may hand a credential to its server on purpose.
      expect(own).toMatch(/"TOKEN_FOR_SERVER": "tok-never-shown-4711"/);
      const plantedEnv = (await hub.call("planted", "get-env", {})).content;
      expect(plantedEnv).toMatch(/"PASSED": "\$\{PLAIN_SETTING\}"/);
      expect(plantedEnv).not.toMatch(/tok-never-shown-4711/);
      // Both ran in the workspace: the user's own may write there (the fixture logs its start), the planted one only read.
      expect(readFileSync(join(ws.dir, "mcp-starts.log"), "utf8").trim().split("\n")).toHaveLength(1);
      const wrote = await failure(hub.call("planted", "write", {}));
      expect(wrote.message).toBe("could not write: EROFS");
      expect(existsSync(join(ws.dir, "planted-wrote"))).toBe(false);
    },
  );

  it("never starts a server from a project's file or a graph outside the sandbox; the user's own runs without one where none can start", async () => {
    const ws = tempWorkspace();
    const planted = stdioServer({ name: "planted", trusted: false, origin: "/p/loopgraph.yaml" });
    for (const sandbox of [NO_SANDBOX, SANDBOX_OFF]) {
      const listing = await hubOf([planted], ws.dir, sandbox).list(["planted"]);
      expect(listing.tools).toEqual([]);
      expect(listing.unavailable[0]!.reason).toMatch(
        /^not started: it is declared in \/p\/loopgraph\.yaml, and such a server runs only in the OS sandbox/,
      );
    }
    expect(existsSync(join(ws.dir, "mcp-starts.log"))).toBe(false);
    const own = await hubOf([stdioServer()], ws.dir, NO_SANDBOX).list(["everything"]);
    expect(own.tools.length).toBeGreaterThan(5);
  });

  it("a server that cannot start is unavailable, with the end of its stderr in one line", async () => {
    const ws = tempWorkspace();
    const broken = stdioServer({ name: "broken", args: ["-e", "console.error('boom: \\u001b[31mno config\\u001b[0m'); process.exit(3)"] });
    const listing = await hubOf([broken], ws.dir, NO_SANDBOX).list(["broken"]);
    expect(listing.unavailable).toHaveLength(1);
    expect(listing.unavailable[0]!.reason).toMatch(/Connection closed \(stderr: boom: \[31mno config \[0m\)$/);
    expect(listing.unavailable[0]!.reason).not.toMatch(/\u001b/);
  });

  it.skipIf(lacks("sandbox", "the MCP sandbox-hint test"))(
    "one that fails in the sandbox says that the sandbox has no network and an empty home, and what to do; one with network: true does not",
    async () => {
      const ws = tempWorkspace();
      const broken = stdioServer({ name: "broken", args: ["-e", "process.exit(3)"] });
      const [closed] = (await hubOf([broken], ws.dir, bubblewrap).list(["broken"])).unavailable;
      expect(closed!.reason).toMatch(
        /; it ran in the OS sandbox, which has no network and an empty home: a server that downloads itself \(npx -y …\) needs `network: true` in your declaration, or install it and name its program$/,
      );
      const [open] = (await hubOf([{ ...broken, network: true }], ws.dir, bubblewrap).list(["broken"])).unavailable;
      expect(open!.reason).not.toMatch(/no network/);
    },
  );
});

describe("a user's stdio server's own files in the sandbox", () => {
  it("are the package or project folder of each absolute path in its command line, never / or a home directory", () => {
    const ws = tempWorkspace({
      files: {
        "tools/pkg/package.json": "{}",
        "tools/pkg/bin/server.js": "",
        "home/server.js": "",
        "home/app/main.py": "",
        "loose/server.js": "",
      },
    });
    const at = (path: string) => join(ws.dir, path);
    const env = { HOME: at("home") };
    expect(programFolders({ command: "node", args: [at("tools/pkg/bin/server.js"), "--port", "3"] }, env)).toEqual([at("tools/pkg")]);
    expect(programFolders({ command: at("loose/server.js"), args: [at("missing.js"), "relative.js"] }, env)).toEqual([at("loose")]);
    expect(programFolders({ command: "node", args: [at("home/server.js"), at("home/app/main.py"), "/", "/tmp"] }, env)).toEqual([
      at("home/app"),
    ]);
  });
});

describe("MCP server declarations", () => {
  const user = { trusted: true, origin: "your user config" } as const;
  const project = { trusted: false, origin: "/p/loopgraph.yaml", where: "a project's loopgraph.yaml" } as const;

  it("reads stdio and HTTP servers with their defaults", () => {
    const checked = checkMcpServers(
      { fs: { command: "npx", args: ["-y", "server"] }, docs: { url: "http://127.0.0.1:3001/mcp", headers: { A: "b" }, timeout: 5 } },
      user,
    );
    expect(checked.problems).toEqual([]);
    expect(checked.servers).toEqual([
      {
        name: "fs",
        transport: "stdio",
        command: "npx",
        args: ["-y", "server"],
        env: {},
        sandbox: true,
        network: false,
        timeoutMs: 60_000,
        trusted: true,
        origin: "your user config",
      },
      {
        name: "docs",
        transport: "http",
        url: "http://127.0.0.1:3001/mcp",
        headers: { A: "b" },
        timeoutMs: 5_000,
        trusted: true,
        origin: "your user config",
      },
    ]);
  });

  it("a project's file may not take a server out of the sandbox, give it the network or pass it loopgraph's variables", () => {
    const value = {
      s: { command: "x", sandbox: false, network: true, env: { T: "${OPENAI_API_KEY}" } },
      h: { url: "https://example.com/mcp", headers: { Authorization: "Bearer ${TOKEN}" } },
    };
    const messages = checkMcpServers(value, project).problems.map((problem) => `${problem.path.join(".")}: ${problem.message}`);
    expect(messages).toEqual([
      "mcp_servers.s.env: a project's loopgraph.yaml cannot set ${VAR} references in env for an MCP server (a planted file must not): declare the server in your user config",
      "mcp_servers.s.sandbox: a project's loopgraph.yaml cannot set sandbox: false for an MCP server (a planted file must not): declare the server in your user config",
      "mcp_servers.s.network: a project's loopgraph.yaml cannot set network: true for an MCP server (a planted file must not): declare the server in your user config",
      "mcp_servers.h.headers: a project's loopgraph.yaml cannot set ${VAR} references in headers for an MCP server (a planted file must not): declare the server in your user config",
    ]);
    expect(checkMcpServers(value, user).problems).toEqual([]);
  });

  it("says what is wrong with a declaration", () => {
    const messages = (value: unknown) =>
      checkMcpServers(value, user).problems.map((problem) => `${problem.path.join(".")}: ${problem.message}`);
    expect(messages([])).toEqual(["mcp_servers: mcp_servers must be a mapping of server names to { command, args } or { url }"]);
    expect(messages({ a__b: { command: "x" } })[0]).toMatch(/^mcp_servers\.a__b: MCP server name "a__b" must be letters, digits and -/);
    expect(messages({ s: { command: "x", url: "http://h" } })).toEqual([
      'mcp_servers.s: an MCP server has either "command" (stdio) or "url" (streamable HTTP)',
    ]);
    expect(messages({ s: { comand: "x" } })).toEqual([
      'mcp_servers.s.comand: unknown key "comand": did you mean "command"?',
      'mcp_servers.s: an MCP server has either "command" (stdio) or "url" (streamable HTTP)',
    ]);
    expect(messages({ s: { url: "ftp://h", args: ["a"], timeout: -1 } })).toEqual([
      "mcp_servers.s.args: args is for stdio servers (command)",
      "mcp_servers.s.timeout: timeout must be the seconds a call may take (a number, at most 86400)",
      "mcp_servers.s.url: url must be the http(s) URL of a streamable-HTTP MCP endpoint, e.g. http://127.0.0.1:3001/mcp",
    ]);
    expect(messages({ s: { command: "x", args: "a b", env: { A: 1 } } })).toEqual([
      "mcp_servers.s.args: args must be a list of strings",
      "mcp_servers.s.env: env must be a mapping of names to strings",
    ]);
  });

  it("names tools server__tool in the characters every provider accepts, and expands only set variables", () => {
    expect(mcpToolName("docs", "search.pages/v2")).toBe("docs__search_pages_v2");
    expect(mcpToolName("docs", "x".repeat(100))).toHaveLength(64);
    expect(expandVariables("Bearer ${TOKEN}", { TOKEN: "t" }, "here")).toBe("Bearer t");
    expect(() => expandVariables("${NOPE}", {}, 'MCP server "d" (headers.A)')).toThrow(
      'MCP server "d" (headers.A) uses ${NOPE}, which is not set',
    );
  });

  it("an MCP tool asks in every approval mode but deny, unless a rule names it", () => {
    const ws = tempWorkspace();
    const decide = (mode: "ask" | "auto-edit" | "auto" | "deny", rules = [] as Parameters<typeof evaluatePolicy>[1]["rules"]) =>
      evaluatePolicy({ name: "docs__search", args: { q: "x" } }, { rules, mode, workspace: ws.dir, sandbox: "bubblewrap" }).decision;
    expect([decide("ask"), decide("auto-edit"), decide("auto"), decide("deny")]).toEqual(["ask", "ask", "ask", "deny"]);
    const allowDocs = [{ tool: "docs__*", decision: "allow" as const, priority: 0, source: "user" as const }];
    expect(decide("auto", allowDocs)).toBe("allow");
    expect(evaluatePolicy({ name: "other__search", args: {} }, { rules: allowDocs, mode: "auto", workspace: ws.dir }).decision).toBe("ask");
  });
});
