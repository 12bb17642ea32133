import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
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
      [
        "run",
        "coder",
        "--task",
        "show me",
        "--thread",
        "key",
        "--workspace",
        ws.dir,
        "--model",
        "openai:gpt-test",
        "--approval",
        "auto",
        "--db",
        ws.db,
        "--json",
      ],
      { env: cleanEnv({ OPENAI_API_KEY: secret, OPENAI_BASE_URL: server.url }) },
    );
    expect(run.code, run.stderr + run.stdout.slice(-2000)).toBe(0);
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${secret}`);
    const result = parseEvents(run.stdout).find((e) => e.type === "tool_result");
    expect(result?.result).toContain("key: unset");

    const sqlite = new Database(ws.db, { readonly: true });
    const records = sqlite.prepare(`SELECT kind, name, data FROM loopgraph_recordings WHERE thread_id = 'key' ORDER BY id`).all() as Array<{
      kind: string;
      name: string | null;
      data: string;
    }>;
    sqlite.close();
    expect(records.map((r) => [r.kind, r.name])).toEqual([
      ["model", null],
      ["tool", "shell"],
      ["model", null],
    ]);
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

  it("a secret's value found in the repository reaches neither the model nor anything loopgraph writes: checkpoints, records, artifacts, snapshots, exported scripts", async () => {
    const token = "ghp_repo_canary_5be1d0c4a9";
    writeFileSync(join(ws.dir, "config.txt"), `github_token=${token}\n`);
    execFileSync("git", ["add", "config.txt"], { cwd: ws.dir });
    server.enqueue(
      { text: "Reading.", toolCalls: [{ name: "read_file", args: { path: "config.txt" } }] },
      {
        text: "Copying.",
        toolCalls: [
          { name: "shell", args: { command: 'cat config.txt; cp config.txt copy.txt; yes "$(cat config.txt)" | head -n 200000' } },
        ],
      },
      { text: "Editing.", toolCalls: [{ name: "write_file", args: { path: "notes.txt", contents: "noted\n" } }] },
      { text: "Done." },
    );
    const run = await runCli(
      [
        "run",
        "coder",
        "--task",
        "look",
        "--thread",
        "repo-secret",
        "--workspace",
        ws.dir,
        "--model",
        "openai:gpt-test",
        "--approval",
        "auto",
        "--db",
        ws.db,
        "--json",
      ],
      { env: cleanEnv({ OPENAI_API_KEY: "sk-test-key-0000", OPENAI_BASE_URL: server.url, GITHUB_TOKEN: token }) },
    );
    expect(run.code, run.stderr + run.stdout.slice(-2000)).toBe(0);
    // The copy in the workspace is the user's (their file, copied); what loopgraph keeps and sends is redacted.
    expect(readFileSync(join(ws.dir, "copy.txt"), "utf8")).toContain(token);
    expect(JSON.stringify(server.requests.map((request) => request.body))).not.toContain(token);
    expect(JSON.stringify(server.requests.map((request) => request.body))).toContain("github_token=[redacted]");
    expect(run.stdout).not.toContain(token);
    const script = join(ws.dir, "exported.script.yaml");
    expect((await runCli(["inspect", "repo-secret", "--export-script", script, "--db", ws.db], { env: cleanEnv() })).code).toBe(0);
    const kept = [...filesBelow(join(ws.dir, ".loopgraph")), script];
    expect(kept.some((file) => file.includes("artifacts"))).toBe(true);
    for (const file of kept) expect(readFileSync(file).includes(token), file).toBe(false);
    const objects = execFileSync(
      "git",
      ["--git-dir", join(ws.dir, ".loopgraph", "snapshots.git"), "cat-file", "--batch-all-objects", "--batch"],
      { maxBuffer: 1 << 28 },
    );
    expect(objects.includes("github_token=[redacted]")).toBe(true);
    expect(objects.includes(token)).toBe(false);
  });
});
