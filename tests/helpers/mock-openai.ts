import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local model API server for tests (127.0.0.1, random port), speaking one provider's wire
 * protocol: OpenAI-compatible chat completions (`startMockOpenAI`), Anthropic's Messages API or
 * Google's Generative Language API (`startMockModelServer("anthropic" | "gemini")`), with the
 * same queue of behaviours.
 *
 *   const srv = await startMockOpenAI();
 *   srv.enqueue({ text: "Hello" }, { status: 429, headers: { "retry-after": "1" } });
 *   // point the client at srv.url (http://127.0.0.1:PORT/v1)
 *   srv.requests; // every request received, in order
 *   await srv.close();
 *
 * Each POST /v1/chat/completions takes the next queued behaviour; with the queue empty it
 * answers 400 (not retried by clients) so a test that sends too many requests fails fast.
 */

export interface MockToolCall {
  name: string;
  /** Arguments as an object (sent as JSON) or as the raw argument string. */
  args: Record<string, unknown> | string;
  /** Defaults to `call_mock_<request>_<index>`. */
  id?: string;
}

export interface MockUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export interface MockBehaviour {
  /** Wait before answering (the request stays open; a client abort ends the wait). */
  delayMs?: number;
  /** Answer with this error status and a JSON error body instead of a completion. */
  status?: number;
  /** Extra response headers, e.g. `retry-after`. */
  headers?: Record<string, string>;
  /** The error body's `error` object for a status answer. */
  error?: { message?: string; type?: string; code?: string };
  /** Assistant text, streamed in several chunks. */
  text?: string;
  /** Tool calls, each streamed as a name chunk followed by several argument fragments. */
  toolCalls?: MockToolCall[];
  /**
   * Usage sent in a final chunk when the client asks for it (`stream_options.include_usage`).
   * Defaults to a deterministic estimate; `false` never sends usage, like some compatible servers.
   */
  usage?: MockUsage | false;
  /** Pause between streamed chunks. */
  chunkDelayMs?: number;
  /** Destroy the connection after the first text chunk, leaving the stream unfinished. */
  dropMidStream?: boolean;
}

export interface RecordedRequest {
  method: string;
  /** Path with query, e.g. `/v1/chat/completions`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body, or the raw text when it is not JSON. */
  body: any;
  /** When the request's body had arrived (`performance.now()` of the test's process). */
  receivedAt: number;
}

export interface MockOpenAIServer {
  /** Base URL, ready for `OPENAI_BASE_URL` (with `/v1`), `ANTHROPIC_BASE_URL` or `GOOGLE_BASE_URL`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Behaviours for the next chat-completion requests, in order. */
  enqueue(...behaviours: MockBehaviour[]): void;
  /** Behaviours not yet used. */
  readonly pending: number;
  close(): Promise<void>;
}

export type MockProtocol = "openai" | "anthropic" | "gemini";

/**
 * Whether a request is the protocol's model call; the base URL clients are given; and what its
 * API refuses (400) in the shape of a turn of parallel tool calls and their results, as the real
 * one does: a client that sends them otherwise fails there as it would in production.
 */
const PROTOCOLS: Record<
  MockProtocol,
  { route: (method: string, path: string) => boolean; base: string; refuses: (body: any) => string | undefined }
> = {
  openai: { route: (method, path) => method === "POST" && path === "/v1/chat/completions", base: "/v1", refuses: openaiToolTurns },
  anthropic: { route: (method, path) => method === "POST" && path === "/v1/messages", base: "", refuses: anthropicToolTurns },
  gemini: {
    route: (method, path) => method === "POST" && /^\/v1beta\/models\/[^/:]+:(streamGenerateContent|generateContent)(\?|$)/.test(path),
    base: "",
    refuses: geminiToolTurns,
  },
};

/** OpenAI: an assistant message's tool calls are each answered by a `tool` message with its id, right after it. */
function openaiToolTurns(body: any): string | undefined {
  const messages: any[] = body?.messages ?? [];
  for (const [i, message] of messages.entries()) {
    const ids: string[] = (message?.tool_calls ?? []).map((call: any) => call.id);
    if (message?.role !== "assistant" || ids.length === 0) continue;
    const answered = messages.slice(i + 1, i + 1 + ids.length).map((next) => (next?.role === "tool" ? next.tool_call_id : undefined));
    if (ids.some((id) => !answered.includes(id)))
      return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'.";
  }
  return undefined;
}

