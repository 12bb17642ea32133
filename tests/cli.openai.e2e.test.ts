import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { cleanEnv, hasStackTrace, parseEvents, runCli } from "./helpers/cli.js";
import { startMockOpenAI, type MockOpenAIServer } from "./helpers/mock-openai.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

let server: MockOpenAIServer;
/** The test's folder: its stores, and nothing else. */
let temp: { path: string };

beforeEach(async () => {
  temp = { path: tempWorkspace().dir };
  server = await startMockOpenAI();
  onCleanup(() => server.close());
});

const env = () => cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url });
const run = (thread: string) =>
  runCli(
    [
      "run",
      "example-review",
      "--task",
      "Explain loopgraph",
      "--thread",
      thread,
      "--model",
      "openai:gpt-test",
      "--db",
      join(temp.path, "db"),
      "--json",
    ],
    {
      env: env(),
    },
  );

describe("loopgraph run against an OpenAI-compatible server on 127.0.0.1", () => {
  it("streams, retries a 429 and a 500, and finishes with token usage from the server", async () => {
    server.enqueue(
      { status: 429, headers: { "retry-after-ms": "50" } },
      { text: "A first draft." },
      { status: 500 },
      { text: '{"verdict": "approve", "notes": "fine"}', usage: { prompt_tokens: 40, completion_tokens: 9 } },
    );
    const result = await run("oa1");
    expect(result.code, result.stderr).toBe(0);
    const events = parseEvents(result.stdout);
    // Every line: the format's version and an ISO time, in order.
    expect(events.every((e) => e.version === 1 && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(String(e.ts)))).toBe(true);
    expect(events.map((e) => String(e.ts))).toEqual(events.map((e) => String(e.ts)).toSorted());
    expect(events.filter((e) => e.type === "retry")).toHaveLength(2);
    expect(events.filter((e) => e.type === "message" && e.delta).length).toBeGreaterThan(1);
    const critique = events.find((e) => e.type === "node_finished" && e.node === "critique");
    expect(critique?.usage).toEqual({ inputTokens: 40, outputTokens: 9 });
    expect(server.requests).toHaveLength(4);
    expect(server.requests.every((r) => r.headers.authorization === "Bearer sk-test")).toBe(true);
  });

  it("never writes the API key or the Authorization header into the store", async () => {
    const secret = "sk-test-SECRET-4f9a2c";
    server.enqueue({ text: "A draft." }, { text: '{"verdict": "approve", "notes": "fine"}' });
    const db = join(temp.path, "secret.db");
    const result = await runCli(
      ["run", "example-review", "--task", "t", "--thread", "key", "--model", "openai:gpt-test", "--db", db, "--json"],
      { env: cleanEnv({ OPENAI_API_KEY: secret, OPENAI_BASE_URL: server.url }) },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${secret}`);
    for (const file of readdirSync(temp.path)) {
      const bytes = readFileSync(join(temp.path, file));
      expect(bytes.includes(secret), file).toBe(false);
      expect(bytes.includes("Bearer "), file).toBe(false);
    }
  });

  it("stops at once on 401 with a clear one-line message, exit 1", async () => {
    server.enqueue({ status: 401, error: { message: "Incorrect API key provided" } });
    const result = await run("oa2");
    expect(result.code).toBe(1);
    expect(server.requests).toHaveLength(1);
    const error = parseEvents(result.stdout).find((e) => e.type === "error");
    expect(error?.message).toMatch(/authentication failed.*OPENAI_API_KEY/);
    expect(hasStackTrace(result.stderr + result.stdout)).toBe(false);
  });
});
