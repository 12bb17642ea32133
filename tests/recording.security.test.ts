import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { beforeEach, describe, expect, it } from "vitest";
import { cleanEnv, parseEvents, runCli } from "./helpers/cli.js";
import { startMockOpenAI, type MockOpenAIServer } from "./helpers/mock-openai.js";
import { onCleanup, tempWorkspace, type Workspace } from "./helpers/workspace.js";

let server: MockOpenAIServer;
let ws: Workspace;

beforeEach(async () => {
  ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
  server = await startMockOpenAI();
  onCleanup(() => server.close());
});

/** Every file below `dir`, recursively. */
function filesBelow(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

describe("recordings and artifacts of a run with an API key in the environment", () => {
  it("hold the model's answers and the tool results, but no API key and no Authorization value, even when a command prints the environment", async () => {
    const secret = "sk-test-SECRET-4f9a2c";
    // The Coder's command prints the key variable and enough lines to be cut into an artifact.
    const command = 'printenv OPENAI_API_KEY; echo "key: ${OPENAI_API_KEY:-unset}"; seq 1 20000';
    server.enqueue({ text: "Looking at the environment.", toolCalls: [{ name: "shell", args: { command } }] }, { text: "Done." });
    const run = await runCli(
      ["run", "coder", "--task", "show me", "--thread", "key", "--workspace", ws.dir, "--model", "openai:gpt-test", "--approval", "auto", "--db", ws.db, "--json"],
      { env: cleanEnv({ OPENAI_API_KEY: secret, OPENAI_BASE_URL: server.url }) },
    );
    expect(run.code, run.stderr + run.stdout.slice(-2000)).toBe(0);
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${secret}`);
    const result = parseEvents(run.stdout).find((e) => e.type === "tool_result");
    expect(result?.result).toContain("key: unset");

    const sqlite = new Database(ws.db, { readonly: true });
    const records = sqlite.prepare(`SELECT kind, name, data FROM loopgraph_recordings WHERE thread_id = 'key' ORDER BY id`).all() as Array<{ kind: string; name: string | null; data: string }>;
    sqlite.close();
    expect(records.map((r) => [r.kind, r.name])).toEqual([["model", null], ["tool", "shell"], ["model", null]]);
    expect(records[0]!.data).toContain("Looking at the environment.");
    const artifact = (JSON.parse(records[1]!.data) as { result: { artifact?: string } }).result.artifact;
    expect(artifact).toMatch(/\.loopgraph\/artifacts\/key\//);

    // A recorded replay, without the key, stores its own records: still none of it anywhere.
    const replay = await runCli(["replay", "key", "--recorded", "--db", ws.db], { env: cleanEnv() });
    expect(replay.code, replay.stderr + replay.stdout).toBe(0);

    // The store (with its -wal/-shm files) and the whole workspace: .loopgraph (artifacts) and .git included.
    const files = filesBelow(join(ws.db, ".."));
    expect(files).toContain(artifact);
    expect(files.some((file) => file.startsWith(ws.db))).toBe(true);
    for (const file of files) {
      const bytes = readFileSync(file);
      expect(bytes.includes(secret), file).toBe(false);
      expect(bytes.includes("Bearer "), file).toBe(false);
    }
  });
});
