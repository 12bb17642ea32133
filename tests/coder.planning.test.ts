/**
 * The Coder's planning, on the wire: a Coder run in-process through the real provider code
 * (openai:, anthropic:, google:) against the mock model server on 127.0.0.1, which records what
 * each request carried: the complexity strategy in the first request.
 */
import { describe, expect, it } from "vitest";
import { runGraph } from "../src/index.js";
import { settingsOf } from "../src/config/environment-settings.js";
import type { CoderResult } from "../src/nodes/coder/types.js";
import type { RunEvent } from "../src/runtime/events.js";
import { cleanEnv } from "./helpers/cli.js";
import { startMockModelServer, type MockOpenAIServer, type MockProtocol } from "./helpers/mock-openai.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

const PROVIDERS: readonly { protocol: MockProtocol; model: string; env: (url: string) => Record<string, string> }[] = [
  { protocol: "openai", model: "openai:gpt-test", env: (url) => ({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: url }) },
  {
    protocol: "anthropic",
    model: "anthropic:claude-sonnet-4-5",
    env: (url) => ({ ANTHROPIC_API_KEY: "key-test", ANTHROPIC_BASE_URL: url }),
  },
  { protocol: "gemini", model: "google:gemini-2.5-flash", env: (url) => ({ GOOGLE_API_KEY: "key-test", GOOGLE_BASE_URL: url }) },
];

/** A request's whole body as text: where each provider puts the system prompt and the messages differs. */
const wire = (server: MockOpenAIServer, index: number): string => JSON.stringify(server.requests[index]!.body);

describe.each(PROVIDERS)("$protocol: the Coder's planning on the wire", ({ protocol, model, env }) => {
  async function coderRun(task: string, ...answers: Parameters<MockOpenAIServer["enqueue"]>) {
    const ws = tempWorkspace({ files: { "README.md": "# demo\n", "notes.txt": "alpha\n" } });
    const server = await startMockModelServer(protocol);
    onCleanup(() => server.close());
    server.enqueue(...answers);
    const events: RunEvent[] = [];
    const outcome = await runGraph({
      graph: "coder",
      task,
      workspace: ws.dir,
      db: ws.db,
      model,
      approval: "auto",
      settings: settingsOf(cleanEnv(env(server.url))),
      onEvent: (event) => events.push(event),
    });
    const coder = outcome.state?.outputs.coder as CoderResult | undefined;
    return { server, events, outcome, coder };
  }

  it("the complexity strategy is in the first request; the analysis is an event and in the result", async () => {
    const { server, events, outcome, coder } = await coderRun("create a snake game in snake.py", { text: "done" });
    expect(outcome.status, outcome.error).toBe("finished");
    expect(wire(server, 0)).toMatch(/# Task strategy: simple \(confidence \d+%\)\\nThis task looks simple\. Do not plan/);
    expect(events.find((event) => event.type === "complexity")).toMatchObject({
      node: "coder",
      level: "simple",
      indicators: expect.arrayContaining(['"create a" (simple)']),
    });
    expect(coder?.complexity).toEqual({ level: "simple", confidence: expect.any(Number) });
  });
});