/** Anthropic: the results of an assistant turn's tool_use blocks all come in the next (user) message. */
function anthropicToolTurns(body: any): string | undefined {
  const messages: any[] = body?.messages ?? [];
  const blocks = (message: any): any[] => (Array.isArray(message?.content) ? message.content : []);
  for (const [i, message] of messages.entries()) {
    const ids = blocks(message)
      .filter((block) => block?.type === "tool_use")
      .map((block) => block.id);
    if (message?.role !== "assistant" || ids.length === 0) continue;
    const next = messages[i + 1];
    const answered = blocks(next)
      .filter((block) => block?.type === "tool_result")
      .map((block) => block.tool_use_id);
    const missing = ids.find((id: string) => !answered.includes(id));
    if (next?.role !== "user" || missing !== undefined)
      return `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing ?? ids[0]}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
  }
  return undefined;
}

/** Gemini: a model turn's function calls are answered by one content with as many functionResponse parts. */
function geminiToolTurns(body: any): string | undefined {
  const contents: any[] = body?.contents ?? [];
  const count = (content: any, kind: string) => (content?.parts ?? []).filter((part: any) => part?.[kind] !== undefined).length;
  for (const [i, content] of contents.entries()) {
    const calls = count(content, "functionCall");
    if (calls === 0) continue;
    if (count(contents[i + 1], "functionResponse") !== calls)
      return "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.";
  }
  return undefined;
}

export function startMockOpenAI(): Promise<MockOpenAIServer> {
  return startMockModelServer("openai");
}

export async function startMockModelServer(protocol: MockProtocol): Promise<MockOpenAIServer> {
  const queue: MockBehaviour[] = [];
  const requests: RecordedRequest[] = [];

  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    const request: RecordedRequest = {
      method: req.method ?? "",
      path: req.url ?? "",
      headers: req.headers,
      body: parseJson(raw),
      receivedAt: performance.now(),
    };
    requests.push(request);
    const requestNumber = requests.length;

    if (!PROTOCOLS[protocol].route(request.method, request.path)) {
      return sendJson(res, 404, { error: { message: `mock-${protocol}: no route for ${req.method} ${request.path}` } });
    }
    const refused = PROTOCOLS[protocol].refuses(request.body);
    if (refused !== undefined) {
      const error = { message: refused, type: "invalid_request_error", code: "INVALID_ARGUMENT" };
      return sendJson(res, 400, errorBody(protocol, 400, error));
    }
    const behaviour = queue.shift();
    if (!behaviour) {
      const message = `mock-openai: no behaviour queued for request #${requestNumber}`;
      return sendJson(res, 400, { error: { message, type: "invalid_request_error" } });
    }

    const closed = new Promise<void>((resolve) => res.once("close", resolve));
    if (behaviour.delayMs && (await waitOrClose(behaviour.delayMs, closed)) === "closed") return;

    if (behaviour.status !== undefined && behaviour.status >= 400) {
      const error = { message: `mock error ${behaviour.status}`, type: "mock_error", ...behaviour.error };
      return sendJson(res, behaviour.status, errorBody(protocol, behaviour.status, error), behaviour.headers);
    }
    const completion = buildCompletion(behaviour, request.body, requestNumber);
    if (protocol === "anthropic") await streamEvents(res, anthropicEvents(completion), behaviour, closed, "");
    else if (protocol === "gemini") await streamEvents(res, geminiChunks(completion), behaviour, closed, "");
    else if (request.body?.stream) await streamCompletion(res, completion, behaviour, request.body, closed);
    else sendJson(res, 200, completionJson(completion), behaviour.headers);
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}${PROTOCOLS[protocol].base}`,
    requests,
    enqueue: (...behaviours) => void queue.push(...behaviours),
    get pending() {
      return queue.length;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

interface Completion {
  id: string;
  model: string;
  text: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  usage?: MockUsage;
}

function buildCompletion(behaviour: MockBehaviour, body: any, requestNumber: number): Completion {
  const text = behaviour.text ?? "";
  const toolCalls = (behaviour.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_mock_${requestNumber}_${index}`,
    name: call.name,
    arguments: typeof call.args === "string" ? call.args : JSON.stringify(call.args),
  }));
  const estimatedUsage = {
    prompt_tokens: Math.ceil(JSON.stringify(body?.messages ?? body?.contents ?? []).length / 4),
    completion_tokens: Math.ceil((text.length + toolCalls.reduce((n, c) => n + c.arguments.length, 0)) / 4),
  };
  return {
    id: `chatcmpl-mock-${requestNumber}`,
    model: typeof body?.model === "string" ? body.model : "mock-model",
    text,
    toolCalls,
    usage: behaviour.usage === false ? undefined : (behaviour.usage ?? estimatedUsage),
  };
}

function finishReason(completion: Completion): string {
  return completion.toolCalls.length > 0 ? "tool_calls" : "stop";
}

function usageJson(usage: MockUsage) {
  return { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
}

function completionJson(completion: Completion) {
  const toolCalls = completion.toolCalls.map((call) => ({
    id: call.id,
    type: "function",
    function: { name: call.name, arguments: call.arguments },
  }));
  return {
    id: completion.id,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: completion.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: completion.text, ...(toolCalls.length > 0 && { tool_calls: toolCalls }) },
        finish_reason: finishReason(completion),
      },
    ],
    ...(completion.usage && { usage: usageJson(completion.usage) }),
  };
}

