import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ConfigError, ModelError } from "../src/errors.js";
import {
  countInputTokens,
  countOutputTokens,
  createModel,
  type CreateModelOptions,
  type RetryNotice,
  type ToolSpec,
} from "../src/models/index.js";
import { backoffDelayMs, parseRetryAfterMs } from "../src/models/retry.js";
import { startMockOpenAI, type MockOpenAIServer } from "./helpers/mock-openai.js";

const messages = [new SystemMessage("You are terse."), new HumanMessage("Say hello.")];

const writeFileTool: ToolSpec = {
  name: "write_file",
  description: "Write a file",
  parameters: {
    type: "object",
    properties: { path: { type: "string" }, contents: { type: "string" } },
    required: ["path", "contents"],
  },
};

let srv: MockOpenAIServer;

beforeEach(async () => {
  srv = await startMockOpenAI();
});

afterEach(async () => {
  vi.restoreAllMocks();
  await srv.close();
});

function openaiModel(options: Partial<CreateModelOptions> = {}) {
  return createModel("openai:gpt-4o-mini", {
    cwd: process.cwd(),
    env: { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: srv.url },
    retry: { baseDelayMs: 10 },
    ...options,
  });
}

/** Rejects with the thrown error, for asserting on its fields. */
async function failure(promise: Promise<unknown>): Promise<ModelError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}

describe("openai model: streaming", () => {
  it("streams text deltas through onToken and returns the full message with the server's usage", async () => {
    srv.enqueue({ text: "Hello there, how can I help?", usage: { prompt_tokens: 123, completion_tokens: 45 } });
    const tokens: string[] = [];

    const result = await openaiModel().call(messages, { node: "mediator", onToken: (t) => tokens.push(t) });

    expect(tokens.length).toBeGreaterThan(1);
    expect(tokens.join("")).toBe("Hello there, how can I help?");
    expect(result.message.content).toBe("Hello there, how can I help?");
    expect(result.message.tool_calls).toEqual([]);
    expect(result.usage).toEqual({ inputTokens: 123, outputTokens: 45 });
    expect(result.message.usage_metadata).toMatchObject({ input_tokens: 123, output_tokens: 45, total_tokens: 168 });

    expect(srv.requests).toHaveLength(1);
    const [request] = srv.requests;
    expect(request!.path).toBe("/v1/chat/completions");
    expect(request!.headers.authorization).toBe("Bearer sk-test");
    expect(request!.body).toMatchObject({
      model: "gpt-4o-mini",
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Say hello." },
      ],
    });
  });

  it("sends the tools and assembles tool-call deltas into complete tool calls with parsed args", async () => {
    srv.enqueue({
      text: "Writing two files.",
      toolCalls: [
        { id: "call_a", name: "write_file", args: { path: "hello.js", contents: "console.log('hi')\n" } },
        { id: "call_b", name: "write_file", args: { path: "nested/x.json", contents: '{"a": [1, 2]}' } },
      ],
    });

    const result = await openaiModel().call(messages, { node: "coder", tools: [writeFileTool] });

    expect(srv.requests[0]!.body.tools).toEqual([
      {
        type: "function",
        function: { name: "write_file", description: "Write a file", parameters: writeFileTool.parameters },
      },
    ]);
    expect(result.message.content).toBe("Writing two files.");
    expect(result.message.tool_calls).toEqual([
      { id: "call_a", name: "write_file", args: { path: "hello.js", contents: "console.log('hi')\n" }, type: "tool_call" },
      { id: "call_b", name: "write_file", args: { path: "nested/x.json", contents: '{"a": [1, 2]}' }, type: "tool_call" },
    ]);
    expect(result.message.response_metadata).toMatchObject({ finish_reason: "tool_calls" });
  });

  it("counts tokens locally when the server sends no usage, printing nothing and fetching nothing else", async () => {
    srv.enqueue({ text: "No usage from me.", usage: false, toolCalls: [{ name: "write_file", args: { path: "a" } }] });
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    const stderrSpy = vi.spyOn(process.stderr, "write");
    const consoleSpies = (["log", "info", "warn", "error", "debug"] as const).map((m) => vi.spyOn(console, m));

    const result = await openaiModel().call(messages, { node: "coder", tools: [writeFileTool] });

    expect(result.usage.inputTokens).toBe(countInputTokens(messages, [writeFileTool]));
    expect(result.usage.outputTokens).toBe(countOutputTokens(result.message));
    expect(result.usage.inputTokens).toBeGreaterThan(10);
    expect(result.usage.outputTokens).toBeGreaterThan(3);
    expect(stderrSpy).not.toHaveBeenCalled();
    for (const spy of consoleSpies) expect(spy).not.toHaveBeenCalled();
    const fetchedUrls = fetchSpy.mock.calls.map(([input]) => String(input instanceof Request ? input.url : input));
    expect(fetchedUrls).toEqual([`${srv.url}/chat/completions`]);
    expect(srv.requests.map((r) => r.path)).toEqual(["/v1/chat/completions"]);
  });
});

