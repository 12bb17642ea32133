/**
 * Hooks through the real CLI: a before_tool hook blocks a command with a reason the model gets,
 * an after_tool hook adds a note, session_start and stop/error hooks get their event as JSON on
 * stdin; a recorded replay takes the same decisions without running any hook.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, runCli, trustIn } from "./helpers/cli.js";
import { run } from "./helpers/e2e.js";
import { tempWorkspace } from "./helpers/workspace.js";

const events = (stdout: string) =>
  stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const HOOKS = `hooks:
  session_start:
    - command: "cat > hook-session-start.json"
  before_tool:
    - tools: shell
      command: 'if grep -q "rm "; then echo "no rm here: use git clean" >&2; exit 2; fi'
  after_tool:
    - tools: "*_file"
      command: 'echo ran >> hook-after.log; echo "remember to run the tests"'
  stop:
    - command: "cat > hook-stop.json"
  error:
    - command: "cat > hook-error.json"
`;

describe("hooks in a Coder run", () => {
  it("blocks a call, adds a note to a result, tells the session's start and end; a recorded replay runs none of them", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "keep me\n" } });
    const config = join(ws.root, "config");
    mkdirSync(join(config, "loopgraph"), { recursive: true });
    writeFileSync(join(config, "loopgraph", "config.yaml"), HOOKS);
    const script = join(ws.root, "hooks.script.yaml");
    writeFileSync(
      script,
      [
        "responses:",
        '  - { node: coder, tool_calls: [ { name: shell, args: { command: "rm notes.txt" } } ] }',
        '  - { node: coder, tool_calls: [ { name: write_file, args: { path: todo.txt, contents: "test it\\n" } } ] }',
        '  - { node: coder, content: "Kept the notes, wrote the todo." }',
        "",
      ].join("\n"),
    );
    const env = cleanEnv({ XDG_CONFIG_HOME: config });
    const result = await run(ws, { graph: "coder", thread: "hooked", script, task: "tidy up", approval: "auto" }, { env });
    expect(result.code, result.stderr).toBe(0);
    const all = events(result.stdout);
    const results = all.filter((event) => event.type === "tool_result") as { name: string; ok: boolean; result: string; notRun?: string }[];
    expect(results[0]).toMatchObject({
      name: "shell",
      ok: false,
      notRun: "blocked",
      result: "Blocked by a hook: no rm here: use git clean",
    });
    expect(readFileSync(join(ws.dir, "notes.txt"), "utf8")).toBe("keep me\n");
    expect(results[1]).toMatchObject({ name: "write_file", ok: true });
    expect(results[1]!.result).toMatch(/\n\n\[after_tool hook\]\nremember to run the tests$/);
    const hooks = all.filter((event) => event.type === "hook").map((event) => [event.event, event.exitCode, event.blocked ?? false]);
    expect(hooks).toEqual([
      ["session_start", 0, false],
      ["before_tool", 2, true],
      ["after_tool", 0, false],
      ["stop", 0, false],
    ]);
    const started = JSON.parse(readFileSync(join(ws.dir, "hook-session-start.json"), "utf8")) as Record<string, unknown>;
    expect(started).toEqual({ event: "session_start", resumed: false, thread: "hooked", graph: "coder", workspace: ws.dir });
    const stopped = JSON.parse(readFileSync(join(ws.dir, "hook-stop.json"), "utf8")) as Record<string, unknown>;
    expect(stopped).toMatchObject({ event: "stop", status: "finished", exitCode: 0, thread: "hooked" });

    rmSync(join(ws.dir, "hook-session-start.json"));
    expect(readFileSync(join(ws.dir, "hook-after.log"), "utf8")).toBe("ran\n");
    // The replay blocks the call and adds the note as the run did, from the record: no hook runs.
    const replayed = await runCli(["replay", "hooked", "--recorded", "--db", ws.db, "--json"], { env });
    expect(replayed.code, replayed.stderr).toBe(0);
    const replayedResults = events(replayed.stdout).filter((event) => event.type === "tool_result") as { result: string }[];
    expect(replayedResults.map((event) => event.result)).toEqual(results.map((event) => event.result));
    expect(existsSync(join(ws.dir, "hook-session-start.json"))).toBe(false);
    expect(readFileSync(join(ws.dir, "hook-after.log"), "utf8")).toBe("ran\n");
  });

  it("a failing before_tool hook blocks the call; a failed run calls the error hook; a project's hook is skipped where no sandbox can run it", async () => {
    const ws = tempWorkspace({ git: true });
    const config = join(ws.root, "config");
    mkdirSync(join(config, "loopgraph"), { recursive: true });
    writeFileSync(join(config, "loopgraph", "config.yaml"), `${HOOKS.replace(/ {4}- tools: shell\n.*\n/, "    - command: 'exit 1'\n")}`);
    writeFileSync(join(ws.dir, "loopgraph.yaml"), "hooks:\n  session_start:\n    - command: touch planted-hook-ran\n");
    const script = join(ws.root, "short.script.yaml");
    // One answer for two model calls: the scripted model runs out, and the run fails.
    writeFileSync(script, 'responses:\n  - { node: coder, tool_calls: [ { name: shell, args: { command: "ls" } } ] }\n');
    const env = cleanEnv({ XDG_CONFIG_HOME: config, LOOPGRAPH_SANDBOX: "off" });
    // Trusted, a project's hook is still one nobody approves: it runs only in the sandbox.
    trustIn(ws.dir, env);
    const result = await runCli(
      [
        "run",
        "coder",
        "--task",
        "look",
        "--thread",
        "failing",
        "--workspace",
        ws.dir,
        "--model",
        `scripted:${script}`,
        "--approval",
        "auto",
        "--db",
        ws.db,
        "--json",
      ],
      { cwd: ws.dir, env },
    );
    expect(result.code).toBe(1);
    const all = events(result.stdout);
    const blocked = all.find((event) => event.type === "tool_result") as { result: string };
    expect(blocked.result).toBe("Blocked by a hook: the before_tool hook `exit 1` failed (it exited with 1), so the call was not run");
    const skipped = all.find((event) => event.type === "hook" && event.command === "touch planted-hook-ran") as { failure: string };
    expect(skipped.failure).toMatch(
      /^the session_start hook `touch planted-hook-ran` not run: it is declared in .*loopgraph\.yaml, and such a hook runs only in the OS sandbox, but the sandbox is off for this run/,
    );
    expect(existsSync(join(ws.dir, "planted-hook-ran"))).toBe(false);
    const failed = JSON.parse(readFileSync(join(ws.dir, "hook-error.json"), "utf8")) as Record<string, unknown>;
    expect(failed).toMatchObject({ event: "error", status: "failed", exitCode: 1, thread: "failing" });
    expect(failed.reason).toEqual(expect.any(String));
    expect(existsSync(join(ws.dir, "hook-stop.json"))).toBe(false);
  });
});