/** The SSE chunks of a streamed completion, with text and tool-call arguments split across chunks. */
function completionChunks(completion: Completion, includeUsage: boolean): object[] {
  const chunk = (delta: object, finish: string | null = null) => ({
    id: completion.id,
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: completion.model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const chunks: object[] = [chunk({ role: "assistant", content: "" })];
  for (const piece of splitInto(completion.text, 4)) chunks.push(chunk({ content: piece }));
  completion.toolCalls.forEach((call, index) => {
    chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }));
    for (const piece of splitInto(call.arguments, 3)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, finishReason(completion)));
  if (includeUsage && completion.usage) {
    chunks.push({
      id: completion.id,
      object: "chat.completion.chunk",
      created: Math.floor(Date.now() / 1000),
      model: completion.model,
      choices: [],
      usage: usageJson(completion.usage),
    });
  }
  return chunks;
}

/** An error answer's body as each provider writes it. */
function errorBody(protocol: MockProtocol, status: number, error: { message: string; type: string; code?: string }): object {
  if (protocol === "anthropic") return { type: "error", error: { type: error.type, message: error.message } };
  if (protocol === "gemini") return { error: { code: status, message: error.message, status: error.code ?? error.type.toUpperCase() } };
  return { error };
}

/** Anthropic's Messages API stream: `event:` + `data:` pairs, text and tool inputs as deltas of content blocks. */
function anthropicEvents(completion: Completion): string[] {
  const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const usage = completion.usage ?? { prompt_tokens: 0, completion_tokens: 0 };
  const events = [
    event("message_start", {
      message: {
        id: completion.id,
        type: "message",
        role: "assistant",
        model: completion.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage.prompt_tokens, output_tokens: 1 },
      },
    }),
  ];
  let index = 0;
  if (completion.text) {
    events.push(event("content_block_start", { index, content_block: { type: "text", text: "" } }));
    for (const piece of splitInto(completion.text, 4))
      events.push(event("content_block_delta", { index, delta: { type: "text_delta", text: piece } }));
    events.push(event("content_block_stop", { index }));
    index += 1;
  }
  for (const call of completion.toolCalls) {
    events.push(event("content_block_start", { index, content_block: { type: "tool_use", id: call.id, name: call.name, input: {} } }));
    for (const piece of splitInto(call.arguments, 3))
      events.push(event("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: piece } }));
    events.push(event("content_block_stop", { index }));
    index += 1;
  }
  events.push(
    event("message_delta", {
      delta: { stop_reason: completion.toolCalls.length > 0 ? "tool_use" : "end_turn", stop_sequence: null },
      usage: { output_tokens: usage.completion_tokens },
    }),
  );
  events.push(event("message_stop", {}));
  return events;
}

/** Google's streamGenerateContent (`alt=sse`): `data:` chunks of candidates; a function call comes whole. */
function geminiChunks(completion: Completion): string[] {
  const chunk = (parts: object[], last: boolean) =>
    `data: ${JSON.stringify({
      candidates: [{ content: { role: "model", parts }, index: 0, ...(last && { finishReason: "STOP" }) }],
      ...(last &&
        completion.usage && {
          usageMetadata: {
            promptTokenCount: completion.usage.prompt_tokens,
            candidatesTokenCount: completion.usage.completion_tokens,
            totalTokenCount: completion.usage.prompt_tokens + completion.usage.completion_tokens,
          },
        }),
      modelVersion: completion.model,
    })}\r\n\r\n`;
  const pieces: object[][] = splitInto(completion.text, 4).map((text) => [{ text }]);
  if (completion.toolCalls.length > 0)
    pieces.push(completion.toolCalls.map((call) => ({ functionCall: { name: call.name, args: JSON.parse(call.arguments) as unknown } })));
  if (pieces.length === 0) pieces.push([{ text: "" }]);
  return pieces.map((parts, i) => chunk(parts, i === pieces.length - 1));
}

/** Writes pre-formatted SSE events, with the behaviour's pauses and mid-stream drop. */
async function streamEvents(
  res: ServerResponse,
  events: string[],
  behaviour: MockBehaviour,
  closed: Promise<void>,
  end: string,
): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...behaviour.headers });
  for (const [index, text] of events.entries()) {
    if (behaviour.chunkDelayMs && (await waitOrClose(behaviour.chunkDelayMs, closed)) === "closed") return;
    res.write(text);
    if (behaviour.dropMidStream && index === 1) {
      // Let the written chunks reach the client before the connection breaks.
      await new Promise((resolve) => setTimeout(resolve, 20));
      res.socket?.destroy();
      return;
    }
  }
  res.end(end);
}

function streamCompletion(
  res: ServerResponse,
  completion: Completion,
  behaviour: MockBehaviour,
  body: any,
  closed: Promise<void>,
): Promise<void> {
  const chunks = completionChunks(completion, body?.stream_options?.include_usage === true);
  return streamEvents(
    res,
    chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`),
    behaviour,
    closed,
    "data: [DONE]\n\n",
  );
}

/** Splits text into `parts` pieces (fewer for short text) that join back to it. */
function splitInto(text: string, parts: number): string[] {
  if (!text) return [];
  const size = Math.ceil(text.length / parts);
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

function waitOrClose(ms: number, closed: Promise<void>): Promise<"waited" | "closed"> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<"waited">((resolve) => {
    timer = setTimeout(() => resolve("waited"), ms);
  });
  return Promise.race([waited, closed.then(() => "closed" as const)]).finally(() => clearTimeout(timer));
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

function readBody(req: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return text;
  }
}
