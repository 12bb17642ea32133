/**
 * graphs/best-of-n.yaml through the CLI, with scripted models: N Coders attempt the task in their
 * own worktrees, the Review runs the check command in each, the Judge picks one, the merge node
 * applies it; `inspect` shows the attempts as lanes; a kill -9 during the attempts resumes only
 * the attempts whose steps were not stored; a run where no attempt is picked fails.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { git, parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { finalState, historyOf, run, startResume, startRun, type RunSpec } from "./helpers/e2e.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

const EXAMPLE_SCRIPT = join(ROOT, "examples/best-of-n.script.yaml");

const repo = (): Workspace => tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });

const branches = (ws: Workspace): string[] =>
  git(ws.dir, "branch", "--list", "loopgraph/*", "--format=%(refname:short)").split("\n").filter(Boolean);

const spec = (thread: string, script: string, extra: string[] = []): RunSpec => ({
  graph: "best-of-n",
  thread,
  task: "Write isPalindrome(text) in palindrome.js, ignoring case, spaces and punctuation, with a test",
  script,
  approval: "auto",
  extra,
});

interface Outputs {
  coder: { status: string; branch: string }[];
  review: { rating: string; checks: { command: { passed: boolean; exitCode: number | null } } }[];
  judge: { decision: string; attempt?: number; index?: number; branch?: string; reason?: string; nextTask?: string };
  apply?: { status: string; applied: string[] };
}

const outputsOf = async (ws: Workspace, thread: string) => (await finalState<{ outputs: Outputs }>(ws.db, thread)).outputs;

describe("best-of-n", () => {
  it("three attempts, the second passes its check: the Judge picks it, it is applied, three branches stay, inspect shows three lanes", async () => {
    const ws = repo();
    const result = await run(ws, spec("bon", EXAMPLE_SCRIPT, ["--attempts", "3"]));
    expect(result.code, result.stderr + result.stdout).toBe(0);

    const out = await outputsOf(ws, "bon");
    expect(out.coder.map((coder) => coder.branch)).toEqual(["loopgraph/bon/coder-0", "loopgraph/bon/coder-1", "loopgraph/bon/coder-2"]);
    // The check ran in each attempt's own worktree: only the second one's tests pass.
    expect(out.review.map((review) => review.checks.command.passed)).toEqual([false, true, false]);
    expect(out.review.map((review) => review.rating)).toEqual(["critical", "normal", "critical"]);
    expect(out.judge).toMatchObject({ decision: "pick", attempt: 2, index: 1, branch: "loopgraph/bon/coder-1" });
    expect(out.apply).toEqual({
      status: "applied",
      applied: ["package.json", "palindrome.js", "palindrome.test.js"],
      withheld: [],
      baseline: expect.stringMatching(/^git:[0-9a-f]{40}$/),
    });

    expect(readFileSync(join(ws.dir, "palindrome.js"), "utf8")).toContain('replace(/[^a-z0-9]/g, "")');
    expect(branches(ws)).toEqual(["loopgraph/bon/coder-0", "loopgraph/bon/coder-1", "loopgraph/bon/coder-2"]);
    expect(existsSync(join(ws.dir, ".loopgraph/worktrees/bon"))).toBe(false);

    const history = await historyOf(ws.db, "bon");
    const attempts = history.checkpoints.find((checkpoint) => checkpoint.instances?.coder === 3)!;
    expect(attempts.lanes?.map((lane) => `${lane.node}[${lane.index}]`)).toEqual(["coder[0]", "coder[1]", "coder[2]"]);
    for (const lane of attempts.lanes!) {
      expect(lane.tokens.inputTokens).toBeGreaterThan(0);
      expect(lane.seconds).toBeGreaterThan(0);
    }
    // A recorded replay matches each attempt's calls to its own records, whatever order the attempts ran in, and changes nothing.
    const refs = git(ws.dir, "for-each-ref");
    const replayed = await runCli(["replay", "bon", "--recorded", "--db", ws.db]);
    expect(replayed.code, replayed.stderr + replayed.stdout).toBe(0);
    expect(replayed.stdout).toContain("consistent: the replay followed the record");
    expect(git(ws.dir, "for-each-ref")).toBe(refs);
    expect(readFileSync(join(ws.dir, "palindrome.js"), "utf8")).toContain('replace(/[^a-z0-9]/g, "")');

    // The merge is snapshotted as a tool step is: rewinding to the Judge's checkpoint, before it, takes its files back out.
    const judged = history.checkpoints.find((checkpoint) => checkpoint.nodes.includes("judge"))!.checkpointId;
    const rewound = await runCli(["rewind", "bon", judged, "--db", ws.db]);
    expect(rewound.code, rewound.stderr).toBe(0);
    expect(existsSync(join(ws.dir, "palindrome.js"))).toBe(false);
    expect(git(ws.dir, "status", "--porcelain")).toBe("");

    const lanesIn = (text: string) => text.split("\n").filter((line) => /^\s+[├└] coder\[\d\]/.test(line));
    const shown = await runCli(["inspect", "bon", "--db", ws.db]);
    expect(lanesIn(shown.stdout)).toHaveLength(3);
  });

  it("no attempt picked: the merge fails the run with the Judge's decision, and the workspace is unchanged", async () => {
    const ws = repo();
    const script = join(ws.root, "none.script.yaml");
    writeFileSync(
      script,
      stringify({
        responses: [
          {
            node: "coder[0]",
            tool_calls: [{ name: "write_file", args: { path: "package.json", contents: '{ "scripts": { "test": "exit 3" } }\n' } }],
          },
          { node: "coder[0]", content: "tried" },
          { node: "review[0].specs_breakdown", content: '{"rating": "normal", "comments": []}' },
          { node: "review[0].task_log", content: '{"rating": "normal", "comments": []}' },
          { node: "judge", content: '{"decision": "continue", "nextTask": "make the tests pass"}' },
        ],
      }),
    );
    const result = await run(ws, { ...spec("none", script, ["--attempts", "1"]), json: false });
    expect(result.code, result.stderr + result.stdout).toBe(1);
    expect(result.stderr).toContain(
      'node "apply" has no attempt to apply: outputs.judge.index is missing (the decision there: continue: make the tests pass)',
    );
    const out = await outputsOf(ws, "none");
    expect(out.review[0]!.checks.command).toMatchObject({ passed: false, exitCode: 3 });
    expect(existsSync(join(ws.dir, "package.json"))).toBe(false);
    expect(branches(ws)).toEqual(["loopgraph/none/coder-0"]);
  });

  it("--attempts on a graph without an attempts field is refused before anything runs (exit 2)", async () => {
    const ws = repo();
    const result = await run(ws, { graph: "coder", thread: "x", task: "t", script: EXAMPLE_SCRIPT, extra: ["--attempts", "2"] });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('graph "coder" takes no --attempts: it declares no number field "attempts" under state:');
  });
});

/** Whether the map's instances `indexes` have their writes stored (their task ended) in the thread's store. */
function instancesStored(db: string, count: number): boolean {
  const store = new Database(db, { readonly: true, fileMustExist: true });
  try {
    const row = store
      .prepare(
        "SELECT count(DISTINCT task_id) AS n FROM loopgraph_checkpoint_writes WHERE checkpoint_ns = '' AND channel = 'outputs' AND task_path LIKE '~__pregel_push%'",
      )
      .get() as { n: number };
    return row.n >= count;
  } finally {
    store.close();
  }
}

