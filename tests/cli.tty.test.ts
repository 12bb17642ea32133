import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, cleanEnv, hasCommand, ROOT, shellQuote as quote } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

/** util-linux `script` runs a command in a pseudo-terminal: the CLI then sees a TTY. */
const hasScript = hasCommand("script", "--version");

describe.skipIf(!hasScript)("approvals at a terminal (pseudo-terminal through `script`)", () => {
  it("prompts approve / reject / always; a rejection with a reason reaches the model, an approval runs the call", async () => {
    const { dir: ws, db } = tempWorkspace({ git: "init", files: { "important.txt": "keep me\n" } });
    const command = [
      process.execPath, CLI, "run", "coder", "--task", "t", "--workspace", ws, "--db", db,
      "--model", `scripted:${join(ROOT, "tests/fixtures/coder/approvals.script.yaml")}`,
    ].map(quote).join(" ");
    const child = spawn("script", ["-q", "-e", "-c", command, "/dev/null"], { env: cleanEnv({ TERM: "dumb" }), stdio: ["pipe", "pipe", "pipe"] });
    let screen = "";
    const answers = [
      { after: "Allow?", send: "n\n" },
      { after: "Reason for the agent", send: "use a temp dir\n" },
      { after: "Allow?", send: "y\n" },
    ];
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
        child.stdin.write(next.send);
      }
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code, screen).toBe(0);
    expect(answered).toBe(3);
    expect(screen).toContain("wants to run");
    expect(screen).toContain("always: exactly `rm -f important.txt`, for the rest of this thread");
    expect(screen).toContain("the user rejected this call: use a temp dir");
    expect(existsSync(join(ws, "approved.txt"))).toBe(false);
    expect(existsSync(join(ws, "important.txt"))).toBe(false);
    expect(screen).toContain("finished");
  });
});
