/**
 * The CLI at a terminal: util-linux `script` runs a command in a pseudo-terminal, so the CLI sees
 * a TTY (prompts, spinner, live output). Tests that need it skip without `script`.
 *
 *   const { code, screen } = await runAtTerminal(ws.dir, ws.db, [{ after: "Allow?", send: "y\n" }], script);
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { CLI, cleanEnv, hasCommand, ROOT, shellQuote as quote } from "./cli.js";

/** Whether `script` can run a command in a pseudo-terminal here. */
export const hasScript = hasCommand("script", "--version");

/** What the user does at each prompt: once `after` shows (after the previous one), types `send`, or calls it (e.g. to open a gate). */
export interface Answer {
  after: string;
  send: string | (() => void);
}

/** `loopgraph run coder` (thread `tty`) with a scripted model in a pseudo-terminal, answering its prompts; resolves with its exit code and screen. */
export async function runAtTerminal(
  ws: string,
  db: string,
  answers: Answer[],
  script = join(ROOT, "tests/fixtures/coder/approvals.script.yaml"),
  env: NodeJS.ProcessEnv = {},
  /** Where the command runs (default: the checkout), which decides its project. */
  cwd?: string,
): Promise<{ code: number | null; screen: string; answered: number }> {
  const command = [
    process.execPath,
    CLI,
    "run",
    "coder",
    "--task",
    "t",
    "--thread",
    "tty",
    "--workspace",
    ws,
    "--db",
    db,
    "--model",
    `scripted:${script}`,
  ]
    .map(quote)
    .join(" ");
  const child = spawn("script", ["-q", "-e", "-c", command, "/dev/null"], {
    cwd,
    env: cleanEnv({ TERM: "dumb", ...env }),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let screen = "";
  let answered = 0;
  let seen = 0;
  child.stdout.on("data", (chunk: Buffer) => {
    screen += chunk.toString();
    const next = answers[answered];
    if (!next) return;
    const at = screen.indexOf(next.after, seen);
    if (at >= 0) {
      seen = at + next.after.length;
      answered += 1;
      if (typeof next.send === "string") child.stdin.write(next.send);
      else next.send();
    }
  });
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, screen, answered };
}
