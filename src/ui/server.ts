/**
 * `loopgraph ui`: the web inspector's server. It listens on 127.0.0.1 only and answers only
 * requests that carry its random token (the `token` query parameter, or the `x-loopgraph-token`
 * header), name it by its own host (127.0.0.1 or localhost with its port: a page of another site
 * cannot reach it by a name that resolves here), and come from no other origin. It sends no CORS
 * header, so no other site's page can read an answer; actions are POSTs with the token in a header,
 * which a form of another site cannot send.
 *
 * It is thin: the pages read what `inspect` and `status` read (data.ts), the eval pages what
 * `eval --list` and `eval --report` read (evals.ts), and each action runs the
 * CLI command that does it (actions.ts), so it does exactly what the CLI does and is recorded so.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { extname, join, normalize } from "node:path";
import type { PriceTable } from "../config/prices.js";
import { ConfigError } from "../errors.js";
import type { StoreOptions } from "../store/tables.js";
import { ActionError, exportScript, runAction, type Action } from "./actions.js";
import { BASE_SECURITY_HEADERS, errorStatus, HttpError, listenOn, readJsonObject } from "./http.js";
import {
  checkpointPage,
  filesPage,
  messagesPage,
  stepPage,
  stepsPage,
  threadPage,
  threadsPage,
  threadVersion,
  toolCallsPage,
} from "./data.js";
import { evalPage, evalsPage } from "./evals.js";

export interface UiServerOptions extends StoreOptions {
  /** 0 (the default): a free port. */
  port?: number;
  /** The built pages (index.html, assets/). */
  assetsDir: string;
  /** How to run the CLI for an action: node and the CLI's script. */
  cli: { node: string; script: string };
  /** How often a live page's thread is looked at for changes (milliseconds). */
  pollMs?: number;
  /** The config's model prices: an eval's report estimates its cost with them. */
  prices?: PriceTable;
}

export interface UiServer {
  url: string;
  token: string;
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
};

/** Headers of every answer: no framing, no sniffing, the token never sent on as a referrer, only this server's scripts. */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  ...BASE_SECURITY_HEADERS,
};

/** A query parameter that is a whole number (0 or more), undefined when absent; another value is refused (400). */
function indexParameter(url: URL, name: string): number | undefined {
  const value = url.searchParams.get(name);
  if (value === null) return undefined;
  if (!/^\d{1,9}$/.test(value)) throw new HttpError(400, `${name} must be a whole number`);
  return Number(value);
}

