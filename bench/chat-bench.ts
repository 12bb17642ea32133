/**
 * Whether a running loop slows the chat (issue 5: a second message is answered within 1 s of
 * the model's reply while the loop runs). Through the library API, with the scripted model
 * (instant replies): the time of a Mediator turn while the loop's Coder works (a 5 s model
 * call), against the same turn with no loop, measured in the same run.
 * The loop is left mid-step at the end: the process exits without waiting for it.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { openChat, type ChatSession } from "../src/index.js";
import { median, report } from "./lib.js";
import { settingsOf } from "../src/config/environment-settings.js";

const TURNS = 7;

function script(file: string): void {
  const lines = [
    "responses:",
    "  - node: mediator",
    "    tool_calls:",
    '      - { name: send_to_looper, args: { command: start, task: "wait" } }',
    "  - node: mediator",
    '    content: "Started."',
  ];
  for (let i = 0; i < 2 * TURNS; i++)
    lines.push(
      "  - node: mediator",
      "    tool_calls:",
      "      - { name: query_looper_status, args: {} }",
      "  - node: mediator",
      `    content: "Status ${i}."`,
    );
  lines.push("  - node: coder", "    delay_ms: 10000", '    content: "Done."');
  writeFileSync(file, lines.join("\n"));
}

async function medianTurnMs(chat: ChatSession): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < TURNS; i++) {
    const started = performance.now();
    const outcome = await chat.say("how is it going?");
    if (outcome.status !== "finished") throw new Error(`turn ${outcome.status}: ${outcome.error ?? ""}`);
    times.push(performance.now() - started);
  }
  return median(times);
}

const dir = mkdtempSync(join(tmpdir(), "loopgraph-chat-bench-"));
try {
  const workspace = join(dir, "ws");
  execFileSync("git", ["init", "-q", workspace]);
  const file = join(dir, "bench.script.yaml");
  script(file);
  const options = { workspace, db: join(dir, "bench.db"), model: `scripted:${file}`, approval: "auto" as const, settings: settingsOf({}) };
  const idleChat = await openChat({ ...options, threadId: "idle" });
  const idle = await medianTurnMs(idleChat);
  const busyChat = await openChat({ ...options, threadId: "busy" });
  await busyChat.say("start the loop");
  if (!busyChat.looper.running) throw new Error("the loop did not start");
  const busy = await medianTurnMs(busyChat);
  if (!busyChat.looper.running) throw new Error("the loop ended before the turns were measured");
  report({
    name: "chat_turn_loop_running",
    ours: busy,
    anchor: idle,
    unit: "ms",
    maxOurs: 1000,
    note: `a chat turn while the chat's loop runs, median of ${TURNS}; anchor: a turn of a chat without a loop`,
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