describe("openai model: retries", () => {
  it("retries a 429 after the server's retry-after seconds", async () => {
    srv.enqueue({ status: 429, headers: { "retry-after": "1" } }, { text: "finally" });
    const notices: RetryNotice[] = [];
    const started = Date.now();

    const result = await openaiModel().call(messages, { node: "coder", onRetry: (n) => notices.push(n) });

    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(result.message.content).toBe("finally");
    expect(srv.requests).toHaveLength(2);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({ attempt: 1, maxAttempts: 5, delayMs: 1000 });
    expect(notices[0]!.error.kind).toBe("rate_limit");
  });

  it("prefers retry-after-ms over retry-after", async () => {
    srv.enqueue({ status: 429, headers: { "retry-after-ms": "30", "retry-after": "20" } }, { text: "ok" });
    const notices: RetryNotice[] = [];

    const result = await openaiModel().call(messages, { node: "coder", onRetry: (n) => notices.push(n) });

    expect(result.message.content).toBe("ok");
    expect(notices.map((n) => n.delayMs)).toEqual([30]);
  });

  it("retries a 500 and completes", async () => {
    srv.enqueue({ status: 500 }, { status: 503 }, { text: "recovered" });
    const notices: RetryNotice[] = [];

    const result = await openaiModel().call(messages, { node: "coder", onRetry: (n) => notices.push(n) });

    expect(result.message.content).toBe("recovered");
    expect(srv.requests).toHaveLength(3);
    expect(notices.map((n) => n.error.kind)).toEqual(["server", "server"]);
  });

  it("gives up after the configured number of attempts", async () => {
    srv.enqueue({ status: 502 }, { status: 502 }, { status: 502 });

    const error = await failure(openaiModel({ retry: { maxAttempts: 3, baseDelayMs: 5 } }).call(messages, { node: "coder" }));

    expect(error.kind).toBe("server");
    expect(error.message).toMatch(/\(502: mock error 502\) \(gave up after 3 attempts\)$/);
    expect(srv.requests).toHaveLength(3);
  });

  it("stops at once on 401 with a message naming the key variable", async () => {
    srv.enqueue({ status: 401, error: { message: "Incorrect API key provided" } }, { text: "never" });

    const error = await failure(openaiModel().call(messages, { node: "coder" }));

    expect(error.kind).toBe("auth");
    expect(error.message).toBe(`authentication failed at ${srv.url} (401: Incorrect API key provided): check OPENAI_API_KEY`);
    expect(srv.requests).toHaveLength(1);
  });

  it("names the preset's key variable and honours its <NAME>_BASE_URL", async () => {
    srv.enqueue({ status: 403 });
    const model = createModel("deepseek:deepseek-chat", {
      cwd: process.cwd(),
      env: { DEEPSEEK_API_KEY: "ds-key", DEEPSEEK_BASE_URL: srv.url, OPENAI_API_KEY: "sk-other" },
    });

    const error = await failure(model.call(messages, { node: "coder" }));

    expect(error.kind).toBe("auth");
    expect(error.message).toContain("check DEEPSEEK_API_KEY");
    expect(srv.requests).toHaveLength(1);
    expect(srv.requests[0]!.headers.authorization).toBe("Bearer ds-key");
    expect(srv.requests[0]!.body.model).toBe("deepseek-chat");
  });

  it("does not retry a 400 and reports the server's message", async () => {
    srv.enqueue({ status: 400, error: { message: "messages: must not be empty" } });

    const error = await failure(openaiModel().call(messages, { node: "coder" }));

    expect(error.kind).toBe("bad_request");
    expect(error.message).toBe(`${srv.url} rejected the request for model "gpt-4o-mini" (400: messages: must not be empty)`);
    expect(srv.requests).toHaveLength(1);
  });

  it("does not retry a 429 whose quota is exhausted", async () => {
    srv.enqueue({ status: 429, error: { message: "You exceeded your current quota", code: "insufficient_quota" } });

    const error = await failure(openaiModel().call(messages, { node: "coder" }));

    expect(error.kind).toBe("rate_limit");
    expect(error.message).toContain("quota exhausted");
    expect(srv.requests).toHaveLength(1);
  });

  it("fails at once when retry-after is longer than the retry limit", async () => {
    srv.enqueue({ status: 429, headers: { "retry-after": "3600" } });

    const error = await failure(openaiModel().call(messages, { node: "coder" }));

    expect(error.message).toContain("the server asks to retry after 3600 s, longer than the 60 s retry limit");
    expect(srv.requests).toHaveLength(1);
  });

  it("retries an attempt that receives no data within the idle timeout", async () => {
    srv.enqueue({ delayMs: 2_000, text: "too late" }, { text: "in time" });
    const notices: RetryNotice[] = [];

    const result = await openaiModel({ idleTimeoutMs: 150 }).call(messages, {
      node: "coder",
      onRetry: (n) => notices.push(n),
    });

    expect(result.message.content).toBe("in time");
    expect(notices.map((n) => n.error.kind)).toEqual(["timeout"]);
    expect(srv.requests).toHaveLength(2);
  });

  it("retries a stream that breaks mid-response", async () => {
    srv.enqueue({ text: "first attempt text", dropMidStream: true }, { text: "second attempt" });
    const notices: RetryNotice[] = [];
    const tokens: string[] = [];

    const result = await openaiModel().call(messages, {
      node: "coder",
      onToken: (t) => tokens.push(t),
      onRetry: (n) => notices.push(n),
    });

    expect(result.message.content).toBe("second attempt");
    expect(notices.map((n) => n.error.kind)).toEqual(["network"]);
    expect(tokens.join("")).toMatch(/second attempt$/);
  });

  it("retries when the endpoint cannot be reached, then reports the network error", async () => {
    const unreachable = srv.url;
    await srv.close();
    srv = await startMockOpenAI(); // for afterEach

    const model = createModel("openai:gpt-4o-mini", {
      cwd: process.cwd(),
      env: { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: unreachable },
      retry: { maxAttempts: 2, baseDelayMs: 5 },
    });
    const error = await failure(model.call(messages, { node: "coder" }));

    expect(error.kind).toBe("network");
    expect(error.message).toMatch(
      /^network error talking to http:\/\/127\.0\.0\.1:\d+\/v1: .*ECONNREFUSED.* \(gave up after 2 attempts\)$/,
    );
  });
});

