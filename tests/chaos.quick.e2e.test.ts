/**
 * The chaos suite (tests/chaos/run.ts, `npm run chaos`) in its short form (`--quick`): runs of the
 * built CLI killed with SIGKILL at random moments and resumed, killed before their first
 * checkpoint, two resumes racing on one killed thread, processes side by side on one store, and
 * runs whose store another program locks, or that is damaged or full.
 * The runner is a real process; its last line is the verdict (see docs/chaos.md).
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { collect, ROOT, type CliResult } from "./helpers/cli.js";
import { judgeLog } from "./chaos/log.js";

const LAST_LINE =
  /^chaos: trials=(\d+) identical=(\d+) inflight_rerun=(\d+) doubled=(\d+) stuck=(\d+) double_owner=(\d+) busy_errors=(\d+) stack_traces=(\d+)$/;

describe("the chaos suite, short", () => {
  let result: CliResult;
  let counts: Record<"trials" | "identical" | "inflight" | "doubled" | "stuck" | "doubleOwner" | "busy" | "stackTraces", number>;
  beforeAll(async () => {
    const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "tests/chaos/run.ts"), "--quick"], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    result = await collect(child);
    const match = LAST_LINE.exec(result.stdout.trimEnd().split("\n").at(-1) ?? "");
    if (!match) throw new Error(`the runner's last line is not the summary:\n${result.stdout}\n${result.stderr}`);
    const [trials, identical, inflight, doubled, stuck, doubleOwner, busy, stackTraces] = match.slice(1).map(Number) as number[];
    counts = {
      trials: trials!,
      identical: identical!,
      inflight: inflight!,
      doubled: doubled!,
      stuck: stuck!,
      doubleOwner: doubleOwner!,
      busy: busy!,
      stackTraces: stackTraces!,
    };
  }, 240_000);

  it("runs killed at random moments or before their first checkpoint, or whose store is locked, damaged or full, resume to the uninterrupted run's log: no stored step runs twice, none is stuck", () => {
    // The failure message is the runner's report: which trial, what differed.
    expect({ trials: counts.trials, identical: counts.identical, doubled: counts.doubled, stuck: counts.stuck }, result.stdout).toEqual({
      trials: 6,
      identical: 6,
      doubled: 0,
      stuck: 0,
    });
  });

  it("a store locked by another program, damaged or full ends every command as documented, and no output has a stack trace", () => {
    expect(result.stdout).toMatch(/^\(e\) .*: 1 of 1 ended as documented/m);
    expect(result.stdout).toMatch(/^\(f\) .*: 1 of 1 ended as documented/m);
    expect(result.stdout).toMatch(/^\(g\) .*: 1 of 1 ended as documented/m);
    expect(counts.stackTraces, result.stdout).toBe(0);
  });

  it("processes side by side on one store never report a lock or an internal error", () => {
    expect(result.stdout).toMatch(/^\(c\) 4 concurrent processes .*: [1-9]\d* commands/m);
    expect(counts.busy, result.stdout).toBe(0);
  });

  it("two resumes of one killed thread: only one runs it (the thread's claim is atomic)", () => {
    expect(result.stdout).toMatch(/^\(b\) .*: 2 races/m);
    expect(counts.doubleOwner, result.stdout).toBe(0);
    expect(result.code).toBe(0);
  });
});

describe("the chaos suite's judge of a log", () => {
  const reference = ["A>", "A<", "B>", "B<"];
  it("an in-flight step run again after a kill, its result not stored, is an in-flight re-run; the log is identical", () => {
    const verdict = judgeLog(["A>", "A<", "B>", "B>", "B<"], reference, [{ logLines: 3, stored: new Set(["A"]), checkpoints: 1 }]);
    expect(verdict).toMatchObject({ identical: true, inflightReruns: 1, doubled: 0 });
  });

  it("a step run again although its result was stored at the kill is doubled", () => {
    const verdict = judgeLog(["A>", "A<", "A>", "A<", "B>", "B<"], reference, [{ logLines: 2, stored: new Set(["A"]), checkpoints: 1 }]);
    expect(verdict).toMatchObject({ identical: true, inflightReruns: 0, doubled: 1 });
  });

  it("a step run twice with no kill between is doubled; a missing line is not identical", () => {
    expect(judgeLog(["A>", "A<", "A>", "A<", "B>", "B<"], reference, [])).toMatchObject({ doubled: 1 });
    expect(judgeLog(["A>", "A<", "B>"], reference, [])).toMatchObject({ identical: false, doubled: 0 });
  });
});
