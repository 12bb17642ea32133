/**
 * The eight usage scenarios of the Monitor (the Mediator and its background Looper), end to end
 * through one piped `loopgraph chat`, in order: each test is one scenario and goes on from the
 * chat the test before left. The scripted model holds the Coder at gate files the tests create.
 */
import { copyFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, runCli, type CliResult } from "../helpers/cli.js";
import { finalState } from "../helpers/e2e.js";
import { PipedChat } from "../helpers/piped-chat.js";
import { sharedWorkspace, type Workspace } from "../helpers/workspace.js";

const SCRIPT = join(ROOT, "tests/fixtures/monitor/scenarios.script.yaml");

describe("the Monitor's usage scenarios, through loopgraph chat", () => {
  const ws: Workspace = sharedWorkspace({ git: true, files: { "notes.txt": "start\n" } });
  let chat: PipedChat;
  /** Where in the chat's output the scenario before ended. */
  let mark = 0;
  const open = (gate: number): void => writeFileSync(join(ws.root, `gate-${gate}`), "");
  const statusJson = async (): Promise<{ state: string; subState: string | null; round: number; pending: string[]; shouldStop: boolean }> =>
    JSON.parse((await runCli(["status", "mon", "--json", "--db", ws.db])).stdout);

  beforeAll(() => {
    const script = join(ws.root, "scenarios.script.yaml");
    copyFileSync(SCRIPT, script);
    chat = new PipedChat(
      ["--thread", "mon", "--workspace", ws.dir, "--db", ws.db, "--model", `scripted:${script}`, "--approval", "auto"],
      ws.dir,
      "caller",
    );
  });

  // Before the shared workspace is removed (afterAll hooks run last first).
  afterAll(async () => {
    chat.child.kill("SIGKILL");
    await chat.done;
  });

  it("2. start a loop directly: `start: <task>` goes to the Looper, not the Mediator", async () => {
    chat.say("start: Write a.txt containing A.");
    mark = await chat.until("started: the loop runs in the background");
    mark = await chat.until("[AUTO] round 1/5 started: Write a.txt containing A.", mark);
    expect(await statusJson()).toMatchObject({ state: "RUNNING", round: 1, subState: "WAITING_CODER" });
  });

  it("4. ask the Looper's status: /status directly, or the Mediator, while the Coder works", async () => {
    chat.say("/status");
    mark = await chat.until("sub-state: WAITING_CODER", mark);
    chat.say("how is it going?");
    mark = await chat.until("◆ The loop is in round 1; the Coder is working on a.txt.", mark);
  });

  it("3. the Looper runs a round of Coder → Review → Judge", async () => {
    open(1);
    mark = await chat.until("[AUTO] coder succeeded (", mark);
    mark = await chat.until("[AUTO] review rating: normal", mark);
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("A\n");
    // The Judge is deciding (its model call held at gate-3).
    expect(await statusJson()).toMatchObject({ state: "RUNNING", round: 1, subState: "JUDGE", pending: [] });
  });

  it("5. add a pending task while the loop runs: queued, shown by status", async () => {
    chat.say("add: Write b.txt containing B.");
    mark = await chat.until('queued: "Write b.txt containing B."', mark);
    expect(await statusJson()).toMatchObject({ subState: "JUDGE", pending: ["Write b.txt containing B."] });
  });

  it("6. the pending task is taken in at the right time: queued while the Judge decided to end the loop, it makes the Judge decide again, into the next round", async () => {
    open(3);
    mark = await chat.until("[AUTO] judge: terminate (model): a.txt is written", mark);
    mark = await chat.until(
      '[AUTO] 1 task queued while the judge decided ("Write b.txt containing B."): the judge decides again with it',
      mark,
    );
    mark = await chat.until("[AUTO] judge: continue", mark);
    mark = await chat.until("[AUTO] round 2/5 started: Write b.txt containing B.", mark);
    expect(await statusJson()).toMatchObject({ round: 2, subState: "WAITING_CODER", pending: [] });
  });

  it("7. stop the running loop: it ends at the Coder's next step, nothing more is written", async () => {
    chat.say("/stop");
    mark = await chat.until("stopping", mark);
    expect((await statusJson()).shouldStop).toBe(true);
    open(2);
    mark = await chat.until("[AUTO] loop ended: stopped by user", mark);
    expect(existsSync(join(ws.dir, "b.txt"))).toBe(false);
    mark = await chat.until("◆ Summary 1: a.txt is written; you stopped the loop in round 2.", mark);
    // What happened and what to do: the loop ended, nothing to resume.
    chat.say("/status");
    mark = await chat.until("run: ended, stopped by user (thread mon.loop): nothing to resume; start: <task> begins a new loop", mark);
  });

  it("1. hand a task to the Mediator: it starts the loop, which runs to its end, and sums up", async () => {
    chat.say("please write c.txt");
    mark = await chat.until("◆ Started the loop on c.txt.", mark);
    mark = await chat.until("[AUTO] loop ended: c.txt is written", mark);
    mark = await chat.until("◆ Summary 2: c.txt is written and reviewed.", mark);
    expect(readFileSync(join(ws.dir, "c.txt"), "utf8")).toBe("C\n");
  });

  it("8. [AUTO] progress reaches the chat as it happens, one prefix per entry, no internal lines; the Mediator reads it in the order it came", async () => {
    const auto = chat.output.split("\n").filter((line) => line.includes("[AUTO]"));
    expect(auto.length).toBeGreaterThanOrEqual(10);
    expect(chat.output).not.toMatch(/\[AUTO\] ignored /);
    chat.end();
    const result: CliResult = await chat.done;
    expect(result.code, result.stderr).toBe(0);

    // The Mediator's log, which each of its requests repeats: progress printed before a message comes before it.
    type Message = { type: string; name?: string; content: string };
    const { messages } = await finalState<{ messages: Message[] }>(ws.db, "mon");
    const indices = (match: (m: Message) => boolean): number[] => messages.flatMap((m, i) => (match(m) ? [i] : []));
    const [asked] = indices((m) => m.type === "human" && m.content === "how is it going?");
    const [started] = indices((m) => m.name === "looper" && m.content.includes("[AUTO] round 1/5 started: Write a.txt"));
    expect(started).toBeLessThan(asked!);
    // Each request for a summary comes after the progress lines of the loop's end, not before them.
    const requests = indices((m) => m.name === "looper" && m.content.includes("Sum up for the user"));
    const ends = indices((m) => m.name === "looper" && m.content.includes("[AUTO] loop ended:") && !m.content.includes("Sum up"));
    expect(requests).toHaveLength(2);
    expect(ends).toHaveLength(2);
    for (const [n, request] of requests.entries()) expect(ends[n]).toBeLessThan(request);
  });
});