describe("openai model: abort", () => {
  it("stops a call waiting for the server, without retrying", async () => {
    srv.enqueue({ delayMs: 30_000, text: "slow" }, { text: "never" });
    const controller = new AbortController();
    const reason = new Error("user stopped the run");
    setTimeout(() => controller.abort(reason), 100);
    const started = Date.now();

    await expect(openaiModel().call(messages, { node: "coder", signal: controller.signal })).rejects.toBe(reason);

    // Well before the server's 30 s answer, with room for a busy machine.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(srv.requests).toHaveLength(1);
  });

  it("stops during a retry wait", async () => {
    srv.enqueue({ status: 429, headers: { "retry-after": "30" } }, { text: "never" });
    const controller = new AbortController();
    const started = Date.now();

    const call = openaiModel().call(messages, {
      node: "coder",
      signal: controller.signal,
      onRetry: () => controller.abort(),
    });

    await expect(call).rejects.toMatchObject({ name: "AbortError" });
    // Well before the 30 s retry wait, with room for a busy machine.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(srv.requests).toHaveLength(1);
  });
});

describe("openai model: configuration", () => {
  it("requires the API key from the given env, naming the variable and the offline option", () => {
    const attempt = () => createModel("openai:gpt-4o-mini", { cwd: process.cwd(), env: {} });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(
      "OPENAI_API_KEY is not set: export OPENAI_API_KEY=<your key> to use openai:gpt-4o-mini, " + "or try offline with loopgraph demo",
    );
    try {
      attempt();
    } catch (error) {
      expect((error as ConfigError).exitCode).toBe(2);
    }
  });

  it("asks for the preset's own key variable", () => {
    expect(() => createModel("qwen:qwen-max", { cwd: process.cwd(), env: { OPENAI_API_KEY: "sk" } })).toThrow(
      /^DASHSCOPE_API_KEY is not set/,
    );
  });

  it("needs no key for ollama", async () => {
    srv.enqueue({ text: "local answer" });
    const model = createModel("ollama:llama3.2", { cwd: process.cwd(), env: { OLLAMA_BASE_URL: srv.url } });

    const result = await model.call(messages, { node: "coder" });

    expect(model.spec).toBe("ollama:llama3.2");
    expect(result.message.content).toBe("local answer");
  });
});

describe("retry policy", () => {
  it("reads retry-after as seconds or as an HTTP date, and retry-after-ms first", () => {
    const now = Date.parse("2030-01-01T00:00:00Z");
    expect(parseRetryAfterMs(new Headers({ "retry-after": "2.5" }), now)).toBe(2500);
    expect(parseRetryAfterMs(new Headers({ "retry-after": "Tue, 01 Jan 2030 00:00:07 GMT" }), now)).toBe(7000);
    expect(parseRetryAfterMs(new Headers({ "retry-after": "Mon, 31 Dec 2029 00:00:00 GMT" }), now)).toBe(0);
    expect(parseRetryAfterMs(new Headers({ "retry-after-ms": "120", "retry-after": "9" }), now)).toBe(120);
    expect(parseRetryAfterMs(new Headers({ "retry-after": "soon" }), now)).toBeUndefined();
    expect(parseRetryAfterMs(new Headers(), now)).toBeUndefined();
  });

  it("doubles the backoff ceiling per retry, jitters within its upper half, and caps it", () => {
    const policy = { maxAttempts: 5, baseDelayMs: 1000, maxDelayMs: 5000 };
    expect([1, 2, 3, 4].map((n) => backoffDelayMs(n, policy, () => 0))).toEqual([500, 1000, 2000, 2500]);
    expect([1, 2, 3, 4].map((n) => backoffDelayMs(n, policy, () => 1))).toEqual([1000, 2000, 4000, 5000]);
  });
});
