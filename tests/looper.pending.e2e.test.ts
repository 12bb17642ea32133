/**
 * Issue 13, deliverable 2, end to end through the CLI: no queued task is lost, whenever
 * `send T "add: …"` arrives: while WAITING_CODER, WAITING_REVIEW, JUDGE, or during the last Judge
 * (the loop then ends at its round limit). Each phase is held until the test creates its gate file
 * (the script's `wait_for`), however slow the machine; the test waits
 * on the run's `--json` events, then checks with `status --json` that the send landed in that
 * phase and that the task is listed as queued.
 */
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, runCli } from "./helpers/cli.js";
import { finalState, gatedScript, resume, startCli, startRun } from "./helpers/e2e.js";
import { tempWorkspace } from "./helpers/workspace.js";

const SCRIPT = join(ROOT, "tests/fixtures/looper/pending-moments.script.yaml");

interface StatusJson {
  state: "IDLE" | "RUNNING";
  subState: string | null;
  round: number;
  pending: string[];
  endReason?: string;
}

interface State {
  task: string;
  loopTask: string;
  loopState: { context: { pending: string[]; round: number; endReason?: string } };
  messages: Array<{ name?: string; content: string }>;
}

const autoLines = (state: State): string[] =>
  state.messages.map((m) => m.content).filter((content) => typeof content === "string" && content.startsWith("[AUTO]"));