describe("a crash during the attempts", () => {
  it("kill -9 while one attempt waits: resume runs only that one, no attempt's shell step runs twice, and the winner is applied", async () => {
    const ws = repo();
    const script = join(ws.root, "crash.script.yaml");
    const attempt = (index: number, extra: object[] = []) => [
      {
        node: `coder[${index}]`,
        tool_calls: [
          { name: "write_file", args: { path: "package.json", contents: '{ "scripts": { "test": "test -e ok" } }\n' } },
          { name: "shell", args: { command: `echo ${index} >> log.txt` } },
        ],
      },
      ...extra,
      { node: `coder[${index}]`, content: `attempt ${index + 1} done` },
    ];
    const gated = {
      node: "coder[1]",
      tool_calls: [{ name: "shell", args: { command: "while [ ! -e go ]; do sleep 0.05; done; rm go; touch ok; echo gated >> log.txt" } }],
    };
    const verdicts = [0, 1, 2].flatMap((i) => [
      { node: `review[${i}].specs_breakdown`, content: '{"rating": "normal", "comments": []}' },
      { node: `review[${i}].task_log`, content: '{"rating": "normal", "comments": []}' },
    ]);
    const pick = { node: "judge", content: '{"decision": "pick", "attempt": 2, "reason": "its check passes"}' };
    writeFileSync(script, stringify({ responses: [...attempt(0), ...attempt(1, [gated]), ...attempt(2), ...verdicts, pick] }));

    const running = startRun(ws, spec("crash", script));
    await running.waitForEvent("tool_call", (line) => line.includes("while [ ! -e go ]"));
    // The two other attempts end (their writes stored) while the second one waits.
    for (let tries = 0; !instancesStored(ws.db, 2); tries++) {
      if (tries > 400) throw new Error("the other attempts did not finish");
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    await running.kill("SIGKILL");
    const worktree = (i: number) => join(ws.dir, ".loopgraph/worktrees/crash", `coder-${i}`);
    expect(readFileSync(join(worktree(1), "log.txt"), "utf8")).toBe("1\n");

    const resuming = startResume(ws, "crash", "--json");
    await resuming.waitForEvent("tool_call", (line) => line.includes("while [ ! -e go ]"));
    writeFileSync(join(worktree(1), "go"), "");
    const resumed = await resuming.done;
    expect(resumed.code, resumed.stderr).toBe(0);
    // Only the waiting step ran again: the finished attempts and the second one's first command did not.
    const calls = parseEvents(resumed.stdout).filter((event) => event.type === "tool_call");
    expect(calls.map((event) => (event.args as { command?: string }).command)).toEqual([gated.tool_calls[0]!.args.command]);

    const out = await outputsOf(ws, "crash");
    expect(out.review.map((review) => review.checks.command.passed)).toEqual([false, true, false]);
    expect(out.judge).toMatchObject({ decision: "pick", index: 1 });
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("1\ngated\n");
    expect(git(ws.dir, "show", "loopgraph/crash/coder-0:log.txt")).toBe("0\n");
    expect(git(ws.dir, "show", "loopgraph/crash/coder-2:log.txt")).toBe("2\n");
  });
});

describe("best-of-N rounds in the Looper (graphs/coder-review-best-of-n.yaml)", () => {
  it("round 1's attempts all fail their check, so the Judge continues; round 2's attempts begin again from the workspace, the second passes, is picked and applied; status shows each attempt", async () => {
    const ws = repo();
    const script = join(ROOT, "examples/coder-review-best-of-n.script.yaml");
    const result = await run(ws, { ...spec("loop", script, ["--attempts", "2"]), graph: "coder-review-best-of-n" });
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const auto = parseEvents(result.stdout)
      .filter((event) => event.type === "message" && typeof event.content === "string" && event.content.startsWith("[AUTO]"))
      .map((event) => event.content as string);
    expect(auto).toContain("[AUTO] review of 2 attempts: 1 critical, check failed; 2 critical, check failed");
    expect(auto.some((line) => line.startsWith("[AUTO] round 2/3 started: isPalindrome must ignore case"))).toBe(true);
    expect(auto).toContain(
      "[AUTO] judge: picked attempt 2 (model): its tests pass and it ignores case, spaces and punctuation; applied 3 files to the workspace",
    );
    expect(readFileSync(join(ws.dir, "palindrome.js"), "utf8")).toContain('replace(/[^a-z0-9]/g, "")');
    // Each attempt's branch began again from the workspace for round 2.
    expect(git(ws.dir, "log", "--format=%s", "loopgraph/loop/coder-0")).toContain("the workspace when loopgraph/loop/coder-0 began again");

    const status = await runCli(["status", "loop", "--json", "--db", ws.db]);
    expect(JSON.parse(status.stdout).attempts).toEqual([
      { attempt: 1, coder: "succeeded", review: "critical", check: "failed" },
      { attempt: 2, coder: "succeeded", review: "normal", check: "passed", picked: true },
    ]);
    expect((await runCli(["status", "loop", "--db", ws.db])).stdout).toContain(
      "attempt 2: succeeded · review normal · check passed · picked",
    );
    // The Looper's apply is snapshotted as a merge is: rewinding to the last Judge's checkpoint takes its files back out.
    const judged = (await historyOf(ws.db, "loop")).checkpoints.filter((checkpoint) => checkpoint.nodes.includes("judge")).at(-1)!;
    const rewound = await runCli(["rewind", "loop", judged.checkpointId, "--db", ws.db]);
    expect(rewound.code, rewound.stderr).toBe(0);
    expect(existsSync(join(ws.dir, "palindrome.js"))).toBe(false);
  });
});
