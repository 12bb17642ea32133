/**
 * `loopgraph serve`: the LangGraph server API over loopgraph's store, so that LangGraph's SDK
 * clients (`@langchain/langgraph-sdk`, its `useStream` hook, LangGraph Studio) drive loopgraph
 * runs. docs/serve.md lists each endpoint, what it maps to, and what answers 501.
 *
 * Reached as the web inspector is: it listens on 127.0.0.1 unless told otherwise, answers only
 * requests that carry its token (`x-api-key`, as the SDK sends an API key, or `Authorization:
 * Bearer`), unless `--no-auth` was asked for on a loopback address, and, on a loopback address,
 * only requests that name it by its own host (a page of another site cannot reach it through a
 * name that resolves here). Browsers' cross-origin requests are refused except from the origins
 * the user listed (`--cors`).
 */
import { randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { readFileSync, realpathSync, statSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { extname, join, normalize, sep } from "node:path";
import { ConfigError } from "../errors.js";
import { requireQueueStore } from "../engine/runner.js";
import { deleteThreads } from "../engine/thread-admin.js";
import { forkRun } from "../replay/fork.js";
import { STATE_CHANNELS } from "../state/graph-state.js";
import type { ThreadRecord } from "../runs/thread-registry.js";
import { requireThread, withStore } from "../store/store.js";
import { BASE_SECURITY_HEADERS, errorStatus, HttpError, listenOn, readJsonObject } from "../ui/http.js";
import {
  assistantGraph,
  assistantOf,
  assistantSchemas,
  findListing,
  runnableGraphFile,
  searchAssistants,
  wholeNumber,
} from "./assistants.js";
import { executeRun, planRun, ServedRun, streamModes, type RunPlace } from "./runs.js";
import { reservedThreadJson, threadJson, threadMetadata, threadStates, threadStatus, type ThreadExtras } from "./threads.js";

export interface ServeOptions extends RunPlace {
  port?: number;
  /** The address to listen on (default 127.0.0.1). */
  host?: string;
  /** `--no-auth`: no token asked (refused unless the address is a loopback one). */
  noAuth?: boolean;
  /** `--cors ORIGIN`: browser origins allowed to call the API besides the server's own. */
  corsOrigins?: readonly string[];
  /** `--static DIR`: files served under /app/ (a web app built on the SDK). */
  staticDir?: string;
}

export interface ServeServer {
  url: string;
  token?: string;
  close(): Promise<void>;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);

/** How many ended runs the server remembers (`runs.list`, `join`): the oldest are forgotten first. */
const KEPT_ENDED_RUNS = 200;

/** The SDK's and Studio's requests that a browser sends cross-origin, with these headers. */
const CORS_HEADERS = {
  "access-control-allow-methods": "GET, POST, PATCH, DELETE, OPTIONS",
  "access-control-allow-headers": "content-type, x-api-key, authorization, last-event-id",
  "access-control-expose-headers": "content-location, location, x-pagination-next, x-pagination-total",
  "access-control-max-age": "600",
  // A page of a public site calling 127.0.0.1 (Studio) is let through by Chrome only with this (Private Network Access).
  "access-control-allow-private-network": "true",
};

const STATIC_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".map": "application/json",
};

/** Endpoints of the LangGraph API loopgraph does not serve: each refused with 501 and its name (docs/serve.md says why). */
const NOT_SERVED: [method: string, path: RegExp, name: string][] = [
  ["POST", /^\/assistants$/, "assistants.create (an assistant is a graph file: add one under graphs/)"],
  ["PATCH", /^\/assistants\/[^/]+$/, "assistants.update (an assistant is a graph file: edit it)"],
  ["DELETE", /^\/assistants\/[^/]+$/, "assistants.delete (an assistant is a graph file)"],
  ["POST", /^\/assistants\/[^/]+\/(versions|latest)$/, "assistant versions"],
  ["POST", /^\/threads\/[^/]+\/copy$/, "threads.copy (fork with updateState instead)"],
  ["POST", /^\/threads\/prune$/, "threads.prune (use loopgraph threads prune)"],
  ["PATCH", /^\/threads\/[^/]+\/state$/, "threads.patchState"],
  ["GET", /^\/threads\/[^/]+\/stream$/, "threads.joinStream (join a run's stream instead)"],
  ["POST", /^\/runs\/batch$/, "runs.createBatch"],
  ["POST", /^\/runs\/cancel$/, "runs.cancelMany (cancel each run)"],
  ["ANY", /^(\/threads\/[^/]+)?\/runs\/crons/, "crons"],
  ["ANY", /^\/store\//, "the key-value store"],
];

export async function startServeServer(options: ServeOptions): Promise<ServeServer> {
  const host = options.host ?? "127.0.0.1";
  const loopback = LOOPBACK.has(host);
  if (options.noAuth && !loopback)
    throw new ConfigError(`--no-auth is for 127.0.0.1 only: a server on ${host} asks every request for its token`);
  // Made now if new (as a run would make it): every read of the API finds a store.
  await withStore(options.store, "create", async () => undefined);
  const token = options.noAuth ? undefined : randomBytes(24).toString("hex");
  const cors = new Set(options.corsOrigins ?? []);
  if (options.queue) requireQueueStore({ ...options.store, cwd: options.cwd });
  const place: RunPlace = {
    store: options.store,
    cwd: options.cwd,
    settings: options.settings,
    ...(options.model !== undefined && { model: options.model }),
    ...(options.queue && { queue: true }),
  };
  /** Threads created through the API that have not run yet, and the metadata clients gave threads: kept while the server lives. */
  const extras = new Map<string, ThreadExtras>();
  const runs = new Map<string, ServedRun>();
  const live = new Set<ServerResponse>();
  let port = 0;

  const authorised = (request: IncomingMessage, url: URL): boolean => {
    if (!token) return true;
    const bearer = /^Bearer (.+)$/.exec(String(request.headers.authorization ?? ""))?.[1];
    const given = request.headers["x-api-key"] ?? bearer ?? (url.pathname.startsWith("/app/") ? url.searchParams.get("token") : undefined);
    if (typeof given !== "string" || given.length !== token.length) return false;
    return timingSafeEqual(Buffer.from(given), Buffer.from(token));
  };
  const ownOrigins = () => [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`];
  const ownHost = (name: string | undefined) => !loopback || ownOrigins().some((origin) => origin === `http://${name}`);
  const corsFor = (origin: string | undefined): Record<string, string> =>
    origin !== undefined && cors.has(origin) ? { "access-control-allow-origin": origin, vary: "origin", ...CORS_HEADERS } : {};

  const headersFor = (request: IncomingMessage, type: string, extra: Record<string, string> = {}) => ({
    ...BASE_SECURITY_HEADERS,
    ...corsFor(request.headers.origin),
    "content-type": type,
    ...extra,
  });
  const sendJson = (request: IncomingMessage, response: ServerResponse, status: number, value: unknown, extra?: Record<string, string>) => {
    response.writeHead(status, headersFor(request, "application/json; charset=utf-8", extra));
    response.end(value === undefined ? "" : JSON.stringify(value));
  };

  const threadExtras = (threadId: string): ThreadExtras | undefined => extras.get(threadId);
  const activeRun = (threadId: string) => [...runs.values()].find((run) => run.threadId === threadId && run.active);

  /** The thread as LangGraph shows it: from the store, or one created here that has not run yet; else 404. */
  const getThread = async (threadId: string): Promise<Record<string, unknown>> => {
    const found = await withStore(options.store, "read", async (store) => {
      const record = await store.threads.get(threadId);
      return record ? threadJson(record, store, threadExtras(threadId)) : undefined;
    });
    if (found) return found;
    const reserved = extras.get(threadId);
    if (reserved) return reservedThreadJson(threadId, reserved);
    throw new HttpError(404, `no thread "${threadId}"`);
  };

  const createThread = async (body: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const threadId = typeof body.thread_id === "string" && body.thread_id !== "" ? body.thread_id : randomUUID();
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(threadId))
      throw new HttpError(422, `invalid thread id "${threadId}": use letters, digits, ".", "_" or "-" (at most 128)`);
    const known = extras.has(threadId) || (await withStore(options.store, "read", (store) => store.threads.get(threadId))) !== undefined;
    if (known) {
      if (body.if_exists === "do_nothing") return getThread(threadId);
      throw new HttpError(409, `thread "${threadId}" already exists`);
    }
    if (Array.isArray(body.supersteps) && body.supersteps.length > 0)
      throw new HttpError(501, "threads.create with supersteps is not supported");
    const metadata = (body.metadata && typeof body.metadata === "object" ? body.metadata : {}) as Record<string, unknown>;
    extras.set(threadId, { metadata: withoutUndefined(metadata), createdAt: new Date().toISOString() });
    return getThread(threadId);
  };

  const searchThreads = async (body: Record<string, unknown>): Promise<Record<string, unknown>[]> => {
    const wanted = body.metadata && typeof body.metadata === "object" ? (body.metadata as Record<string, unknown>) : {};
    const ids = Array.isArray(body.ids) ? new Set(body.ids.map(String)) : undefined;
    const status = typeof body.status === "string" ? body.status : undefined;
    const offset = wholeNumber(body.offset, 0);
    const limit = wholeNumber(body.limit, 10);
    // Chosen by their records and metadata, then only the page's values read.
    return withStore(options.store, "read", async (store) => {
      const records = (await store.threads.list())
        .filter((record) => !record.threadId.includes(".replay-"))
        .filter((record) => (ids ? ids.has(record.threadId) : true) && (status ? threadStatus(record) === status : true))
        .filter((record) => matches(threadMetadata(record, threadExtras(record.threadId)), wanted))
        .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
      const stored = new Set(records.map((record) => record.threadId));
      const reserved = [...extras]
        .filter(([threadId, extra]) => !stored.has(threadId) && (ids ? ids.has(threadId) : true) && matches(extra.metadata, wanted))
        .filter(() => status === undefined || status === "idle")
        .map(([threadId, extra]) => reservedThreadJson(threadId, extra));
      const page = [...reserved, ...records].slice(offset, offset + limit);
      const shown: Record<string, unknown>[] = [];
      for (const one of page) shown.push(isRecord(one) ? await threadJson(one, store, threadExtras(one.threadId)) : one);
      return shown;
    });
  };

  /** `updateState`: a fork of the thread at the checkpoint (its newest by default) with the values set; nothing runs until a run continues it. */
  const updateState = async (threadId: string, body: Record<string, unknown>): Promise<Record<string, unknown>> => {
    if (activeRun(threadId)) throw new HttpError(409, `thread "${threadId}" is running: cancel its run first`);
    const values = body.values ?? {};
    if (values === null || typeof values !== "object" || Array.isArray(values))
      throw new HttpError(422, "values must be an object of channels");
    const set = Object.entries(values).map(([channel, value]) => {
      // A channel is replaced whole by a fork's edit: messages sent as JSON would not be messages any more.
      if (channel === "messages")
        throw new HttpError(
          422,
          "messages cannot be replaced through updateState: fork with `loopgraph replay --from <checkpoint> --set messages.N.content=…`",
        );
      if (!STATE_CHANNELS.includes(channel))
        throw new HttpError(422, `unknown state channel "${channel}" (the state has ${STATE_CHANNELS.join(", ")})`);
      return `${channel}=${JSON.stringify(value)}`;
    });
    const from =
      (typeof body.checkpoint_id === "string" ? body.checkpoint_id : undefined) ??
      ((body.checkpoint as { checkpoint_id?: unknown } | undefined)?.checkpoint_id as string | undefined) ??
      (await withStore(options.store, "read", async (store) => {
        await requireThread(store, threadId);
        return store.checkpoints.latestCheckpointId(threadId);
      }).catch(notFound));
    if (!from) throw new HttpError(409, `thread "${threadId}" has no checkpoint to update yet`);
    await forkRun({ threadId, from, set, branchOnly: true, settings: options.settings, cwd: options.cwd, ...dbFlag(options) });
    const head = await withStore(options.store, "read", (store) => store.checkpoints.latestCheckpointId(threadId));
    return { checkpoint: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: head, checkpoint_map: null } };
  };

  /** Starts a run (its thread made here when none is given); answers once it is under way, or at once refused. */
  const startRun = async (threadId: string | undefined, body: Record<string, unknown>): Promise<ServedRun> => {
    const assistantId = body.assistant_id;
    if (typeof assistantId !== "string")
      throw new HttpError(422, "assistant_id is required: a graph's name (GET /assistants/search lists them)");
    const listing = await findListing(options.cwd, assistantId);
    const id = threadId ?? randomUUID();
    if (
      threadId !== undefined &&
      !extras.has(id) &&
      (await withStore(options.store, "read", (store) => store.threads.get(id))) === undefined
    )
      throw new HttpError(404, `no thread "${id}": create it first (POST /threads)`);
    if (activeRun(id)) throw new HttpError(409, `thread "${id}" is already running a run: wait for it, or cancel it`);
    const modes = streamModes(body);
    const plan = await planRun({ threadId: id, assistantId, body }, listing, place);
    const metadata = (body.metadata && typeof body.metadata === "object" ? body.metadata : {}) as Record<string, unknown>;
    const run = new ServedRun(id, assistantId, withoutUndefined(metadata), modes);
    runs.set(run.runId, run);
    forgetOldRuns();
    if (!extras.has(id)) extras.set(id, { metadata: { graph_id: assistantId }, createdAt: run.createdAt });
    run.queued = plan.queued;
    void executeRun(run, plan, place);
    return run;
  };

  /** Only the newest KEPT_ENDED_RUNS ended runs are kept (with what they streamed): a long-lived server's memory stays bounded. */
  const forgetOldRuns = () => {
    const ended = [...runs.values()].filter((run) => !run.active);
    for (const old of ended.slice(0, Math.max(0, ended.length - KEPT_ENDED_RUNS))) runs.delete(old.runId);
  };

  const findRun = (threadId: string, runId: string): ServedRun => {
    const run = runs.get(runId);
    if (!run || run.threadId !== threadId)
      throw new HttpError(404, `no run "${runId}" of thread "${threadId}" (runs are kept while this server runs)`);
    return run;
  };

  /** Server-sent events of the run, from its start; `cancelOnDisconnect`: a reader that leaves stops the run. */
  const streamRun = async (request: IncomingMessage, response: ServerResponse, run: ServedRun, cancelOnDisconnect: boolean) => {
    const location = `/threads/${run.threadId}/runs/${run.runId}`;
    response.writeHead(
      200,
      headersFor(request, "text/event-stream; charset=utf-8", { "content-location": location, connection: "keep-alive" }),
    );
    live.add(response);
    const left = new AbortController();
    const leave = () => {
      left.abort();
      if (cancelOnDisconnect && run.active) run.cancel();
    };
    response.on("close", leave);
    try {
      for await (const part of run.stream(left.signal)) response.write(`event: ${part.event}\ndata: ${JSON.stringify(part.data)}\n\n`);
    } finally {
      response.off("close", leave);
      live.delete(response);
      response.end();
    }
  };

  const serveStatic = (request: IncomingMessage, response: ServerResponse, path: string) => {
    if (!options.staticDir) throw new HttpError(404, "not found: no app is served (serve --static DIR)");
    // Only the app's files: a path is looked up under its folder, never above it.
    const relative = normalize(decodeURIComponent(path.slice("/app/".length)) || "index.html").replace(/^([/\\])+/, "");
    if (relative.startsWith("..") || relative.includes("\0")) throw new HttpError(404, "not found");
    const file = join(options.staticDir, relative);
    if (statSync(file, { throwIfNoEntry: false })?.isFile() !== true) throw new HttpError(404, "not found");
    // A link in the folder to a file outside it (planted where an agent writes) is not served.
    const root = realpathSync(options.staticDir);
    if (!realpathSync(file).startsWith(`${root}${sep}`)) throw new HttpError(404, "not found");
    let body: string | Buffer = readFileSync(file);
    const type = STATIC_TYPES[extname(file)] ?? "application/octet-stream";
    if (extname(file) === ".html") body = body.toString("utf8").replaceAll("__LOOPGRAPH_SERVE_TOKEN__", token ?? "");
    response.writeHead(200, {
      ...headersFor(request, type),
      "content-security-policy":
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    });
    response.end(body);
  };

  const route = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? "/", `http://127.0.0.1:${port}`);
    const method = request.method ?? "GET";
    const path = url.pathname.replace(/\/+$/, "") || "/";
    if (!ownHost(request.headers.host)) throw new HttpError(403, "this server answers only to its own address (127.0.0.1 or localhost)");
    const origin = request.headers.origin;
    if (origin !== undefined && !ownOrigins().includes(origin) && !cors.has(origin))
      throw new HttpError(403, `requests from ${origin} are refused: allow the origin with serve --cors ${origin}`);
    if (method === "OPTIONS") return void sendJson(request, response, 204, undefined);
    if (method === "GET" && (path === "/ok" || path === "/favicon.ico")) return sendJson(request, response, 200, { ok: true });
    if (!authorised(request, url))
      throw new HttpError(401, "a request without this server's token is refused: send it as x-api-key (the SDK's apiKey)");
    if (method === "GET" && (path === "/app" || path.startsWith("/app/")))
      return serveStatic(request, response, path === "/app" ? "/app/" : url.pathname);
    const send = (value: unknown, status = 200, extra?: Record<string, string>) => sendJson(request, response, status, value, extra);
    const body = (method === "POST" || method === "PATCH") && hasBody(request) ? await readJsonObject(request) : {};
    const query = Object.fromEntries(url.searchParams);

    const notServed = NOT_SERVED.find(([m, pattern]) => (m === "ANY" || m === method) && pattern.test(path));
    if (notServed) throw new HttpError(501, `${notServed[2]} is not supported by loopgraph serve (see docs/serve.md)`);

    if (method === "GET" && path === "/info")
      return send({ version: "loopgraph", flags: { assistants: true, crons: false, langsmith: false } });
    if (method === "POST" && path === "/assistants/search") return send(await searchAssistants(options.cwd, body));
    if (method === "POST" && path === "/assistants/count")
      return send((await searchAssistants(options.cwd, { ...body, limit: 1e6 })).length);
    const assistant = /^\/assistants\/([^/]+)(\/graph|\/schemas|\/subgraphs.*)?$/.exec(path);
    if (method === "GET" && assistant) {
      const listing = await findListing(options.cwd, decodeURIComponent(assistant[1]!));
      const file = () => runnableGraphFile(listing, options.cwd, options.settings.env);
      if (assistant[2] === "/graph") return send(await assistantGraph(file()));
      if (assistant[2] === "/schemas") return send(await assistantSchemas(listing, file()));
      if (assistant[2]?.startsWith("/subgraphs")) return send({});
      return send(assistantOf(listing));
    }

    if (method === "POST" && path === "/threads") return send(await createThread(body));
    if (method === "POST" && path === "/threads/search") return send(await searchThreads(body));
    if (method === "POST" && path === "/threads/count") return send((await searchThreads({ ...body, limit: 1e6, offset: 0 })).length);
    if (path === "/runs/stream" || path === "/runs/wait" || path === "/runs") {
      if (method !== "POST") throw new HttpError(405, "POST it");
      return runEndpoint(request, response, undefined, path.slice("/runs".length), body);
    }
    const thread = /^\/threads\/([^/]+)(\/.*)?$/.exec(path);
    if (!thread) throw new HttpError(404, `not found: ${method} ${path}`);
    const threadId = decodeURIComponent(thread[1]!);
    const rest = thread[2] ?? "";
    if (rest === "") {
      if (method === "GET") return send(await getThread(threadId));
      if (method === "PATCH") return send(await patchThread(threadId, body));
      if (method === "DELETE") return send(await deleteThread(threadId), 204);
    }
    if (method === "GET" && rest === "/state") return send(await stateOf(threadId));
    const stateAt = /^\/state\/([^/]+)$/.exec(rest);
    if (method === "GET" && stateAt) return send(await stateOf(threadId, decodeURIComponent(stateAt[1]!)));
    if (method === "POST" && rest === "/state/checkpoint")
      return send(await stateOf(threadId, String((body.checkpoint as { checkpoint_id?: unknown } | undefined)?.checkpoint_id ?? "")));
    if (method === "POST" && rest === "/state") return send(await updateState(threadId, body));
    if ((method === "POST" || method === "GET") && rest === "/history") {
      const ask = method === "POST" ? body : query;
      const before = (ask.before as { configurable?: { checkpoint_id?: string }; checkpoint_id?: string } | undefined) ?? undefined;
      const beforeId = typeof before === "string" ? before : (before?.configurable?.checkpoint_id ?? before?.checkpoint_id);
      return send(await historyOf(threadId, wholeNumber(ask.limit, 10), beforeId));
    }
    if (rest === "/runs" && method === "GET") {
      const offset = wholeNumber(query.offset, 0);
      const listed = [...runs.values()].filter((run) => run.threadId === threadId).reverse();
      return send(listed.slice(offset, offset + wholeNumber(query.limit, 10)).map((run) => run.json()));
    }
    if (method === "POST" && (rest === "/runs" || rest === "/runs/stream" || rest === "/runs/wait"))
      return runEndpoint(request, response, threadId, rest.slice("/runs".length), body);
    const runPath = /^\/runs\/([^/]+)(\/cancel|\/join|\/stream)?$/.exec(rest);
    if (runPath) {
      const run = findRun(threadId, decodeURIComponent(runPath[1]!));
      const action = runPath[2] ?? "";
      if (method === "GET" && action === "") return send(run.json());
      if (method === "DELETE" && action === "") {
        if (run.active) throw new HttpError(409, `run "${run.runId}" is running: cancel it first`);
        runs.delete(run.runId);
        return send(undefined, 204);
      }
      if (method === "POST" && action === "/cancel") {
        if (query.action === "rollback")
          throw new HttpError(501, "cancel with action rollback is not supported: a cancelled run keeps its checkpoints");
        if (run.active) run.cancel();
        if (query.wait === "1" || query.wait === "true") await run.done;
        return send(undefined, 202);
      }
      if (method === "GET" && action === "/join") {
        await run.done;
        return send(run.result);
      }
      if (method === "GET" && action === "/stream")
        return streamRun(request, response, run, query.cancel_on_disconnect === "1" || query.cancel_on_disconnect === "true");
    }
    throw new HttpError(404, `not found: ${method} ${path}`);
  };

  /** POST …/runs (started, answered at once), …/runs/stream (its events), …/runs/wait (its last values once it ends). */
  const runEndpoint = async (
    request: IncomingMessage,
    response: ServerResponse,
    threadId: string | undefined,
    kind: string,
    body: Record<string, unknown>,
  ) => {
    const run = await startRun(threadId, body);
    const location = `/threads/${run.threadId}/runs/${run.runId}`;
    if (kind === "/stream") return streamRun(request, response, run, body.on_disconnect === "cancel");
    if (kind === "/wait") {
      await run.done;
      return sendJson(request, response, 200, run.result, { "content-location": location });
    }
    return sendJson(request, response, 200, run.json(), { "content-location": location });
  };

  const patchThread = async (threadId: string, body: Record<string, unknown>) => {
    await getThread(threadId);
    const metadata = (body.metadata && typeof body.metadata === "object" ? body.metadata : {}) as Record<string, unknown>;
    const known = extras.get(threadId);
    extras.set(threadId, {
      metadata: { ...known?.metadata, ...withoutUndefined(metadata) },
      createdAt: known?.createdAt ?? new Date().toISOString(),
    });
    return getThread(threadId);
  };

  const deleteThread = async (threadId: string) => {
    if (activeRun(threadId)) throw new HttpError(409, `thread "${threadId}" is running: cancel its run first`);
    const exists = await withStore(options.store, "read", (store) => store.threads.get(threadId));
    if (exists) await deleteThreads([threadId], { ...dbFlag(options), env: options.store.env, cwd: options.cwd });
    else if (!extras.has(threadId)) throw new HttpError(404, `no thread "${threadId}"`);
    extras.delete(threadId);
    for (const [runId, run] of runs) if (run.threadId === threadId) runs.delete(runId);
  };

  const historyOf = async (threadId: string, limit: number, before?: string) => {
    if (extras.has(threadId) && !(await withStore(options.store, "read", (store) => store.threads.get(threadId)))) return [];
    return threadStates(threadId, options.store, { limit, ...(before !== undefined && { before }) });
  };

  /** The thread's state (at its newest checkpoint, or at `checkpointId`); a thread that has not run has empty values. */
  const stateOf = async (threadId: string, checkpointId?: string) => {
    const states = checkpointId
      ? await threadStates(threadId, options.store, { limit: 1, at: checkpointId })
      : await historyOf(threadId, 1);
    const state = states[0];
    if (state) return state;
    await getThread(threadId);
    return { values: {}, next: [], tasks: [], metadata: {}, created_at: null, checkpoint: null, parent_checkpoint: null, interrupts: [] };
  };

  const server = createServer((request, response) => {
    route(request, response).catch((error: unknown) => {
      if (response.headersSent) return void response.end();
      const status = errorStatus(error);
      const message = error instanceof Error ? error.message.split("\n", 1)[0] : String(error);
      sendJson(request, response, status, { error: status === 501 ? "NotImplemented" : "Error", message, detail: message });
    });
  });
  port = await listenOn(server, options.port, host);
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    ...(token !== undefined && { token }),
    close: async () => {
      // Each run it runs stops as Ctrl-C stops a run: at a checkpoint, resumable. A worker's run goes on there.
      const running = [...runs.values()].filter((run) => run.active);
      for (const run of running) run.queued ? run.leave() : run.cancel();
      await Promise.all(running.map((run) => run.done));
      await new Promise<void>((resolve) => {
        for (const response of live) response.end();
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

const notFound = (error: unknown): never => {
  if (error instanceof ConfigError && error.message.startsWith("no thread ")) throw new HttpError(404, error.message);
  throw error;
};

const dbFlag = (options: ServeOptions): { db?: string } => (options.store.db !== undefined ? { db: options.store.db } : {});

/** A POST without a body (the SDK's `runs.cancel`) is read as `{}`; one with a body must be JSON. */
const hasBody = (request: IncomingMessage): boolean =>
  request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? 0) > 0;

const isRecord = (thread: ThreadRecord | Record<string, unknown>): thread is ThreadRecord => typeof thread.threadId === "string";

/** Whether every key of `wanted` is in `metadata` with the same (JSON) value. */
function matches(metadata: Record<string, unknown>, wanted: Record<string, unknown>): boolean {
  return Object.entries(wanted).every(([key, value]) => JSON.stringify(metadata[key]) === JSON.stringify(value));
}

function withoutUndefined(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));
}
