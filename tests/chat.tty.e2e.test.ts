import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, cleanEnv, eventually, ROOT, shellQuote as quote } from "./helpers/cli.js";
import { finalState, gatedScript, recordedStatus, threadsOf } from "./helpers/e2e.js";
import { lacks } from "./helpers/requirements.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

/** tmux runs the chat in a real pseudo-terminal and renders it: `capture-pane` is the screen the user sees. */
const noTmux = lacks("tmux", "the chat's terminal tests");

class TmuxChat {
  private readonly socket = `loopgraph-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

  constructor(args: string[], cwd: string, exitFile: string, size = { columns: 160, rows: 48 }) {
    // After the chat, the shell prints SHELL_MARK as a shell prompt would: where it lands shows how the chat left the line.
    const command = `${[process.execPath, CLI, "chat", ...args].map(quote).join(" ")}; echo $? > ${quote(exitFile)}; printf %s ${quote(SHELL_MARK)}; sleep 30`;
    this.tmux("new-session", "-d", "-s", "chat", "-x", String(size.columns), "-y", String(size.rows), "-c", cwd, command);
  }

  tmux(...args: string[]): string {
    return execFileSync("tmux", ["-L", this.socket, ...args], { env: cleanEnv({ TERM: "xterm-256color" }), encoding: "utf8" });
  }

  screen(): string[] {
    return this.tmux("capture-pane", "-p", "-t", "chat").split("\n");
  }

  /** Every line printed so far (scrollback included), wrapped rows joined into the line they wrap. */
  scrollback(): string[] {
    return this.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "chat")
      .split("\n")
      .map((line) => line.trimEnd());
  }

  /** Resizes the terminal: the chat gets SIGWINCH. */
  resize(columns: number): void {
    this.tmux("resize-window", "-t", "chat", "-x", String(columns));
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

const SHELL_MARK = "SHELL>";

/** What the chat exited with (the tmux command writes it to a file), or undefined while it runs. */
const exitCode = (file: string): string | undefined => (existsSync(file) ? readFileSync(file, "utf8").trim() : undefined);

const lastLine = (screen: string[]): string => screen.filter((line) => line.trim() !== "").at(-1) ?? "";
const showing = (text: string) => (screen: string[]) => screen.some((line) => line.includes(text));

/** At the first prompt, asks the Mediator to write a.txt, and waits for its answer and the prompt after it. */
async function handOverTask(chat: TmuxChat): Promise<void> {
  await chat.until((screen) => lastLine(screen).startsWith("you›"), "the prompt");
  chat.type("please write a.txt");
  chat.key("Enter");
  await chat.until(showing("Forwarded to the Looper."), "the Mediator's answer");
  await chat.until((screen) => lastLine(screen) === "you›", "the prompt after the answer");
}

describe.skipIf(noTmux)("`loopgraph chat` in a terminal (tmux pseudo-terminal)", () => {
  it("an [AUTO] message arriving while the user types goes above the prompt; the typed line stays intact and is sent whole", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const exitFile = join(ws.dir, "..", "exit-code");
    const { script, open } = gatedScript(ws, join(ROOT, "tests/fixtures/mediator/chat-slow.script.yaml"));
    const chat = new TmuxChat(
      ["--thread", "tty", "--workspace", ws.dir, "--db", ws.db, "--model", `scripted:${script}`, "--approval", "auto"],
      ws.dir,
      exitFile,
    );
    onCleanup(() => chat.kill());

    await handOverTask(chat);

    // The Coder waits at its gate: type half a question, then let the loop's [AUTO] lines arrive while it is on the prompt.
    chat.type("how is it go");
    await chat.until((s) => lastLine(s) === "you› how is it go", "the typed half question");
    open("gate-coder");
    const screen = await chat.until(showing("[AUTO] coder succeeded"), "the [AUTO] line");
    const settled = await chat.until((s) => lastLine(s) === "you› how is it go", "the typed line, intact, after the [AUTO] line");
    const autoRow = settled.findIndex((line) => line.includes("[AUTO] coder succeeded"));
    expect(settled[autoRow]!.trim()).toBe("[AUTO] coder succeeded (simple task, 85% sure): 1 file changed");
    expect(settled.slice(0, autoRow).join("\n")).not.toContain("how is it go");
    expect(screen.join("\n")).not.toMatch(/how is it go\S*\[AUTO\]/);

    chat.type("ing?");
    chat.key("Enter");
    await chat.until(showing("It is going well."), "the answer to the typed line");
    // The answer shows as it streams; the turn's checkpoint follows.
    const asked = async () =>
      (await finalState<{ messages: Array<{ type: string; content: unknown }> }>(ws.db, "tty")).messages
        .filter((m) => m.type === "human")
        .map((m) => m.content);
    expect(await eventually(asked, (humans) => humans.includes("how is it going?"), 20_000)).toContain("how is it going?");

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
        // Held at gates the test never opens: the answer until Ctrl-C cancels it, the Coder until the chat leaves.
        "  - node: mediator",
        "    wait_for: never-answer",
        '    content: "a very slow answer"',
        "  - node: coder",
        "    wait_for: never-coder",
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
    // Ctrl-C once the Mediator's turn is under way: its input checkpoint holds the new line (its answer never comes).
    const asked = async () =>
      (await finalState<{ messages: Array<{ type: string; content: unknown }> }>(ws.db, "cc")).messages.some(
        (m) => m.type === "human" && m.content === "hello?",
      );
    expect(await eventually(asked, (yes) => yes, 40_000)).toBe(true);
    chat.key("C-c");
    await chat.until(showing("(answer cancelled)"), "the cancelled answer");
    await chat.until((screen) => lastLine(screen) === "you›", "the prompt after cancelling");
    // A cancelled answer does not fail the chat's thread (read from this process, the chat still open).
    const cancelled = await recordedStatus(ws.db, "cc");
    expect(cancelled).toBeDefined();
    expect(cancelled).not.toBe("failed");

    chat.key("C-c");
    await chat.until(showing("Stopping the loop now"), "the loop being stopped");
    await chat.until(showing("The loop's state is saved"), "the saved loop");
    await chat.until(() => exitCode(exitFile) === "130", "exit code 130");
    const status = execFileSync(process.execPath, [CLI, "status", "cc", "--db", ws.db], { env: cleanEnv(), encoding: "utf8" });
    expect(status).toContain("state: RUNNING");
    const threads = await threadsOf(ws.db);
    expect(threads.find((t) => t.threadId === "cc.loop")?.status).toBe("interrupted");
  });
  it.each([
    { columns: 50, resizeTo: undefined },
    { columns: 120, resizeTo: 50 },
  ])(
    "at $columns columns (resized to $resizeTo): [AUTO] lines arriving while a long typed line wraps each appear once, above one prompt with the line intact; Ctrl-D ends the line",
    async ({ columns, resizeTo }) => {
      const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
      const exitFile = join(ws.dir, "..", "exit-code");
      const chat = new TmuxChat(
        [
          "--thread",
          "wrap",
          "--workspace",
          ws.dir,
          "--db",
          ws.db,
          "--model",
          `scripted:${join(ROOT, "tests/fixtures/mediator/chat-gated.script.yaml")}`,
          "--approval",
          "auto",
        ],
        ws.dir,
        exitFile,
        { columns, rows: 30 },
      );
      onCleanup(() => chat.kill());

      await handOverTask(chat);

      // A line longer than the terminal is wide: it wraps over several rows while the Coder waits for `go`.
      const typed = `LONGSTART ${"how is it going with the file, ".repeat(4)}LONGEND`;
      chat.type(typed);
      await chat.until(() => chat.scrollback().some((line) => line.endsWith("LONGEND")), "the typed line");
      if (resizeTo) {
        chat.resize(resizeTo);
        await chat.until((screen) => screen.every((line) => line.length <= resizeTo), "the narrower terminal");
      }
      writeFileSync(join(ws.dir, "go"), "");
      await chat.until(
        () => chat.scrollback().some((line) => line.includes("Summary: a.txt is written")),
        "the Mediator's summary",
        20_000,
      );
      const lines = await chat
        .until(() => lastLine(chat.scrollback()) === `you› ${typed}`, "the prompt with the typed line after the summary")
        .then(() => chat.scrollback());

      // Every [AUTO] entry of the loop, and the end of the loop, printed exactly once (none overwritten, none repeated).
      const loop = await finalState<{ messages: Array<{ content: unknown }> }>(ws.db, "wrap.loop");
      const auto = loop.messages.map((m) => String(m.content)).filter((content) => content.startsWith("[AUTO]"));
      expect(auto.length).toBeGreaterThanOrEqual(7);
      const once = (text: string) =>
        expect(
          lines.filter((line) => line.includes(text)),
          text,
        ).toHaveLength(1);
      for (const entry of auto) once(entry.split("\n")[0]!);
      once("■ the loop has ended");
      once("[AUTO] coder succeeded (simple task, 85% sure): 1 file changed");
      // The two-line task: its second line indented under the [AUTO] prefix.
      expect(lines[lines.findIndex((line) => line.includes("[AUTO] round 1/5 started")) + 1]).toBe("       Then stop.");
      // One prompt with the typed line, at the bottom: no copies of it left on the rows above.
      once("LONGSTART");
      expect(lines.filter((line) => line.startsWith("you›"))).toEqual(["you› please write a.txt", `you› ${typed}`]);
      if (resizeTo) {
        // Wider again: the line is redrawn over fewer rows, still once.
        chat.resize(columns);
        await chat.until(
          (screen) => screen.some((line) => line.startsWith("you› LONGSTART") && line.length > resizeTo),
          "the prompt redrawn at the wider size",
        );
        const wider = chat.scrollback();
        expect(wider.filter((line) => line.includes("LONGSTART"))).toEqual([`you› ${typed}`]);
        expect(lastLine(wider)).toBe(`you› ${typed}`);
      }

      // Ctrl-D on an empty line leaves; the shell's next output starts on a line of its own.
      chat.key("C-u");
      await chat.until((screen) => lastLine(screen) === "you›", "the emptied prompt");
      chat.key("C-d");
      await chat.until(() => exitCode(exitFile) === "0", "exit code 0");
      const after = await chat.until(showing(SHELL_MARK), "the shell's output");
      expect(after.filter((line) => line.includes(SHELL_MARK)).map((line) => line.trimEnd())).toEqual([SHELL_MARK]);
    },
  );
});
