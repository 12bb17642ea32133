/** `loopgraph chat --json`: every line of stdout is a JSON event; stdin lines are the user's messages (real CLI, offline demo script). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/cli.js";
import { chatArgs, PipedChat } from "./helpers/piped-chat.js";
import { tempWorkspace } from "./helpers/workspace.js";

describe("loopgraph chat --json", () => {
  it("prints the chat's and the loop's events as JSON lines, from the first message to the loop's end and the summary", async () => {
    const ws = tempWorkspace({ git: true, files: { "package.json": '{ "type": "module" }\n' } });
    const chat = new PipedChat(
      [
        "--json",
        "--thread",
        "js",
        "--workspace",
        ws.dir,
        "--db",
        ws.db,
        "--model",
        `scripted:${join(ROOT, "examples", "monitor.script.yaml")}`,
        "--approval",
        "auto",
      ],
      ws.dir,
    );
    chat.say("Add isPalindrome(text) in palindrome.js, with a test.");
    await chat.until('"type":"loop_settled"', 0, 90_000);
    chat.end();
    const result = await chat.done;
    expect(result.code, result.stderr).toBe(0);
    const events = chat.output
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events.every((event) => event.version === 1 && typeof event.ts === "string" && typeof event.type === "string")).toBe(true);
    expect(events[0]).toMatchObject({ type: "chat_started", threadId: "js", workspace: ws.dir, created: true });
    expect(events[1]).toMatchObject({
      type: "user_message",
      threadId: "js",
      text: "Add isPalindrome(text) in palindrome.js, with a test.",
    });
    const types = new Set(events.map((event) => event.type));
    for (const type of ["message", "tool_call", "tool_result", "loop_message", "loop_settled"]) expect(types, type).toContain(type);
    expect(events.find((event) => event.type === "tool_call")).toMatchObject({ name: "send_to_looper" });
    expect(events.find((event) => event.type === "loop_settled")).toMatchObject({ threadId: "js.loop", status: "finished", exitCode: 0 });
    expect(events.filter((event) => event.type === "loop_message").some((event) => event.auto === true)).toBe(true);
    // No terminal text in between: nothing but JSON, and no colour codes.
    expect(chat.output).not.toContain("\u001b[");
  });

  it("in plan mode the loop pauses with its plan, which /approve lets it act on; /always answers a command's approval and the same command then runs unasked", async () => {
    const ws = tempWorkspace({ git: "init" });
    const args = [...chatArgs(ws, "plan", "chat-plan-always.script.yaml"), "--json", "--approval", "ask", "--mode", "plan"];
    const chat = new PipedChat(args, ws.dir);
    const settled = (from: number) => chat.until('"type":"loop_settled"', from, 60_000);
    chat.say("please write one.txt");
    const plan = await settled(0);
    chat.say("/approve");
    const command = await settled(plan + 1);
    chat.say("/always");
    const end = await settled(command + 1);
    await chat.until('"type":"run_finished"', end);
    chat.end();
    expect((await chat.done).code).toBe(0);
    const loop = chat.output
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((event) => event.type === "loop_settled");
    expect(loop.map((event) => [event.status, (event.approval as { tool?: string } | undefined)?.tool ?? null])).toEqual([
      ["paused", "present_plan"],
      ["paused", "shell"],
      ["finished", null],
    ]);
    // The plan is shown whole with its approval; the command it was asked about ran twice, asked once.
    expect(loop[0]!.approval).toMatchObject({ details: "PLAN-MARKER: write one.txt with a shell command." });
    expect(readFileSync(join(ws.dir, "one.txt"), "utf8")).toBe("one\none\n");
  });
});
