import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { eventually, hasStackTrace, parseEvents, processAlive, ROOT, runCli } from "./helpers/cli.js";
import { chatArgs, PipedChat } from "./helpers/piped-chat.js";
import { finalState, gatedScript, recordedStatus, threadsOf } from "./helpers/e2e.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

const repo = (): Workspace => tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });

/** A copy of a chat script of tests/fixtures/mediator in `ws`'s folder, whose Coder answers once `open("gate-coder")`. */
const gated = (ws: Workspace, script: string) => gatedScript(ws, join(ROOT, "tests/fixtures/mediator", script));

interface LoopState {
  loopState: { value: unknown; context: { round: number; pending: string[]; endReason?: string } };
  messages: Array<{ type: string; name?: string; content: unknown; tool_calls?: Array<{ name: string }> }>;
}

const autoLines = (state: LoopState): string[] =>
  state.messages.flatMap((m) => (typeof m.content === "string" && m.content.startsWith("[AUTO]") ? [m.content] : []));

async function threadIds(db: string): Promise<string[]> {
  return (await threadsOf(db)).map((t) => t.threadId);
}

describe("the Mediator and `loopgraph chat`", () => {
  it("answers a simple question itself; starts a loop, answers while it runs, reports status and takes an added task at the next Judge", async () => {
    const ws = repo();
    const { script, open } = gated(ws, "chat-add.script.yaml");
    const chat = new PipedChat(chatArgs(ws, "talk", script), ws.dir);

    chat.say("what does this repo do?");
    await chat.until("there is no code yet");
    expect(await threadIds(ws.db)).toEqual(["talk"]);

    chat.say("please write a.txt containing A");
    const forwarded = await chat.until("Forwarded to the Looper");
    expect(chat.output).toContain("send_to_looper");
    expect(await threadIds(ws.db)).toContain("talk.loop");

    // A second message while the Coder works (it answers once the test opens its gate): the answer comes before the Coder is done.
    chat.say("how is it going?");
    const answered = await chat.until("Round 1 is under way", forwarded);
    expect(chat.output.slice(0, answered)).not.toContain("coder succeeded");
    expect(chat.output).toContain("query_looper_status");

    // Status directly, from another process (the chat's thread leads to its loop) and in the chat.
    const status = await runCli(["status", "talk", "--db", ws.db]);
    expect(status.stdout).toContain("state: RUNNING");
    expect(status.stdout).toContain("round: 1/5");
    expect(status.stdout).toContain("sub-state: WAITING_CODER");
    chat.say("/status");
    await chat.until("run: running in the background", answered);

    chat.say("could you also write b.txt?");
    const added = await chat.until("b.txt comes after this round", answered);
    expect(chat.output.slice(0, added)).not.toContain("coder succeeded");
    const queued = JSON.parse((await runCli(["status", "talk.loop", "--json", "--db", ws.db])).stdout) as { pending: string[] };
    expect(queued.pending).toEqual(["Write b.txt containing B."]);
    open("gate-coder");

    // The loop's end is summed up by the Mediator, unasked.
    const ended = await chat.until("[AUTO] loop ended");
    await chat.until("◆ Summary: a.txt and b.txt are written", ended);
    chat.end();
    const result = await chat.done;
    expect(result.code, result.stderr + chat.output).toBe(0);
    expect(hasStackTrace(result.stderr)).toBe(false);
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("A\n");
    expect(readFileSync(join(ws.dir, "b.txt"), "utf8")).toBe("B\n");

    // The added task was taken up at the first Judge and became round 2's task.
    const loop = await finalState<LoopState>(ws.db, "talk.loop");
    const auto = autoLines(loop).join("\n");
    expect(auto).toContain("judge: continue (model): Write b.txt containing B.");
    expect(auto).toContain("round 2/5 started: Write b.txt containing B.");
    expect(loop.loopState.context.pending).toEqual([]);
    expect(loop.loopState.context.endReason).toBe("a.txt and b.txt are written");
    // [AUTO] lines were shown in the chat as they came.
    expect(chat.output).toContain("[AUTO] round 1/5 started: Write a.txt containing A.");
    expect(chat.output).toContain("[AUTO] round 2/5 started");

    // The Mediator's thread keeps the conversation and the tool calls; its later turns relayed the loop's progress.
    const mediator = await finalState<LoopState>(ws.db, "talk");
    const toolCalls = mediator.messages.flatMap((m) => m.tool_calls?.map((c) => c.name) ?? []);
    expect(toolCalls).toEqual(["send_to_looper", "query_looper_status", "send_to_looper"]);
    expect(mediator.messages.some((m) => m.name === "looper" && String(m.content).includes("[AUTO] round 1/5 started"))).toBe(true);
  });

  it("stops a running loop through the Mediator: the Coder's call in flight finishes, its tool call never runs", async () => {
    const ws = repo();
    const { script, open } = gated(ws, "chat-stop.script.yaml");
    const chat = new PipedChat(chatArgs(ws, "halt", script), ws.dir);
    chat.say("write a.txt");
    await chat.until("Started.");
    chat.say("actually, stop it");
    const stopping = await chat.until("Stopping the loop.");
    expect(chat.output.slice(0, stopping)).toContain("stopping: the loop ends after the step in progress");
    // The Coder's model call answers only now, after the stop.
    open("gate-coder");
    await chat.until("[AUTO] loop ended");
    chat.end();
    const result = await chat.done;
    // Piped input ended after the loop was stopped by the user: the loop's code, interrupted.
    expect(result.code, result.stderr + chat.output).toBe(130);
    expect(chat.output).toContain("■ the loop ended: the loop was stopped by the user (stop command)");
    // The summary turn runs outside the Mediator turn that started the loop: it takes the next scripted answer.
    expect(chat.output.indexOf("◆ Summary: the loop was stopped by you")).toBeGreaterThan(chat.output.indexOf("■ the loop ended"));
    expect(chat.output.match(/send_to_looper \{"command":"start"/g)).toHaveLength(1);
    const loop = await finalState<LoopState>(ws.db, "halt.loop");
    expect(loop.loopState.value).toBe("IDLE");
    expect(loop.loopState.context.endReason).toBe("stopped by user");
    // The stop came during the Coder's model call (held at its gate): the write_file it answered with never ran.
    expect(existsSync(join(ws.dir, "a.txt"))).toBe(false);
    expect(autoLines(loop)).toContain("[AUTO] coder stopped by the stop command before its next step");
  });

  it("`run monitor --task` forwards the task, waits for the loop, then prints the Mediator's summary; [AUTO] lines show in the output and in inspect", async () => {
    const ws = repo();
    const run = await runCli(
      [
        "run",
        "monitor",
        "--task",
        "Add isPalindrome(text) in palindrome.js, with a test.",
        "--thread",
        "mon",
        "--workspace",
        ws.dir,
        "--db",
        ws.db,
        "--model",
        `scripted:${join(ROOT, "examples/monitor.script.yaml")}`,
        "--approval",
        "auto",
      ],
      { cwd: ws.dir },
    );
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.stdout).toContain("[AUTO] round 2/5 started");
    // The loop thread's lines carry its role; the Mediator's lines after them come under its own header again.
    expect(run.stdout).toContain("[loop] ● coder\n");
    expect(run.stdout).toMatch(/\n\[loop\] {3}\[AUTO\] round 1\/5 started/);
    const lines = run.stdout.split("\n");
    const result = lines.findIndex((text) => text.startsWith("  ↳ started: the loop runs in the background"));
    const header = lines.slice(0, result).findLast((text) => /^(\[loop\] )?● /.test(text));
    expect(header).toMatch(/^● mediator/);
    expect(run.stdout.trimEnd().split("\n").at(-1)).toMatch(
      /^✔ finished {2}thread mon {2}\([\d.]+k tokens in, \d+ out, [\d.]+ s; round 1: [\d.k]+ in, \d+ out · round 2: [\d.k]+ in, \d+ out\)$/,
    );
    const summary = run.stdout.indexOf("Done: palindrome.js has isPalindrome");
    expect(summary).toBeGreaterThan(run.stdout.indexOf("[AUTO] loop ended"));
    expect(run.stdout).toContain("finished");
    expect(existsSync(join(ws.dir, "palindrome.test.js"))).toBe(true);

    const inspected = await runCli(["inspect", "mon.loop", "--db", ws.db]);
    expect(inspected.stdout).toContain("[AUTO] round 1/5 started");
    const mediator = await finalState<LoopState>(ws.db, "mon");
    expect(mediator.messages.some((m) => m.name === "looper" && String(m.content).includes("[AUTO] loop ended"))).toBe(true);
    expect(String(mediator.messages.at(-1)!.content)).toContain("Done: palindrome.js");
  });

  it("`run monitor --json` prints the events of both threads, each with its thread id; both replay from their records", async () => {
    const ws = repo();
    const run = await runCli(
      [
        "run",
        "monitor",
        "--task",
        "t",
        "--thread",
        "js",
        "--workspace",
        ws.dir,
        "--db",
        ws.db,
        "--model",
        `scripted:${join(ROOT, "examples/monitor.script.yaml")}`,
        "--approval",
        "auto",
        "--json",
      ],
      { cwd: ws.dir },
    );
    expect(run.code, run.stderr).toBe(0);
    const events = parseEvents(run.stdout);
    expect(events.some((e) => e.threadId === "js" && e.type === "tool_call" && e.name === "send_to_looper")).toBe(true);
    expect(events.some((e) => e.threadId === "js.loop" && e.type === "message" && String(e.content).startsWith("[AUTO]"))).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: "run_finished", threadId: "js", status: "finished", exitCode: 0 });

    // Both threads replay from their records: the chat's two runs (the task, then the summary) with their inputs, starting no loop.
    for (const thread of ["js", "js.loop"]) {
      const replay = await runCli(["replay", thread, "--recorded", "--db", ws.db], { cwd: ws.dir });
      expect(replay.code, replay.stderr + replay.stdout).toBe(0);
      expect(replay.stdout).toContain("consistent");
    }
    expect((await threadIds(ws.db)).filter((id) => id.endsWith(".loop"))).toEqual(["js.loop"]);
  });

  it("Ctrl-C again while leaving quits at once: the loop's thread is recorded interrupted, not left running", async () => {
    const ws = repo();
    const chat = new PipedChat([...chatArgs(ws, "quit", "chat-quit.script.yaml"), "--no-sandbox"], ws.dir);
    chat.say("wait for a while");
    await chat.until("Started.");
    // The loop's Coder runs a command that ignores SIGTERM: stopping it takes the 2 s before it is killed.
    expect(
      await eventually(
        () => processAlive("sleep 29.8764"),
        (alive) => alive,
        40_000,
      ),
    ).toBe(true);

    chat.child.kill("SIGINT");
    await chat.until("Ctrl-C again or Ctrl-D to leave");
    chat.child.kill("SIGINT");
    await chat.until("Stopping the loop now");
    chat.child.kill("SIGINT");
    const left = await chat.done;
    expect(left.code, left.stderr).toBe(130);
    expect(chat.output).toContain("The loop was interrupted. Continue with: loopgraph chat --thread quit  (or loopgraph resume quit.loop)");
    expect(await recordedStatus(ws.db, "quit.loop")).toBe("interrupted");
    expect(
      await eventually(
        () => processAlive("sleep 29.8764"),
        (alive) => !alive,
      ),
    ).toBe(false);
  });

  it("after kill -9 of the chat while the loop runs, `chat --thread` shows the history and the loop's state, and `resume` finishes the loop", async () => {
    const ws = repo();
    const { script, open } = gated(ws, "chat-slow.script.yaml");
    const chat = new PipedChat(chatArgs(ws, "crash", script), ws.dir);
    chat.say("write a.txt");
    await chat.until("Forwarded to the Looper.");
    await chat.until("[AUTO] round 1/5 started");
    // Killed while the Coder waits at its gate; the resume below gets past it.
    chat.child.kill("SIGKILL");
    await chat.done;
    open("gate-coder");

    const reopened = new PipedChat(chatArgs(ws, "crash", script), ws.dir);
    reopened.say("/status");
    reopened.say("/inspect");
    reopened.end();
    const shown = await reopened.done;
    expect(shown.code, shown.stderr + reopened.output).toBe(0);
    expect(reopened.output).toContain("you› write a.txt");
    expect(reopened.output).toContain("◆ Forwarded to the Looper.");
    expect(reopened.output).toContain("state: RUNNING");
    expect(reopened.output).toContain("sub-state: WAITING_CODER");
    expect(reopened.output).toContain("run: interrupted");
    expect(reopened.output).toMatch(/thread crash\.loop[\s\S]*#\s+STEP\s+NODE/);

    // Resuming the chat's thread continues its loop to the end, then the Mediator sums up.
    const resumed = await runCli(["resume", "crash", "--db", ws.db]);
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    expect(resumed.stdout).toContain("[AUTO] loop ended: a.txt is written");
    expect(resumed.stdout).toContain("It is going well.");
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("A\n");
    const loop = await finalState<LoopState>(ws.db, "crash.loop");
    expect(loop.loopState.value).toBe("IDLE");
    const again = await runCli(["resume", "crash", "--db", ws.db]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("nothing to resume");
  });

  it("rejects a chat on a graph without a mediator, without a model (naming the offline script) or with a bad thread id, in one line with exit 2", async () => {
    const ws = repo();
    const noMediator = await runCli(["chat", "--graph", "coder-review", "--workspace", ws.dir, "--db", ws.db], { cwd: ws.dir });
    expect(noMediator.code).toBe(2);
    expect(noMediator.stderr.trim()).toBe("loopgraph: graph coder-review has no mediator node: chat needs a graph like monitor");
    const noModel = await runCli(["chat", "--workspace", ws.dir, "--db", ws.db], { cwd: ws.dir });
    expect(noModel.code).toBe(2);
    expect(noModel.stderr.trim()).toBe(
      `loopgraph: no model configured: pass --model provider:model or set LOOPGRAPH_MODEL (e.g. openai:gpt-4o-mini with OPENAI_API_KEY); to try offline: --model scripted:${join(ROOT, "examples/monitor.script.yaml")}`,
    );
    const badId = await runCli(["chat", "--thread", "../x", "--workspace", ws.dir, "--db", ws.db, "--model", "scripted:x.yaml"], {
      cwd: ws.dir,
    });
    expect(badId.code).toBe(2);
    expect(hasStackTrace(badId.stderr)).toBe(false);
  });
});
