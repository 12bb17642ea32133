import { spawn, type ChildProcess } from "node:child_process";
import { join, resolve } from "node:path";
import { CLI, cleanEnv, collect, ROOT, type CliResult } from "./cli.js";
import { onCleanup } from "./workspace.js";

const SCRIPTS = join(ROOT, "tests/fixtures/mediator");

/** `loopgraph chat` with its stdin a pipe: lines are written as a user would type them. */
export class PipedChat {
  readonly child: ChildProcess;
  readonly done: Promise<CliResult>;
  output = "";

  /** `scope`: "test" stops the chat when the current test finishes; "caller": the caller stops it (a chat shared by several tests). */
  constructor(args: string[], cwd: string, scope: "test" | "caller" = "test") {
    this.child = spawn(process.execPath, [CLI, "chat", ...args], { cwd, env: cleanEnv(), stdio: ["pipe", "pipe", "pipe"] });
    this.child.stdout!.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    this.done = collect(this.child);
    // Stopped before the temp directories are removed (clean-ups run last first), also when a test fails midway.
    if (scope === "test") onCleanup(() => void this.child.kill("SIGKILL"));
  }

  say(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }

  end(): void {
    this.child.stdin!.end();
  }

  /** Resolves with the index of `text` in the output once it appears at or after `from`. */
  until(text: string, from = 0, timeoutMs = 40_000): Promise<number> {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const poll = (): void => {
        const at = this.output.indexOf(text, from);
        if (at >= 0) return resolve(at);
        if (Date.now() - started > timeoutMs)
          return reject(new Error(`"${text}" not in chat output within ${timeoutMs} ms:\n${this.output}`));
        setTimeout(poll, 25);
      };
      poll();
    });
  }
}

/** The arguments of a chat on `thread` in `ws`, with a scripted model of tests/fixtures/mediator (or at an absolute path: a gated copy). */
export const chatArgs = (ws: { dir: string; db: string }, thread: string, script: string): string[] => [
  "--thread",
  thread,
  "--workspace",
  ws.dir,
  "--db",
  ws.db,
  "--model",
  `scripted:${resolve(SCRIPTS, script)}`,
  "--approval",
  "auto",
];
