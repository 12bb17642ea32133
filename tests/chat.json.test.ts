/** `loopgraph chat --json`: every line of stdout is a JSON event; stdin lines are the user's messages (real CLI, offline demo script). */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/cli.js";
import { PipedChat } from "./helpers/piped-chat.js";
import { tempWorkspace } from "./helpers/workspace.js";

describe("loopgraph chat --json", () => {
  it("prints the chat's and the loop's events as JSON lines, from the first message to the loop's end and the summary", async () => {
    const ws = tempWorkspace({ git: true, files: { "package.json": '{ "type": "module" }\n' } });
    const chat = new PipedChat(
      ["--json", "--thread", "js", "--workspace", ws.dir, "--db", ws.db, "--model", `scripted:${join(ROOT, "examples", "monitor.script.yaml")}`, "--approval", "auto"],
      ws.dir,
    );
    chat.say("Add isPalindrome(text) in palindrome.js, with a test.");
    await chat.until('"type":"loop_settled"', 0, 90_000);
    chat.end();
    const result = await chat.done;
    expect(result.code, result.stderr).toBe(0);
    const events = chat.output.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events.every((event) => event.version === 1 && typeof event.ts === "string" && typeof event.type === "string")).toBe(true);
    expect(events[0]).toMatchObject({ type: "chat_started", threadId: "js", workspace: ws.dir, created: true });
    expect(events[1]).toMatchObject({ type: "user_message", threadId: "js", text: "Add isPalindrome(text) in palindrome.js, with a test." });
    const types = new Set(events.map((event) => event.type));
    for (const type of ["message", "tool_call", "tool_result", "loop_message", "loop_settled"]) expect(types, type).toContain(type);
    expect(events.find((event) => event.type === "tool_call")).toMatchObject({ name: "send_to_looper" });
    expect(events.find((event) => event.type === "loop_settled")).toMatchObject({ threadId: "js.loop", status: "finished", exitCode: 0 });
    expect(events.filter((event) => event.type === "loop_message").some((event) => event.auto === true)).toBe(true);
    // No terminal text in between: nothing but JSON, and no colour codes.
    expect(chat.output).not.toContain("\u001b[");
  });
});