export async function startUiServer(options: UiServerOptions): Promise<UiServer> {
  const index = join(options.assetsDir, "index.html");
  if (!existsSync(index)) throw new ConfigError(`the web inspector's pages are not built (${index} is missing): run npm run build`);
  const token = randomBytes(24).toString("hex");
  const store: StoreOptions = { ...(options.db !== undefined && { db: options.db }), env: options.env };
  const pollMs = options.pollMs ?? 500;
  let port = 0;
  const live = new Set<ServerResponse>();

  const authorised = (request: IncomingMessage, url: URL): boolean => {
    const given = url.searchParams.get("token") ?? request.headers["x-loopgraph-token"];
    if (typeof given !== "string" || given.length !== token.length) return false;
    return timingSafeEqual(Buffer.from(given), Buffer.from(token));
  };
  const ownHost = (host: string | undefined): boolean => host === `127.0.0.1:${port}` || host === `localhost:${port}`;
  const ownOrigin = (origin: string | undefined): boolean =>
    origin === undefined || origin === `http://127.0.0.1:${port}` || origin === `http://localhost:${port}`;

  const send = (response: ServerResponse, status: number, body: string | Buffer, type: string): void => {
    response.writeHead(status, { ...SECURITY_HEADERS, "content-type": type });
    response.end(body);
  };
  const sendJson = (response: ServerResponse, status: number, value: unknown): void =>
    send(response, status, JSON.stringify(value), "application/json; charset=utf-8");

  const serveFile = (response: ServerResponse, path: string): void => {
    // Only the built files: a path is looked up under the assets folder, never above it.
    const relative = normalize(path).replace(/^([/\\])+/, "");
    if (relative.startsWith("..") || relative.includes("\0")) throw new HttpError(404, "not found");
    const file = join(options.assetsDir, relative);
    // A folder (`/assets/`) is not a file either: 404, never a read that fails.
    if (statSync(file, { throwIfNoEntry: false })?.isFile() !== true) throw new HttpError(404, "not found");
    let body: string | Buffer = readFileSync(file);
    // The page's own requests carry the token it was opened with.
    if (relative === "index.html") body = body.toString("utf8").replaceAll("__LOOPGRAPH_TOKEN__", token);
    send(response, 200, body, TYPES[extname(file)] ?? "application/octet-stream");
  };

  /** Server-sent events: `update` whenever the thread (or its loop) changed, looked at every pollMs. */
  const events = (request: IncomingMessage, response: ServerResponse, threadId: string): void => {
    response.writeHead(200, { ...SECURITY_HEADERS, "content-type": "text/event-stream; charset=utf-8", connection: "keep-alive" });
    response.write(": live\n\n");
    live.add(response);
    let last: string | undefined;
    let busy = false;
    const look = async () => {
      if (busy) return;
      busy = true;
      try {
        const version = await threadVersion(threadId, store);
        if (version !== last) {
          if (last !== undefined) response.write(`event: update\ndata: ${JSON.stringify({ threadId })}\n\n`);
          last = version;
        }
      } catch {
        // The store is busy or the thread gone: looked at again next time.
      } finally {
        busy = false;
      }
    };
    void look();
    const timer = setInterval(() => void look(), pollMs);
    const end = () => {
      clearInterval(timer);
      live.delete(response);
    };
    request.on("close", end);
    response.on("close", end);
  };

  const route = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? "/", `http://127.0.0.1:${port}`);
    if (!ownHost(request.headers.host)) throw new HttpError(403, "this server answers only to 127.0.0.1 and localhost");
    if (!ownOrigin(request.headers.origin)) throw new HttpError(403, "requests from other origins are refused");
    // The browser asks for an icon on its own, without the token: answered with none, before the token is asked for.
    if (request.method === "GET" && url.pathname === "/favicon.ico") return void send(response, 204, "", "text/plain");
    if (!authorised(request, url))
      throw new HttpError(401, "a request without this server's token is refused: open the URL `loopgraph ui` printed");
    const path = url.pathname;
    const method = request.method ?? "GET";
    if (method === "GET" && (path === "/" || path === "/index.html")) return serveFile(response, "index.html");
    if (method === "GET" && path.startsWith("/assets/")) return serveFile(response, path);
    if (method === "GET" && path === "/api/threads") return sendJson(response, 200, await threadsPage(store));
    if (method === "GET" && path === "/api/evals") return sendJson(response, 200, await evalsPage(store));
    const evalPath = /^\/api\/evals\/([^/]+)$/.exec(path);
    if (method === "GET" && evalPath)
      return sendJson(response, 200, await evalPage(decodeURIComponent(evalPath[1]!), store, options.prices));
    const thread = /^\/api\/threads\/([^/]+)(\/.*)?$/.exec(path);
    if (!thread) throw new HttpError(404, "not found");
    const threadId = decodeURIComponent(thread[1]!);
    const rest = thread[2] ?? "";
    if (method === "GET" && rest === "") return sendJson(response, 200, await threadPage(threadId, store, indexParameter(url, "from")));
    if (method === "GET" && rest === "/events") return events(request, response, threadId);
    if (method === "GET" && rest === "/steps") {
      const before = indexParameter(url, "before");
      if (before === undefined) throw new HttpError(400, "say which steps: before=<index>");
      return sendJson(response, 200, await stepsPage(threadId, store, before, indexParameter(url, "limit")));
    }
    const step = /^\/steps\/([^/]+)$/.exec(rest);
    if (method === "GET" && step) return sendJson(response, 200, await stepPage(threadId, decodeURIComponent(step[1]!), store));
    const onDemand = { "/messages": messagesPage, "/tool-calls": toolCallsPage, "/files": filesPage }[rest];
    if (method === "GET" && onDemand) return sendJson(response, 200, await onDemand(threadId, store));
    if (method === "GET" && rest === "/export-script") {
      // As `inspect --export-script`, into a file of its own, sent as a download.
      const dir = mkdtempSync(join(tmpdir(), "loopgraph-ui-"));
      try {
        const file = join(dir, "script.yaml");
        const result = await exportScript(threadId, file, { ...options.cli, db: options.db });
        if (result.exitCode !== 0) throw new HttpError(400, result.output.trim().split("\n").at(-1) ?? "the script could not be exported");
        response.writeHead(200, {
          ...SECURITY_HEADERS,
          "content-type": "text/yaml; charset=utf-8",
          "content-disposition": `attachment; filename="${threadId}.script.yaml"`,
        });
        return void response.end(readFileSync(file));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    const checkpoint = /^\/checkpoints\/([^/]+)$/.exec(rest);
    if (method === "GET" && checkpoint)
      return sendJson(response, 200, await checkpointPage(threadId, decodeURIComponent(checkpoint[1]!), store));
    const action = /^\/actions\/([a-z_]+)$/.exec(rest);
    if (method === "POST" && action) {
      const body = await readJsonObject(request);
      return sendJson(
        response,
        200,
        await runAction({ kind: action[1] as Action["kind"], ...body } as Action, threadId, { ...options.cli, db: options.db }),
      );
    }
    throw new HttpError(404, "not found");
  };

  const server = createServer((request, response) => {
    route(request, response).catch((error: unknown) => {
      if (response.headersSent) return void response.end();
      const status = errorStatus(error, [ActionError]);
      sendJson(response, status, { error: error instanceof Error ? error.message.split("\n", 1)[0] : String(error) });
    });
  });
  port = await listenOn(server, options.port, "127.0.0.1");
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of live) response.end();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
