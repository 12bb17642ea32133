import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import Database from "better-sqlite3";
import { beforeAll, describe, expect, it } from "vitest";
import { hasStackTrace, parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { finalState as stateOf, historyOf, run, startRun, threadsOf, type RunPlace } from "./helpers/e2e.js";
import { sharedWorkspace, tempWorkspace, type Workspace } from "./helpers/workspace.js";

const LOOPER = join(ROOT, "tests/fixtures/looper");
const INITIAL_FILES = { "package.json": '{ "type": "module" }\n' };

const repo = (files: Record<string, string> = INITIAL_FILES): Workspace => tempWorkspace({ git: true, files });

const runLoop = (ws: RunPlace, thread: string, model: string, graph = "coder-review") =>
  run(ws, { graph, task: "Add isPalindrome(text) in palindrome.js, with a test.", thread, model, approval: "auto" });

/** Every file of the workspace (its .git included, loopgraph's own .loopgraph folder not): path, bytes and modification time. */
function treeDigest(dir: string): string[] {
  const entries: string[] = [];
  const walk = (at: string): void => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (relative(dir, path) === ".loopgraph") continue;
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile())
        entries.push(`${relative(dir, path)} ${statSync(path).mtimeMs} ${createHash("sha1").update(readFileSync(path)).digest("hex")}`);
    }
  };
  walk(dir);
  return entries.sort();
}

/** The user's files only: what the agent wrote. */
const userFiles = (dir: string): Record<string, string> =>
  Object.fromEntries(
    treeDigest(dir)
      .filter((line) => !line.startsWith(".git/"))
      .map((line) => [line.split(" ")[0]!, readFileSync(join(dir, line.split(" ")[0]!), "utf8")]),
  );

interface State {
  outputs: Record<string, unknown>;
  loopState: unknown;
  messages: Array<{ type: string; name?: string; content: unknown }>;
}

/**
 * Keys two runs of one script do not share: ids, and token counts (the prompts name the
 * workspace's path, so input tokens differ with it: the looper's `roundStartUsage`).
 */
const UNSHARED = new Set(["id", "roundStartUsage"]);

const withoutIds = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(withoutIds)
    : value && typeof value === "object"
      ? Object.fromEntries(
          Object.entries(value)
            .filter(([key]) => !UNSHARED.has(key))
            .map(([key, inner]) => [key, withoutIds(inner)]),
        )
      : value;

/** outputs, loopState and the messages' content: ids (of messages, tool calls), token counts and timestamps aside. */
async function finalState(db: string, thread: string) {
  const state = await stateOf<State>(db, thread);
  return {
    outputs: withoutIds(state.outputs),
    loopState: withoutIds(state.loopState),
    messages: state.messages.map((m) => ({ type: m.type, name: m.name, content: m.content })),
  };
}

const replayResult = (stdout: string) =>
  parseEvents(stdout).find((e) => e.type === "replay_result") as {
    replayThreadId: string;
    divergences: Array<{ kind: string; step?: number; node?: string; message: string }>;
    reproduced: boolean;
    exitCode: number;
    endOfRecord: boolean;
    recorded: { status: string; error?: string };
    replayed: { status: string; error?: string };
  };

