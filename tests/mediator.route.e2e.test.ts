import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hasStackTrace, ROOT, runCli } from "./helpers/cli.js";
import { finalState, gatedScript } from "./helpers/e2e.js";
import { chatArgs, PipedChat } from "./helpers/piped-chat.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

const repo = (): Workspace => tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });

interface Messages {
  messages: Array<{ type: string; name?: string; content: unknown }>;
}

const pendingOf = async (db: string, thread: string): Promise<string[]> =>
  (JSON.parse((await runCli(["status", thread, "--json", "--db", db])).stdout) as { pending: string[] }).pending;

describe("chat routing: what reaches the Mediator, what the loop; the Mediator sums up an ended loop", () => {
  it('"Also what does git rebase do?" is answered by the Mediator and queues nothing; add: still queues; the ended loop is summed up unasked', async () => {
    const ws = repo();
    // Round 1's Coder answers once the test opens its gate: the add: below lands during round 1.
    const { script, open } = gatedScript(ws, join(ROOT, "tests/fixtures/mediator/chat-also.script.yaml"));
    const chat = new PipedChat(chatArgs(ws, "also", script), ws.dir);
    chat.say("start: write a.txt");
    const started = await chat.until("started: the loop runs in the background");
    chat.say("Also what does git rebase do?");
    const answered = await chat.until("◆ git rebase replays your commits", started);
    expect(chat.output.slice(started, answered)).not.toContain("queued:");
    expect(await pendingOf(ws.db, "also.loop")).toEqual([]);

    chat.say("add: write docs");
    // Queued while round 1's Coder still waits: the loop takes it in at its Judge (docs.txt below says it was done).
    await chat.until('queued: "write docs"', answered);
    expect(await pendingOf(ws.db, "also.loop")).toEqual(["write docs"]);
    open("gate-coder");

    // Nothing more is typed: the loop's end is followed by the Mediator's summary.
    const ended = await chat.until("[AUTO] loop ended");
    const summary = await chat.until("◆ Summary: a.txt and docs.txt are written", ended);
    expect(summary).toBeGreaterThan(ended);
    chat.end();
    const result = await chat.done;
    expect(result.code, result.stderr + chat.output).toBe(0);
    expect(hasStackTrace(result.stderr)).toBe(false);
    expect(readFileSync(join(ws.dir, "docs.txt"), "utf8")).toBe("docs\n");

    const mediator = await finalState<Messages>(ws.db, "also");
    const humans = mediator.messages.filter((m) => m.type === "human");
    expect(humans.map((m) => m.content)).toContain("Also what does git rebase do?");
    // The summary was asked for by the Looper's [AUTO] message, not by the user.
    const request = humans.find((m) => String(m.content).includes("[AUTO] the loop ended: a.txt and docs.txt are written."));
    expect(request).toMatchObject({ name: "looper" });
    expect(String(mediator.messages.at(-1)!.content)).toContain("Summary: a.txt and docs.txt are written");
  });

  it("`loopgraph send <chat>` from another process: free text is answered in the open chat, start: starts the chat's loop", async () => {
    const ws = repo();
    const chat = new PipedChat(chatArgs(ws, "live", "chat-send.script.yaml"), ws.dir);
    await chat.until("Type /help");

    const hello = await runCli(["send", "live", "hello", "--db", ws.db]);
    expect(hello.code, hello.stderr).toBe(0);
    expect(hello.stdout).toContain("sent to the Mediator of thread live");
    await chat.until("you› hello (sent from another terminal)");
    const answered = await chat.until("◆ Hello from the Mediator.");

    const start = await runCli(["send", "live", "start: write a.txt", "--db", ws.db]);
    expect(start.code, start.stderr).toBe(0);
    expect(start.stdout).toContain('queued for thread live.loop: {"command":"start","task":"write a.txt"}');
    await chat.until("[AUTO] round 1/5 started: write a.txt", answered);
    const ended = await chat.until("[AUTO] loop ended: a.txt is written", answered);
    await chat.until("◆ Summary: a.txt is written", ended);
    chat.end();
    const result = await chat.done;
    expect(result.code, result.stderr + chat.output).toBe(0);
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("A\n");
  });

  it("`loopgraph send <chat>` with no chat open: the next `chat --thread` answers the text and starts the loop", async () => {
    const ws = repo();
    const first = new PipedChat(chatArgs(ws, "later", "chat-send.script.yaml"), ws.dir);
    first.end();
    expect((await first.done).code).toBe(0);
    // No loop has run in it: its status says so, not the chat's own "finished".
    expect(JSON.parse((await runCli(["status", "later", "--json", "--db", ws.db])).stdout)).toMatchObject({
      threadId: "later",
      threadStatus: "none",
      state: "IDLE",
    });

    const hello = await runCli(["send", "later", "hello", "--db", ws.db]);
    expect(hello.code, hello.stderr).toBe(0);
    expect(hello.stdout).toContain("loopgraph chat --thread later");
    const start = await runCli(["send", "later", "start: write a.txt", "--db", ws.db]);
    expect(start.code, start.stderr).toBe(0);
    expect(start.stdout).toContain("queued for thread later.loop");
    expect(start.stdout).toContain("otherwise: loopgraph chat --thread later");
    // Nothing to stop before the loop exists: nothing is queued.
    const stop = await runCli(["stop", "later", "--db", ws.db]);
    expect(stop.stdout.trim()).toBe("no loop is running: nothing to stop.");

    // Its input ends at once (`: | loopgraph chat --thread later`): it answers, runs the loop, sums it up, and exits.
    const reopened = new PipedChat(chatArgs(ws, "later", "chat-send.script.yaml"), ws.dir);
    reopened.end();
    const result = await reopened.done;
    expect(result.code, result.stderr + reopened.output).toBe(0);
    // In the order sent: "hello" is answered before the loop starts on the task sent after it.
    const answered = await reopened.until("◆ Hello from the Mediator.");
    expect(reopened.output.indexOf("you› hello (sent from another terminal)")).toBeLessThan(answered);
    const started = await reopened.until("[AUTO] round 1/5 started: write a.txt", answered);
    const ended = await reopened.until("[AUTO] loop ended: a.txt is written", started);
    await reopened.until("◆ Summary: a.txt is written", ended);

    // Taken up once: a later chat answers nothing again and starts no loop.
    const again = new PipedChat(chatArgs(ws, "later", "chat-send.script.yaml"), ws.dir);
    again.say("/status");
    await again.until("run: finished");
    again.end();
    expect((await again.done).code).toBe(0);
    expect(again.output).not.toContain("(sent from another terminal)");
    expect(again.output).not.toContain("taking up");
    // Its history shows the Looper's lines, not what the Looper asked of the Mediator.
    expect(again.output).toContain("[AUTO] loop ended: a.txt is written");
    expect(again.output).not.toContain("Sum up for the user");
  });

  it("`loopgraph resume <chat>` starts the loop on a task sent to the chat before it had one, then the Mediator sums up", async () => {
    const ws = repo();
    const first = new PipedChat(chatArgs(ws, "res", "chat-send.script.yaml"), ws.dir);
    first.end();
    expect((await first.done).code).toBe(0);
    expect((await runCli(["send", "res", "start: write a.txt", "--db", ws.db])).code).toBe(0);
    const resumed = await runCli(["resume", "res", "--db", ws.db]);
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    expect(resumed.stdout).toContain("[AUTO] loop ended: a.txt is written");
    expect(readFileSync(join(ws.dir, "a.txt"), "utf8")).toBe("A\n");
    // No empty Mediator turn before the loop: the Mediator's one turn (its first scripted answer) comes after it.
    expect(resumed.stdout.indexOf("Hello from the Mediator.")).toBeGreaterThan(resumed.stdout.indexOf("[AUTO] loop ended"));
    // Taken up once: nothing is left to resume.
    expect((await runCli(["resume", "res", "--db", ws.db])).code).toBe(2);
  });
});
