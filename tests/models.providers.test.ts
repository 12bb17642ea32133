/**
 * anthropic: and google: models against local servers speaking each provider's own wire
 * protocol (Anthropic's Messages API, Google's streamGenerateContent), through their LangChain
 * packages: streamed text, a streamed tool call, 429 and 500 retried, 401 at once naming the
 * key variable, usage from the server. The same rules as openai: (models.openai.isolated.test.ts).
 */
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError, ModelError } from "../src/errors.js";
import { createModel, type RetryNotice, type ToolSpec } from "../src/models/index.js";
import { startMockModelServer, type MockOpenAIServer } from "./helpers/mock-openai.js";

const messages = [new SystemMessage("You are terse."), new HumanMessage("Say hello.")];
const shellTool: ToolSpec = {
  name: "shell",
  description: "Run a command",
  parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
};

/** A model turn of three parallel read calls, and their three results. */
const readTool: ToolSpec = {
  name: "read_file",
  description: "Read a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const parallelCalls = ["a", "b", "c"].map((path, i) => ({
  id: `call_${i}`,
  name: "read_file",
  args: { path },
  type: "tool_call" as const,
}));
const parallelTurn = [
  new HumanMessage("Read a, b and c."),
  new AIMessage({ content: "", tool_calls: parallelCalls }),
  ...parallelCalls.map((call) => new ToolMessage({ content: `file ${call.args.path}`, tool_call_id: call.id, name: call.name })),
];

const PROVIDERS = [
  { provider: "anthropic", protocol: "anthropic", model: "claude-sonnet-4-5", keyEnv: "ANTHROPIC_API_KEY", baseEnv: "ANTHROPIC_BASE_URL" },
  { provider: "google", protocol: "gemini", model: "gemini-2.5-flash", keyEnv: "GOOGLE_API_KEY", baseEnv: "GOOGLE_BASE_URL" },
] as const;