describe("no queued task is lost (issue 13, deliverable 2), end to end", () => {
  it("a task added while WAITING_CODER, WAITING_REVIEW, JUDGE or during the last Judge (round limit or terminate) is taken into the next round or kept, listed, and taken up by the next start or add:", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const status = async (): Promise<StatusJson> => {
      const shown = await runCli(["status", "q", "--json", "--db", ws.db]);
      expect(shown.code, shown.stderr).toBe(0);
      return JSON.parse(shown.stdout) as StatusJson;
    };
    /** `send q "add: <task>"`, then status: the phase it landed in, and the queue. */
    const add = async (task: string): Promise<StatusJson> => {
      const sent = await runCli(["send", "q", `add: ${task}`, "--db", ws.db]);
      expect(sent.code, sent.stderr).toBe(0);
      return status();
    };

    // The script's gates (gate-1 …) are files beside it: a copy in the test's folder.
    const script = join(ws.root, "pending.script.yaml");
    copyFileSync(SCRIPT, script);
    const open = (gate: number): void => writeFileSync(join(ws.root, `gate-${gate}`), "");
    const running = startRun(ws, {
      graph: "coder-review",
      task: "write the notes",
      thread: "q",
      script,
      approval: "auto",
      extra: ["--max-rounds", "2"],
    });
    await running.waitForNode("coder");
    expect(await add("task-A")).toMatchObject({ state: "RUNNING", round: 1, subState: "WAITING_CODER", pending: ["task-A"] });
    open(1);
    await running.waitForNode("review");
    expect(await add("task-B")).toMatchObject({ round: 1, subState: "WAITING_REVIEW", pending: ["task-A", "task-B"] });
    open(2);
    const judge1 = await running.waitForNode("judge");
    // The Judge has read A and B; C arrives while it runs: its decision to go on takes C into the next round too.
    expect(await add("task-C")).toMatchObject({ round: 1, subState: "JUDGE", pending: ["task-A", "task-B", "task-C"] });
    open(3);
    await running.waitForNode("judge", "node_started", { after: judge1 });
    // C, queued while round 1's Judge decided to go on, went into round 2 with A and B; D arrives during the last Judge of the loop.
    expect(await add("task-D")).toMatchObject({ round: 2, subState: "JUDGE", pending: ["task-D"] });
    open(4);

    const ended = await running.done;
    expect(ended.code, ended.stderr).toBe(4);
    const state = await finalState<State>(ws.db, "q");
    // A and B (added while WAITING_CODER and WAITING_REVIEW) went into round 2's task, and C (added while its Judge decided) after them.
    expect(state.task).toContain("## Queued by the user\n- task-A\n- task-B\n- task-C");
    expect(autoLines(state)).toContain('[AUTO] 1 task queued while the judge decided ("task-C"): taken into the next round');
    const judged = state.messages.filter((m) => m.name === "judge").map((m) => m.content);
    expect(judged[0]).toContain("took 2 pending messages");
    // D (added while the last Judge decided to end the loop) makes it decide again; the loop then ends at its round limit, D kept and listed.
    expect(autoLines(state)).toContain('[AUTO] 1 task queued while the judge decided ("task-D"): the judge decides again with it');
    expect(autoLines(state).at(-1)).toBe(
      '[AUTO] loop ended: round limit (after round 2/2); 1 queued task not done, kept for the next start: "task-D"',
    );
    expect(await status()).toMatchObject({ state: "IDLE", subState: null, pending: ["task-D"], endReason: "round limit" });

    // The next start takes them up: its round-1 task lists them after its own (the resume keeps the round limit the thread's loop started with, 2).
    const started = await runCli(["send", "q", "start: task-S", "--db", ws.db]);
    expect(started.code, started.stderr).toBe(0);
    const resumed = startCli(["resume", "q", "--db", ws.db, "--json"]);
    await resumed.waitForNode("judge");
    // E arrives while the Judge that ends this loop decides: it decides again with E, and round 2 does E.
    expect(await add("task-E")).toMatchObject({ round: 1, subState: "JUDGE", pending: ["task-E"] });
    open(5);
    const resumedEnd = await resumed.done;
    expect(resumedEnd.code, resumedEnd.stderr + resumedEnd.stdout.slice(-2000)).toBe(0);
    const next = await finalState<State>(ws.db, "q");
    expect(next.loopTask).toBe("task-S\n\nAlso queued before this start:\n- task-D");
    expect(autoLines(next)).toContain('[AUTO] round 1/2 started: task-S (and 1 task queued before: "task-D")');
    expect(autoLines(next)).toContain('[AUTO] 1 task queued while the judge decided ("task-E"): the judge decides again with it');
    expect(autoLines(next)).toContainEqual(expect.stringMatching(/^\[AUTO\] round 2\/2 started: Do task-E\./));
    expect(next.task).toMatch(/^Do task-E\.\n/);
    expect(next.loopState.context).toMatchObject({ round: 2, pending: [], endReason: "task-E done" });
    expect(autoLines(next).at(-1)).toBe("[AUTO] loop ended: task-E done (after round 2/2)");
    expect(await status()).toMatchObject({ state: "IDLE", pending: [] });

    // After the loop ended, `add:` to the idle loop starts the next one.
    expect(await add("task-F")).toMatchObject({ state: "IDLE", pending: ["task-F"] });
    // `resume --max-rounds` sets the round limit of the loop it starts.
    const last = await resume(ws, "q", "--json", "--max-rounds", "3");
    expect(last.code, last.stderr + last.stdout.slice(-2000)).toBe(0);
    const final = await finalState<State>(ws.db, "q");
    expect(final.loopTask).toBe("task-F");
    expect(autoLines(final)).toContainEqual(expect.stringMatching(/^\[AUTO\] round 1\/3 started: task-F/));
    expect(final.loopState.context).toMatchObject({ pending: [], endReason: "all done again" });
    expect(await status()).toMatchObject({ state: "IDLE", pending: [] });
  });

  it("a task sent while the Judge decides to end the loop makes it decide again, and the next round does it: in ask and auto-edit modes, and across kill -9 of the process during the Judge", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const { script, open } = gatedScript(ws, join(ROOT, "tests/fixtures/looper/judge-decides-again.script.yaml"));
    const spec = (thread: string, approval: "ask" | "auto-edit") =>
      ({ graph: "coder-review", task: "write the notes", thread, script, approval }) as const;
    /** `add:` to one thread; to the other in plain words, which the Looper's rules read as add_pending. */
    const sendLate = async (thread: string, text: string): Promise<void> => {
      const sent = await runCli(["send", thread, text, "--db", ws.db]);
      expect(sent.code, sent.stderr).toBe(0);
      const shown = JSON.parse((await runCli(["status", thread, "--json", "--db", ws.db])).stdout) as StatusJson;
      expect(shown).toMatchObject({ state: "RUNNING", round: 1, subState: "JUDGE", pending: ["write late.txt"] });
    };
    // Both Judges wait at one gate: `ask` is killed while its Judge decides, `auto-edit` goes on live.
    const asking = startRun(ws, spec("ja", "ask"));
    const editing = startRun(ws, spec("je", "auto-edit"));
    await Promise.all([asking.waitForNode("judge"), editing.waitForNode("judge")]);
    await Promise.all([sendLate("ja", "add: write late.txt"), sendLate("je", "Please also write late.txt.")]);
    await asking.kill("SIGKILL");
    open("gate-judge");

    const edited = await editing.done;
    expect(edited.code, edited.stderr + edited.stdout.slice(-2000)).toBe(0);
    // `ask`: the resumed Judge decides again with the task; its round pauses for the write, which --approve lets run.
    const paused = await resume(ws, "ja", "--json");
    expect(paused.code, paused.stderr + paused.stdout.slice(-2000)).toBe(3);
    const approved = await resume(ws, "ja", "--approve", "--json");
    expect(approved.code, approved.stderr + approved.stdout.slice(-2000)).toBe(0);
    expect(readFileSync(join(ws.dir, "late.txt"), "utf8")).toBe("late\n");
    for (const thread of ["je", "ja"]) {
      const state = await finalState<State>(ws.db, thread);
      const auto = autoLines(state);
      expect(auto).toContain('[AUTO] 1 task queued while the judge decided ("write late.txt"): the judge decides again with it');
      expect(auto).toContainEqual(expect.stringMatching(/^\[AUTO\] round 2\/5 started: Write late\.txt\./));
      expect(state.loopState.context).toMatchObject({ round: 2, pending: [], endReason: "late.txt is written" });
    }

    // Plain English to a Looper thread is read by its rules, or answered with what it takes.
    const stop = await runCli(["send", "je", "please stop the loop", "--db", ws.db]);
    expect(stop.stdout).toBe('understood "please stop the loop" as: {"command":"stop"}\nno loop is running: nothing to stop.\n');
    const asked = await runCli(["send", "je", "How is it going?", "--db", ws.db]);
    expect(asked.stdout).toContain("state: IDLE");
    const unknown = await runCli(["send", "je", "tell me a joke", "--db", ws.db]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      'not understood as a Looper command: "tell me a joke". Thread je runs a Looper, which takes: stop ("stop", "please stop"',
    );
  });
});
