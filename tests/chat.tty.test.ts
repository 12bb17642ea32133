import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, cleanEnv, eventually, hasCommand, ROOT, shellQuote as quote } from "./helpers/cli.js";
import { finalState, threadsOf } from "./helpers/e2e.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

/** tmux runs the chat in a real pseudo-terminal and renders it: `capture-pane` is the screen the user sees. */
const hasTmux = hasCommand("tmux", "-V");

class TmuxChat {
  private readonly socket = `loopgraph-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

  constructor(args: string[], cwd: string, exitFile: string) {
    const command = `${[process.execPath, CLI, "chat", ...args].map(quote).join(" ")}; echo $? > ${quote(exitFile)}; sleep 30`;
    this.tmux("new-session", "-d", "-s", "chat", "-x", "160", "-y", "48", "-c", cwd, command);
  }

  tmux(...args: string[]): string {
    return execFileSync("tmux", ["-L", this.socket, ...args], { env: cleanEnv({ TERM: "xterm-256color" }), encoding: "utf8" });
  }

  screen(): string[] {
    return this.tmux("capture-pane", "-p", "-t", "chat").split("\n");
  }

  type(text: string): void {
    this.tmux("send-keys", "-t", "chat", "-l", text);
  }

  key(...keys: string[]): void {
    this.tmux("send-keys", "-t", "chat", ...keys);
  }

  async until(check: (screen: string[]) => boolean, what: string, timeoutMs = 40_000): Promise<string[]> {
    const started = Date.now();
    for (;;) {
      const screen = this.screen();
      if (check(screen)) return screen;
      if (Date.now() - started > timeoutMs) throw new Error(`${what} not on screen within ${timeoutMs} ms:\n${screen.join("\n")}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  kill(): void {
    try {
      this.tmux("kill-server");
    } catch {
      // already gone
    }
  }
}

/** What the chat exited with (the tmux command writes it to a file), or undefined while it runs. */
const exitCode = (file: string): string | undefined => (existsSync(file) ? readFileSync(file, "utf8").trim() : undefined);

const lastLine = (screen: string[]): string => screen.filter((line) => line.trim() !== "").at(-1) ?? "";
const showing = (text: string) => (screen: string[]) => screen.some((line) => line.includes(text));

describe.skipIf(!hasTmux)("`loopgraph chat` in a terminal (tmux pseudo-terminal)", () => {
  it("an [AUTO] message arriving while the user types goes above the prompt; the typed line stays intact and is sent whole", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const exitFile = join(ws.dir, "..", "exit-code");
    const chat = new TmuxChat(
      ["--thread", "tty", "--workspace", ws.dir, "--db", ws.db, "--model", `scripted:${join(ROOT, "tests/fixtures/mediator/chat-slow.script.yaml")}`, "--approval", "auto"],
      ws.dir,
      exitFile,
    );
    onCleanup(() => chat.kill());

    await chat.until((screen) => lastLine(screen).startsWith("you›"), "the prompt");
    chat.type("please write a.txt");
    chat.key("Enter");
    await chat.until(showing("Forwarded to the Looper."), "the Mediator's answer");
    await chat.until((screen) => lastLine(screen) === "you›", "the prompt after the answer");

    // The Coder takes 2.5 s: type half a question, and let the loop's [AUTO] lines arrive meanwhile.
    chat.type("how is it go");
    const screen = await chat.until(showing("[AUTO] coder succeeded"), "the [AUTO] line");
    const settled = await chat.until((s) => lastLine(s) === "you› how is it go", "the typed line, intact, after the [AUTO] line");
    const autoRow = settled.findIndex((line) => line.includes("[AUTO] coder succeeded"));
    expect(settled[autoRow]!.trim()).toBe("[AUTO] coder succeeded: 1 file(s) changed");
    expect(settled.slice(0, autoRow).join("\n")).not.toContain("how is it go");
    expect(screen.join("\n")).not.toMatch(/how is it go\S*\[AUTO\]/);

    chat.type("ing?");
    chat.key("Enter");
    await chat.until(showing("It is going well."), "the answer to the typed line");
    const mediator = await finalState<{ messages: Array<{ type: string; content: unknown }> }>(ws.db, "tty");
    expect(mediator.messages.filter((m) => m.type === "human").map((m) => m.content)).toContain("how is it going?");

    // Ctrl-D leaves; the loop's state is kept.
    await chat.until(showing("[AUTO] loop ended"), "the end of the loop");
    chat.key("C-d");
    await chat.until(() => exitCode(exitFile) === "0", "exit code 0");
  });

  it("Ctrl-C cancels the answer in progress; Ctrl-C again leaves (exit 130), stopping the running loop with its state saved", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const script = join(ws.dir, "..", "slow-answer.script.yaml");
    writeFileSync(
      script,
      [
        "responses:",
        "  - node: mediator",
        "    tool_calls:",
        '      - { name: send_to_looper, args: { command: start, task: "Write a.txt containing A." } }',
        "  - node: mediator",
        '    content: "Forwarded."',
        "  - node: mediator",
        "    delay_ms: 30000",
        '    content: "a very slow answer"',
        "  - node: coder",
        "    delay_ms: 8000",
        '    content: "Nothing to do."',
      ].join("\n"),
    );
    const exitFile = join(ws.dir, "..", "exit-code");
    const chat = new TmuxChat(["--thread", "cc", "--workspace", ws.dir, "--db", ws.db, "--model", `scripted:${script}`], ws.dir, exitFile);
    onCleanup(() => chat.kill());

    await chat.until((screen) => lastLine(screen).startsWith("you›"), "the prompt");
    chat.type("write a.txt");
    chat.key("Enter");
    await chat.until(showing("Forwarded."), "the forwarded answer");
    await chat.until(showing("[AUTO] round 1/5 started"), "the loop's start");

    chat.type("hello?");
    chat.key("Enter");
    // Ctrl-C once the Mediator's turn is under way: its input checkpoint holds the new line (its answer takes 30 s).
    const asked = async () => (await finalState<{ messages: Array<{ type: string; content: unknown }> }>(ws.db, "cc")).messages.some((m) => m.type === "human" && m.content === "hello?");
    expect(await eventually(asked, (yes) => yes, 40_000)).toBe(true);
    chat.key("C-c");
    await chat.until(showing("(answer cancelled)"), "the cancelled answer");
    await chat.until((screen) => lastLine(screen) === "you›", "the prompt after cancelling");

    chat.key("C-c");
    await chat.until(showing("Stopping the loop now"), "the loop being stopped");
    await chat.until(showing("The loop's state is saved"), "the saved loop");
    await chat.until(() => exitCode(exitFile) === "130", "exit code 130");
    const status = execFileSync(process.execPath, [CLI, "status", "cc", "--db", ws.db], { env: cleanEnv(), encoding: "utf8" });
    expect(status).toContain("state: RUNNING");
    const threads = await threadsOf(ws.db);
    expect(threads.find((t) => t.threadId === "cc.loop")?.status).toBe("interrupted");
  });
});
