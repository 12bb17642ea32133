/**
 * `loopgraph eval` as a user runs it, on the shipped starter suite (examples/evals/) with its
 * scripted models: the report's pass rate with its interval and the tasks that did not pass, two
 * variants compared, the JSON and JUnit outputs checked against their formats, and an eval killed
 * with SIGKILL mid-trial that `--resume` finishes without running a finished trial again.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { evalReportSchema } from "../src/eval/report-schema.js";
import { withTables } from "../src/store/tables.js";
import { collect, eventually, hasStackTrace, ROOT, runCli, spawnCli, waitForLine } from "./helpers/cli.js";
import { lacks } from "./helpers/requirements.js";
import { tempWorkspace } from "./helpers/workspace.js";
import { parseXml } from "./helpers/xml.js";

const STARTER = join(ROOT, "examples/evals/starter.yaml");
const script = (name: string) => `scripted:${join(ROOT, "examples/evals", name)}`;
const noPython = lacks("python3", "the starter suite's Python tasks");

describe("loopgraph eval", () => {
  it.skipIf(noPython)(
    "reports the starter suite's pass rate with its interval and names the tasks a model that misses three did not pass; JSON and JUnit too",
    async () => {
      const ws = tempWorkspace({ git: "init" });
      const junit = join(ws.root, "report.xml");
      const args = ["eval", STARTER, "--model", script("misses-three.script.yaml"), "--db", ws.db, "--junit", junit, "--json"];
      const result = await runCli(args, { cwd: ws.dir });
      expect(result.code, result.stderr).toBe(0);
      expect(hasStackTrace(result.stderr)).toBe(false);
      // Progress on stderr, one line per trial; the report on stdout.
      expect(result.stderr.split("\n").filter((line) => /^\[\s*\d+\/10\] /.test(line))).toHaveLength(10);
      const report = evalReportSchema.parse(JSON.parse(result.stdout));
      const [variant] = report.variants;
      expect(variant).toMatchObject({ label: "A", run: 10, passed: 7 });
      const { rate, low, high } = variant!.passRate;
      expect([rate, low, high].map((x) => Math.round(x! * 1000))).toEqual([700, 397, 892]);
      const missed = report.tasks.filter((task) => task.variants[0]!.passes === false).map((task) => task.id);
      expect(missed).toEqual(["chunk-remainder", "fizzbuzz-order", "py-leap-year"]);
      const root = parseXml(readFileSync(junit, "utf8"));
      expect(root.attributes).toMatchObject({ tests: "10", failures: "3", errors: "0", skipped: "0" });
      const failed = root.children[0]!.children.filter((testcase) => testcase.children.some((child) => child.name === "failure"));
      expect(failed.map((testcase) => testcase.attributes.name)).toEqual(["chunk-remainder#1", "fizzbuzz-order#1", "py-leap-year#1"]);

      // The same report again, as text: the rate, its interval, the three named.
      const again = await runCli(["eval", "--report", report.eval.id, "--db", ws.db], { cwd: ws.dir });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/^A {2}coder-review \(scripted:.*misses-three\.script\.yaml\)\n {3}7\/10 passed 70% \[40%-89%\] /m);
      for (const task of missed) expect(again.stdout).toMatch(new RegExp(`^A  ${task}#1  check-failed: `, "m"));
      const listed = await runCli(["eval", "--list", "--json", "--db", ws.db], { cwd: ws.dir });
      expect(JSON.parse(listed.stdout).map((record: { id: string; status: string }) => [record.id, record.status])).toEqual([
        [report.eval.id, "finished"],
      ]);
    },
  );

  it("compares two variants: the difference with its interval, and the tasks that changed outcome", async () => {
    const ws = tempWorkspace({ git: "init" });
    const args = ["eval", STARTER, "--tag", "off-by-one", "--tag", "wrong-order", "--concurrency", "2", "--db", ws.db];
    const models = ["--model", script("solves-all.script.yaml"), "--model", script("misses-three.script.yaml")];
    const result = await runCli([...args, ...models], { cwd: ws.dir });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^eval of starter: 3 tasks × 2 variants × 1 = 6 trials$/m);
    expect(result.stdout).toMatch(/^A {2}coder-review \(scripted:.*solves-all\.script\.yaml\)\n {3}3\/3 passed 100% \[44%-100%\] /m);
    expect(result.stdout).toMatch(/^B {2}coder-review \(scripted:.*misses-three\.script\.yaml\)\n {3}1\/3 passed 33% \[6%-79%\] /m);
    expect(result.stdout).toMatch(/^B - A: -67 points \[-94 to \+6\]$/m);
    expect(result.stdout).toMatch(/^ {2}lost: chunk-remainder, fizzbuzz-order$/m);

    // The recorded trials, against the graph they ran: every path the same, exit 0, no model call.
    const id = /^eval (e-[0-9a-f]{8}):/m.exec(result.stdout)![1]!;
    const recheck = await runCli(["eval", "--recorded", id, "--graph", "coder-review", "--variant", "B", "--db", ws.db], { cwd: ws.dir });
    expect(recheck.stdout).toBe("0 of 3 trials of variant B would take another path; 3 the same\n");
    expect(recheck.code).toBe(0);

    // `threads prune --eval`: the eval, its threads and the workspaces made for them.
    const pruned = await runCli(["threads", "prune", "--eval", id, "--db", ws.db], { cwd: ws.dir });
    expect(pruned.stdout).toMatch(/^deleted eval e-[0-9a-f]{8} \(6 threads\)$/m);
    expect((await runCli(["eval", "--list", "--db", ws.db], { cwd: ws.dir })).stdout).toBe(
      "no evals yet: run one with `loopgraph eval SUITE`\n",
    );
  });

  it("stopped by Ctrl-C, then killed with SIGKILL mid-trial, `eval --resume` finishes it without running a finished trial again", async () => {
    const ws = tempWorkspace({ git: "init" });
    // solves-all, held at the summary of range-inclusive's Coder (after its fix is written) until the gate exists.
    const gate = join(ws.root, "gate");
    const held = readFileSync(join(ROOT, "examples/evals/solves-all.script.yaml"), "utf8").replace(
      "content: 'range now includes its end.'",
      `wait_for: ${JSON.stringify(gate)}\n    content: 'range now includes its end.'`,
    );
    const gated = join(ws.root, "gated.script.yaml");
    writeFileSync(gated, held);
    const args = ["eval", STARTER, "--tag", "wrong-operator", "--tag", "off-by-one", "--model", `scripted:${gated}`, "--db", ws.db];
    const store = { db: ws.db, env: {} };
    const trial = (task: string) =>
      withTables(store, "read", async (tables) => {
        const [record] = await tables.evals.list();
        const trials = await tables.evals.trials(record!.id);
        const found = trials.find((one) => one.task === task)!;
        return { record: record!, trial: found, thread: await tables.threads.get(found.threadId) };
      });
    const running = () =>
      eventually(
        () => trial("range-inclusive"),
        (found) => found.thread?.status === "running",
      );
    // Ctrl-C while range-inclusive waits at its gate: the trial in flight stops, exit 130, how to continue.
    const first = spawnCli(args, { cwd: ws.dir });
    const stopped = collect(first);
    await waitForLine(first, (line) => line.startsWith("[1/3] ✓ passed") && line.includes("sum-adds"));
    await running();
    first.kill("SIGINT");
    const interrupted = await stopped;
    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect(interrupted.stderr).toMatch(/^■ stopped {2}eval (e-[0-9a-f]{8}): continue with: loopgraph eval --resume \1 --db /m);
    expect(hasStackTrace(interrupted.stderr)).toBe(false);
    expect((await trial("range-inclusive")).thread?.status).toBe("interrupted");
    // Resumed, range-inclusive's run goes back to its gate; killed there.
    const { record } = await trial("range-inclusive");
    const child = spawnCli(["eval", "--resume", record.id, "--db", ws.db], { cwd: ws.dir });
    const done = collect(child);
    const cut = await running();
    const finished = await trial("sum-adds");
    child.kill("SIGKILL");
    expect((await done).signal).toBe("SIGKILL");
    writeFileSync(gate, "");

    const resumed = await runCli(["eval", "--resume", cut.record.id, "--db", ws.db], { cwd: ws.dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    const lines = resumed.stdout.split("\n").filter((line) => /^\[\d\/3\] /.test(line));
    expect(lines.map((line) => line.slice(0, 16))).toEqual(["[2/3] ✓ passed  ", "[3/3] ✓ passed  "]);
    expect(resumed.stdout).toMatch(/^ {3}3\/3 passed 100% /m);
    const after = await trial("sum-adds");
    // The finished trial kept its result and its thread was not touched.
    expect(after.trial.result).toEqual(finished.trial.result);
    expect(after.thread!.updatedAt).toBe(finished.thread!.updatedAt);
    // The trial cut off mid-run was resumed on its thread, not started again.
    const range = await trial("range-inclusive");
    expect(range.trial.result?.outcome).toBe("passed");
    expect(range.thread!.createdAt).toBe(cut.thread!.createdAt);
  });

  it("says in one line what is wrong with its input", async () => {
    const ws = tempWorkspace({ git: "init" });
    const none = await runCli(["eval", "--db", ws.db], { cwd: ws.dir });
    expect([none.code, none.stderr.trim()]).toEqual([
      2,
      "loopgraph: loopgraph eval needs a suite file (loopgraph eval SUITE), or --resume ID, --recorded ID, --report ID or --list",
    ]);
    const unknown = await runCli(["eval", "--resume", "e-00000000", "--db", ws.db], { cwd: ws.dir });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^loopgraph: no store at .*: run a graph first/);
    const bad = join(ws.root, "bad.yaml");
    writeFileSync(bad, "version: 1\ntasks:\n  - id: a\n    task: t\n    repo: nowhere\n    chek: { command: true }\n");
    const invalid = await runCli(["eval", bad, "--db", ws.db], { cwd: ws.dir });
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/^loopgraph: .*bad\.yaml:6:5: .*unknown key "chek": did you mean "check"\?/m);
    const provider = await runCli(["eval", STARTER, "--model", "nope:x", "--db", ws.db], { cwd: ws.dir });
    expect([provider.code, provider.stderr]).toEqual([
      2,
      expect.stringMatching(/^loopgraph: unknown model provider "nope" in "nope:x": use one of /),
    ]);
    // A model that cannot start (no key here) stops the eval at its first trial, in one line, resumable once mended.
    const keyless = await runCli(["eval", STARTER, "--tag", "wrong-operator", "--model", "openai:gpt-4o-mini", "--db", ws.db], {
      cwd: ws.dir,
    });
    expect(keyless.code).toBe(2);
    expect(keyless.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^loopgraph: .*OPENAI_API_KEY/)]);
    const listed = JSON.parse((await runCli(["eval", "--list", "--json", "--db", ws.db], { cwd: ws.dir })).stdout);
    expect(listed.map((record: { status: string }) => record.status)).toEqual(["stopped"]);
    expect(hasStackTrace(invalid.stderr + unknown.stderr + keyless.stderr)).toBe(false);
  });
});