describe.each(PROVIDERS)("$provider: models", ({ provider, protocol, model, keyEnv, baseEnv }) => {
  let srv: MockOpenAIServer;
  beforeEach(async () => {
    srv = await startMockModelServer(protocol);
  });
  afterEach(async () => {
    await srv.close();
  });
  const create = (env: Record<string, string> = {}) =>
    createModel(`${provider}:${model}`, {
      cwd: process.cwd(),
      env: { [keyEnv]: "key-test", [baseEnv]: srv.url, ...env },
      retry: { baseDelayMs: 10 },
    });

  it("streams text through onToken, with the server's usage, the key sent as the provider expects", async () => {
    srv.enqueue({ text: "Hello there, how can I help?", usage: { prompt_tokens: 21, completion_tokens: 8 } });
    const tokens: string[] = [];
    const result = await create().call(messages, { node: "mediator", onToken: (token) => tokens.push(token) });
    expect(tokens.length).toBeGreaterThan(1);
    expect(tokens.join("")).toBe("Hello there, how can I help?");
    expect(result.message.content).toBe("Hello there, how can I help?");
    expect(result.message.tool_calls).toEqual([]);
    // Anthropic's message_start carries output_tokens 1, which LangChain adds to the final count.
    expect(result.usage).toEqual({ inputTokens: 21, outputTokens: protocol === "anthropic" ? 9 : 8 });
    const [request] = srv.requests;
    if (protocol === "anthropic") {
      expect(request!.headers["x-api-key"]).toBe("key-test");
      expect(request!.body).toMatchObject({
        model,
        stream: true,
        system: "You are terse.",
        messages: [{ role: "user", content: "Say hello." }],
      });
    } else {
      expect(request!.path).toBe(`/v1beta/models/${model}:streamGenerateContent?alt=sse`);
      expect(request!.headers["x-goog-api-key"]).toBe("key-test");
      expect(JSON.stringify(request!.body.contents)).toContain("Say hello.");
    }
  });

  it("sends a turn's parallel tool results as the provider's API takes them (its mock refuses any other shape, as the API does)", async () => {
    srv.enqueue({ text: "Read all three." });
    const result = await create().call(parallelTurn, { node: "coder", tools: [readTool] });
    expect(result.message.content).toBe("Read all three.");
    const body = srv.requests[0]!.body;
    if (protocol === "anthropic") {
      const results = body.messages.at(-1).content.filter((block: { type: string }) => block.type === "tool_result");
      expect(results.map((block: { tool_use_id: string }) => block.tool_use_id)).toEqual(["call_0", "call_1", "call_2"]);
    } else {
      const last = body.contents.at(-1);
      expect(last.parts.map((part: { functionResponse: { response: unknown } }) => part.functionResponse.response)).toEqual([
        { result: "file a" },
        { result: "file b" },
        { result: "file c" },
      ]);
    }
  });

  it("sends the tools and returns a streamed tool call with its arguments", async () => {
    srv.enqueue({ text: "Listing.", toolCalls: [{ id: "call_1", name: "shell", args: { command: "ls -la src" } }] });
    const result = await create().call(messages, { node: "coder", tools: [shellTool] });
    expect(result.message.content).toBe("Listing.");
    expect(result.message.tool_calls).toMatchObject([{ name: "shell", args: { command: "ls -la src" }, type: "tool_call" }]);
    expect(result.message.invalid_tool_calls ?? []).toEqual([]);
    expect(JSON.stringify(srv.requests[0]!.body)).toContain('"shell"');
  });

  it("retries a 429 (after the server's retry-after where the SDK keeps it) and a 500, then completes", async () => {
    srv.enqueue({ status: 429, headers: { "retry-after": "0.05" } }, { status: 500 }, { text: "recovered" });
    const notices: RetryNotice[] = [];
    const result = await create().call(messages, { node: "coder", onRetry: (notice) => notices.push(notice) });
    expect(result.message.content).toBe("recovered");
    expect(srv.requests).toHaveLength(3);
    expect(notices.map((notice) => notice.error.kind)).toEqual(["rate_limit", "server"]);
    if (protocol === "anthropic") expect(notices[0]!.delayMs).toBe(50);
  });

  it("fails at once on 401, naming the variable to set", async () => {
    srv.enqueue(
      { status: 401, error: { message: "invalid x-api-key", type: "authentication_error", code: "UNAUTHENTICATED" } },
      { text: "never" },
    );
    const error = await create()
      .call(messages, { node: "coder" })
      .then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).kind).toBe("auth");
    expect((error as ModelError).message).toMatch(
      new RegExp(`^authentication failed at ${srv.url.replace(/[.:/]/g, "\\$&")} \\(401.*\\): check ${keyEnv}$`),
    );
    expect(srv.requests).toHaveLength(1);
  });

  it("retries a stream that breaks mid-response, as a network error", async () => {
    srv.enqueue({ text: "first attempt text", dropMidStream: true }, { text: "second attempt" });
    const notices: RetryNotice[] = [];
    const result = await create().call(messages, { node: "coder", onRetry: (notice) => notices.push(notice) });
    expect(result.message.content).toBe("second attempt");
    expect(notices.map((notice) => notice.error.kind)).toEqual(["network"]);
  });

  it("retries when the endpoint cannot be reached, then reports the network error", async () => {
    const unreachable = srv.url;
    await srv.close();
    srv = await startMockModelServer(protocol); // for afterEach
    const unreachableModel = createModel(`${provider}:${model}`, {
      cwd: process.cwd(),
      env: { [keyEnv]: "key-test", [baseEnv]: unreachable },
      retry: { maxAttempts: 2, baseDelayMs: 5 },
    });
    const notices: RetryNotice[] = [];
    const error = await unreachableModel.call(messages, { node: "coder", onRetry: (notice) => notices.push(notice) }).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).kind).toBe("network");
    expect((error as ModelError).message).toMatch(
      /^network error talking to http:\/\/127\.0\.0\.1:\d+\S*: .+ \(gave up after 2 attempts\)$/,
    );
    expect(notices).toHaveLength(1);
  });

  it("without its key, says which variable to set, and how to try offline", () => {
    expect(() => createModel(`${provider}:${model}`, { cwd: process.cwd(), env: {} })).toThrow(ConfigError);
    expect(() => createModel(`${provider}:${model}`, { cwd: process.cwd(), env: {} })).toThrow(
      new RegExp(`^${keyEnv} is not set: export ${keyEnv}=<your key>`),
    );
  });
});

describe("provider names", () => {
  it("gemini: is google:, and GEMINI_API_KEY stands in for GOOGLE_API_KEY", async () => {
    const srv = await startMockModelServer("gemini");
    try {
      srv.enqueue({ text: "hi" });
      const result = await createModel("gemini:gemini-2.5-flash", {
        cwd: process.cwd(),
        env: { GEMINI_API_KEY: "gk", GOOGLE_BASE_URL: srv.url },
      }).call(messages, { node: "a" });
      expect(result.message.content).toBe("hi");
      expect(srv.requests[0]!.headers["x-goog-api-key"]).toBe("gk");
    } finally {
      await srv.close();
    }
  });
});

describe("openai: parallel tool results", () => {
  it("sends a turn's parallel tool results as one tool message each, right after the call turn (its mock refuses any other shape, as the API does)", async () => {
    const srv = await startMockModelServer("openai");
    try {
      srv.enqueue({ text: "Read all three." });
      const model = createModel("openai:gpt-4o-mini", {
        cwd: process.cwd(),
        env: { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: srv.url },
        retry: { baseDelayMs: 10 },
      });
      const result = await model.call(parallelTurn, { node: "coder", tools: [readTool] });
      expect(result.message.content).toBe("Read all three.");
      const messages = srv.requests[0]!.body.messages as { role: string; tool_call_id?: string }[];
      expect(messages.slice(-3).map((message) => [message.role, message.tool_call_id])).toEqual([
        ["tool", "call_0"],
        ["tool", "call_1"],
        ["tool", "call_2"],
      ]);
    } finally {
      await srv.close();
    }
  });
});
