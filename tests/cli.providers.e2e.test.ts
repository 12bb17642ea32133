/**
 * `loopgraph run coder` with anthropic: and google: models against local servers speaking each
 * provider's wire protocol: a Coder turn with two streamed tool calls that run (their results sent
 * back in the provider's own shape), retried failures,
 * and a 401 that stops the run at once naming the variable to set (real CLI processes).
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, parseEvents, runCli } from "./helpers/cli.js";
import { startMockModelServer, startMockOpenAI } from "./helpers/mock-openai.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

const PROVIDERS = [
  { provider: "anthropic", protocol: "anthropic", model: "claude-sonnet-4-5", keyEnv: "ANTHROPIC_API_KEY", baseEnv: "ANTHROPIC_BASE_URL" },
  { provider: "google", protocol: "gemini", model: "gemini-2.5-flash", keyEnv: "GOOGLE_API_KEY", baseEnv: "GOOGLE_BASE_URL" },
] as const;

describe.each(PROVIDERS)("loopgraph run coder --model $provider:…", ({ provider, protocol, model, keyEnv, baseEnv }) => {
  it("completes a Coder turn with a streamed tool call, after a 429 and a 500; the key is written nowhere", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    const server = await startMockModelServer(protocol);
    onCleanup(() => server.close());
    server.enqueue(
      { status: 429, headers: { "retry-after": "0.05" } },
      {
        text: "Writing the file.",
        // Two calls in one turn: their results go back as the provider's API takes a turn's results (its mock refuses any other shape).
        toolCalls: [
          { id: "toolu_1", name: "write_file", args: { path: "hello.txt", contents: `hello from ${provider}\n` } },
          { id: "toolu_2", name: "read_file", args: { path: "README.md" } },
        ],
      },
      { status: 500 },
      { text: "Done: hello.txt is written." },
    );
    const secret = `key-${provider}-SECRET-91c3`;
    const result = await runCli(
      [
        "run",
        "coder",
        "--task",
        "write hello.txt",
        "--workspace",
        ws.dir,
        "--db",
        ws.db,
        "--model",
        `${provider}:${model}`,
        "--approval",
        "auto",
        "--json",
      ],
      { env: cleanEnv({ [keyEnv]: secret, [baseEnv]: server.url }) },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "hello.txt"), "utf8")).toBe(`hello from ${provider}\n`);
    const events = parseEvents(result.stdout);
    expect(events.filter((event) => event.type === "retry")).toHaveLength(2);
    expect(events.find((event) => event.type === "tool_call")).toMatchObject({ name: "write_file" });
    expect(events.at(-1)).toMatchObject({ type: "run_finished", outcome: "finished", exitCode: 0 });
    expect(server.requests).toHaveLength(4);
    // The tool result went back to the model in the provider's own form.
    const answered = JSON.stringify(server.requests[3]!.body);
    expect(answered.match(protocol === "anthropic" ? /"tool_result"/g : /"functionResponse"/g)).toHaveLength(2);
    for (const file of readdirSync(join(ws.db, ".."))) {
      if (existsSync(join(ws.db, "..", file)) && !file.startsWith("repo"))
        expect(readFileSync(join(ws.db, "..", file)).includes(secret), file).toBe(false);
    }
  });

  it("stops at once on 401, exit 1, the reason naming the variable to set", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    const server = await startMockModelServer(protocol);
    onCleanup(() => server.close());
    server.enqueue(
      { status: 401, error: { message: "invalid key", type: "authentication_error", code: "UNAUTHENTICATED" } },
      { text: "never" },
    );
    const result = await runCli(
      ["run", "coder", "--task", "write hello.txt", "--workspace", ws.dir, "--db", ws.db, "--model", `${provider}:${model}`],
      {
        env: cleanEnv({ [keyEnv]: "wrong", [baseEnv]: server.url }),
      },
    );
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n").at(-1)).toMatch(
      new RegExp(`^✖ failed .*authentication failed at .*\\(401.*\\): check ${keyEnv}$`),
    );
    expect(server.requests).toHaveLength(1);
  });
});

describe("a provider of the user's own (config.yaml providers:)", () => {
  it("runs a Coder turn on its OpenAI-compatible endpoint with its key variable and default model, chosen by name alone", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    const server = await startMockOpenAI();
    onCleanup(() => server.close());
    const configHome = join(ws.root, "config");
    mkdirSync(join(configHome, "loopgraph"), { recursive: true });
    writeFileSync(
      join(configHome, "loopgraph", "config.yaml"),
      `providers:\n  inhouse: { base_url: "${server.url}", api_key_env: INHOUSE_API_KEY, default_model: coder-7b }\nmodel: inhouse\n`,
    );
    server.enqueue({ toolCalls: [{ name: "write_file", args: { path: "a.txt", contents: "a\n" } }] }, { text: "Done." });
    const result = await runCli(["run", "coder", "--task", "write a.txt", "--workspace", ws.dir, "--db", ws.db, "--approval", "auto"], {
      env: cleanEnv({ XDG_CONFIG_HOME: configHome, INHOUSE_API_KEY: "ih-key-123456" }),
    });
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("a\n");
    expect(server.requests.map((request) => [request.body.model, request.headers.authorization])).toEqual([
      ["coder-7b", "Bearer ih-key-123456"],
      ["coder-7b", "Bearer ih-key-123456"],
    ]);
    const missing = await runCli(["run", "coder", "--task", "x", "--workspace", ws.dir, "--db", ws.db], {
      env: cleanEnv({ XDG_CONFIG_HOME: configHome }),
    });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("INHOUSE_API_KEY is not set: export INHOUSE_API_KEY=<your key> to use inhouse:coder-7b");
  });
});