describe("a recorded two-round coder-review run", () => {
  const ws = sharedWorkspace({ git: true, files: INITIAL_FILES });
  beforeAll(async () => {
    const recorded = await runLoop(ws, "orig", `scripted:${join(ROOT, "examples/coder-review.script.yaml")}`);
    expect(recorded.code, recorded.stderr + recorded.stdout.slice(-2000)).toBe(0);
  }, 120_000);

  it("is exported with --export-script; the script, run on a fresh copy of the workspace, reproduces the final state and the files", async () => {
    const script = join(tempWorkspace().dir, "exported.script.yaml");
    const exported = await runCli(["inspect", "orig", "--export-script", script, "--db", ws.db]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toContain("wrote 12 recorded model answer(s)");
    const text = readFileSync(script, "utf8");
    expect(text.match(/^ {2}- node: /gm)).toHaveLength(12);
    expect(text).not.toContain("delay_ms");

    const fresh = repo();
    const again = await runLoop(fresh, "again", `scripted:${script}`);
    expect(again.code, again.stderr + again.stdout.slice(-2000)).toBe(0);
    expect(await finalState(fresh.db, "again")).toEqual(await finalState(ws.db, "orig"));
    expect(userFiles(fresh.dir)).toEqual(userFiles(ws.dir));
    expect(Object.keys(userFiles(fresh.dir)).sort()).toEqual(["package.json", "palindrome.js", "palindrome.test.js"]);
  });

  it("--export-script without a thread is an input error", async () => {
    const result = await runCli(["inspect", "--export-script", "x.yaml", "--db", ws.db]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--export-script needs a thread/);
  });

  it("replays with --recorded and no model configured: consistent, exit 0, the same final state, the workspace untouched byte for byte", async () => {
    // `git status` refreshes the index file: read it before the digest, and after the digest again.
    const gitStatus = execFileSync("git", ["-C", ws.dir, "status", "--porcelain"], { encoding: "utf8" });
    const before = treeDigest(ws.dir);
    const replay = await runCli(["replay", "orig", "--recorded", "--db", ws.db, "--json"]);
    expect(replay.code, replay.stderr + replay.stdout.slice(-2000)).toBe(0);
    const result = replayResult(replay.stdout);
    expect(result).toMatchObject({ replayThreadId: "orig.replay-1", divergences: [], exitCode: 0, replayed: { status: "finished" } });
    const events = parseEvents(replay.stdout);
    expect(events.filter((e) => e.type === "tool_call").map((e) => e.name)).toEqual([
      "todo_write",
      "write_file",
      "shell",
      "todo_write",
      "write_file",
      "shell",
    ]);
    expect(treeDigest(ws.dir)).toEqual(before);
    expect(execFileSync("git", ["-C", ws.dir, "status", "--porcelain"], { encoding: "utf8" })).toBe(gitStatus);
    expect(await finalState(ws.db, "orig.replay-1")).toEqual(await finalState(ws.db, "orig"));

    expect((await threadsOf(ws.db)).find((t) => t.threadId === "orig.replay-1")).toMatchObject({ status: "finished" });
    const human = await runCli(["replay", "orig", "--recorded", "--db", ws.db]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/recorded replay of orig from its beginning into thread orig\.replay-2/);
    expect(human.stdout).toMatch(/✔ consistent: the replay followed the record \(\d+ recorded calls\) and finished/);
  });

  it("replays --from a checkpoint of round 2: the scratch thread starts at that checkpoint and follows the record to the end", async () => {
    const history = await historyOf(ws.db, "orig");
    const judges = history.checkpoints.filter((c) => c.nodes.includes("judge"));
    const from = judges[0]!.checkpointId;
    const replay = await runCli(["replay", "orig", "--recorded", "--from", from.slice(0, 20), "--db", ws.db, "--json"]);
    expect(replay.code, replay.stderr + replay.stdout.slice(-2000)).toBe(0);
    const result = replayResult(replay.stdout);
    expect(result.divergences).toEqual([]);
    const started = parseEvents(replay.stdout).find((e) => e.type === "replay_started")!;
    expect(started).toMatchObject({ fromCheckpoint: from });
    // Round 2 only: the coder's 3 calls and 2 tools, the review's 2 checks and diff, the judge, and the loopers' reads.
    expect(
      parseEvents(replay.stdout)
        .filter((e) => e.type === "node_started")
        .map((e) => e.node),
    ).toEqual(["looper", "coder", "looper", "review", "looper", "judge", "looper"]);
    const scratch = await historyOf(ws.db, result.replayThreadId);
    expect(scratch.checkpoints[0]!.checkpointId).toBe(from);
    expect(await finalState(ws.db, result.replayThreadId)).toEqual(await finalState(ws.db, "orig"));
  });

  it("reports where a replay departs from a tampered record: the first divergence on stderr, all of them with --json, exit 1", async () => {
    const db = join(tempWorkspace().root, "tampered.db");
    copyFileSync(ws.db, db);
    const sqlite = new Database(db);
    const row = sqlite
      .prepare(`SELECT id, data FROM loopgraph_recordings WHERE thread_id = 'orig' AND name = 'write_file' ORDER BY id DESC LIMIT 1`)
      .get() as { id: number; data: string };
    sqlite
      .prepare(`UPDATE loopgraph_recordings SET data = ? WHERE id = ?`)
      .run(row.data.replace('"path":"palindrome.test.js"', '"path":"tests/palindrome.js"'), row.id);
    sqlite.close();

    const human = await runCli(["replay", "orig", "--recorded", "--db", db]);
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(
      /✖ diverged at step \d+, coder \(tool_args\): coder ran write_file with path: "palindrome.test.js" \(recorded "tests\/palindrome.js"\)/,
    );
    expect(hasStackTrace(human.stderr + human.stdout)).toBe(false);

    const json = await runCli(["replay", "orig", "--recorded", "--db", db, "--json"]);
    expect(json.code).toBe(1);
    const result = replayResult(json.stdout);
    expect(result.divergences[0]).toMatchObject({ kind: "tool_args", node: "coder" });
    expect(result.exitCode).toBe(1);
    // The replay stopped at the divergence: nothing after it ran.
    expect(parseEvents(json.stdout).some((e) => e.type === "node_started" && e.node === "review" && e.visit === 2)).toBe(false);
  });
});

describe("recorded replay of runs that went wrong", () => {
  it("a Judge that answers invalid JSON twice falls back to the rules: the replay, with no model, takes the same fallback", async () => {
    const ws = repo({ "notes.txt": "start\n" });
    const run = await runLoop(ws, "fallback", `scripted:${join(LOOPER, "invalid-judge.script.yaml")}`);
    expect(run.code, run.stderr).toBe(0);
    const replay = await runCli(["replay", "fallback", "--recorded", "--db", ws.db]);
    expect(replay.code, replay.stderr + replay.stdout).toBe(0);
    expect(replay.stdout).toMatch(/✔ consistent/);
    const state = await stateOf<{ outputs: { judge: { source: string; notes: string[] } } }>(ws.db, "fallback.replay-1");
    const original = await stateOf<{ outputs: { judge: { source: string; notes: string[] } } }>(ws.db, "fallback");
    expect(state.outputs.judge.source).toBe("fallback");
    expect(state.outputs.judge).toEqual(original.outputs.judge);
  });

  it("a run that fails because the scripted model is exhausted: the replay says 'reproduced: …' and exits 1 like the run; its function nodes are not called again", async () => {
    const ws = repo({ "notes.txt": "start\n" });
    const graph = join(ROOT, "tests/fixtures/engine/durable.yaml");
    const script = join(ROOT, "tests/fixtures/engine/bad-output.script.yaml");
    const run = await runCli([
      "run",
      graph,
      "--task",
      "t",
      "--thread",
      "spent",
      "--workspace",
      ws.dir,
      "--model",
      `scripted:${script}`,
      "--db",
      ws.db,
    ]);
    expect(run.code).toBe(1);
    expect(readFileSync(join(ws.dir, "steps.log"), "utf8")).toBe("first\n");
    const before = treeDigest(ws.dir);

    const replay = await runCli(["replay", "spent", "--recorded", "--db", ws.db]);
    expect(replay.code, replay.stderr + replay.stdout).toBe(1);
    expect(replay.stdout).toMatch(/✔ reproduced: node "slow" failed: scripted model exhausted: no response left for node "slow"/);
    expect(replay.stderr).not.toMatch(/diverged/);
    expect(treeDigest(ws.dir)).toEqual(before);
  });

  it("a run paused for approval is replayed to the same pause (exit 3); once approved and rejected, the replay takes the recorded answers", async () => {
    const ws = repo({ "README.md": "# demo\n", "important.txt": "keep me\n" });
    const coder = [
      "run",
      "coder",
      "--task",
      "do the task",
      "--thread",
      "ask",
      "--workspace",
      ws.dir,
      "--model",
      `scripted:${join(ROOT, "tests/fixtures/coder/approvals.script.yaml")}`,
      "--db",
      ws.db,
      "--json",
    ];
    expect((await runCli(coder)).code).toBe(3);
    const paused = await runCli(["replay", "ask", "--recorded", "--db", ws.db, "--json"]);
    expect(paused.code, paused.stderr).toBe(3);
    expect(replayResult(paused.stdout)).toMatchObject({ divergences: [], replayed: { status: "paused" } });

    expect((await runCli(["resume", "ask", "--approve", "--db", ws.db])).code).toBe(3);
    expect((await runCli(["resume", "ask", "--reject", "use a temp dir", "--db", ws.db])).code).toBe(0);
    const before = treeDigest(ws.dir);
    const replay = await runCli(["replay", "ask", "--recorded", "--db", ws.db, "--json"]);
    expect(replay.code, replay.stderr + replay.stdout.slice(-2000)).toBe(0);
    expect(replayResult(replay.stdout)).toMatchObject({ divergences: [], replayed: { status: "finished" } });
    expect(treeDigest(ws.dir)).toEqual(before);
    const output = (db: string, thread: string) =>
      stateOf<{ outputs: { coder: unknown } }>(db, thread).then((s) => withoutIds(s.outputs.coder));
    expect(await output(ws.db, "ask.replay-2")).toEqual(await output(ws.db, "ask"));
  });

  it("after an edge is redirected in the graph file, the replay warns that the graph changed and reports the routing divergence", async () => {
    const ws = repo({ "notes.txt": "start\n" });
    const graph = join(tempWorkspace().dir, "loop.yaml");
    writeFileSync(graph, readFileSync(join(ROOT, "graphs/coder-review.yaml"), "utf8"));
    const run = await runLoop(ws, "edited", `scripted:${join(LOOPER, "invalid-judge.script.yaml")}`, graph);
    expect(run.code, run.stderr).toBe(0);
    writeFileSync(graph, readFileSync(graph, "utf8").replace("{ from: judge, to: looper }", "{ from: judge, to: END }"));

    const replay = await runCli(["replay", "edited", "--recorded", "--db", ws.db, "--json"]);
    expect(replay.code).toBe(1);
    const events = parseEvents(replay.stdout);
    expect(events.find((e) => e.type === "warning")?.message).toMatch(
      /graph's files .* changed since this run started: the replay follows the new version/,
    );
    const result = replayResult(replay.stdout);
    expect(result.divergences[0]).toMatchObject({ kind: "routing" });
    expect(result.divergences[0]!.message).toMatch(/the replay ended before step \d+, where the record ran looper/);
    expect(result.divergences.map((d) => d.kind)).toContain("unused_records");
  });

  it("an unknown thread or checkpoint, or a thread without a record, is an input error", async () => {
    const ws = repo();
    expect((await runCli(["replay", "nope", "--recorded", "--db", ws.db])).code).toBe(2);
    const run = await runLoop(ws, "one", `scripted:${join(LOOPER, "invalid-judge.script.yaml")}`);
    expect(run.code).toBe(0);
    const bad = await runCli(["replay", "one", "--recorded", "--from", "zzzz", "--db", ws.db]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/no checkpoint of thread "one" matches "zzzz"/);

    const sqlite = new Database(ws.db);
    sqlite.prepare(`DELETE FROM loopgraph_recordings WHERE thread_id = 'one'`).run();
    sqlite.close();
    const unrecorded = await runCli(["replay", "one", "--recorded", "--db", ws.db]);
    expect(unrecorded.code).toBe(2);
    expect(unrecorded.stderr).toMatch(/thread "one" has no record to replay/);
  });

  it("a run killed mid-step is replayed to the end of its record, where it stops", async () => {
    const ws = repo({ "notes.txt": "start\n" });
    const running = startRun(ws, {
      graph: "coder-review",
      task: "t",
      thread: "killed",
      script: join(LOOPER, "gated-coder.script.yaml"),
      approval: "auto",
    });
    await running.waitForEvent("tool_call", (line) => line.includes("while"));
    await running.kill("SIGKILL");
    writeFileSync(join(ws.dir, "go"), "");
    const replay = await runCli(["replay", "killed", "--recorded", "--db", ws.db, "--json"]);
    expect(replay.code, replay.stderr).toBe(1);
    expect(replayResult(replay.stdout)).toMatchObject({ divergences: [], endOfRecord: true, recorded: { status: "running" } });
    const human = await runCli(["replay", "killed", "--recorded", "--db", ws.db]);
    expect(human.stdout).toMatch(
      /✔ consistent up to the end of the record: the recorded run stopped without an end \(crashed or killed\) there/,
    );
  });
});
