import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, ROOT, SANDBOX_AS_FOUND } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

describe("npm run demo", () => {
  // As on a new user's machine, where bubblewrap is not installed: the demo still ends (its
  // commands are its own), and says how they ran.
  it("runs the Mediator and its Looper offline for two rounds, then shows the summary, the status and the history", () => {
    const demo = spawnSync(process.execPath, [join(ROOT, "scripts/demo.mjs")], {
      env: cleanEnv({ ...SANDBOX_AS_FOUND, LOOPGRAPH_BWRAP: "/nonexistent/bwrap", LOOPGRAPH_DB: join(tempWorkspace().root, "demo.db") }),
      encoding: "utf8",
    });
    expect(demo.status, demo.stderr).toBe(0);
    expect(demo.stdout).toMatch(/^Commands: without an OS sandbox, which cannot start here .*your own runs ask before each command/m);
    expect(demo.stdout).toContain("OS sandbox off (--no-sandbox)");
    expect(demo.stdout).toContain("round 2/5 started");
    expect(demo.stdout).toContain("loop ended: the function and its test are done");
    expect(demo.stdout).toContain("palindrome tests passed");
    expect(demo.stdout).toContain("send_to_looper");
    expect(demo.stdout).toContain("Done: palindrome.js has isPalindrome");
    expect(demo.stdout).toContain("[Looper status]");
    expect(demo.stdout).toMatch(/#\s+STEP\s+NODE/);

    // Two threads never share a header: each content line follows the last header of its own thread.
    const runLines = demo.stdout
      .slice(0, demo.stdout.indexOf("✔ finished"))
      .split("\n")
      .slice(demo.stdout.split("\n").findIndex((l) => l.startsWith("▶ running monitor")));
    let headerThread: "own" | "loop" | undefined;
    for (const line of runLines) {
      const loop = line.startsWith("[loop] ");
      const text = loop ? line.slice("[loop] ".length) : line;
      if (/^[●✓▶] /.test(text)) headerThread = loop ? "loop" : "own";
      else if (text.startsWith("  ") && headerThread !== undefined) expect(loop ? "loop" : "own", line).toBe(headerThread);
    }
    // A tool result of several lines is shown whole; the end line has the run's and each round's tokens.
    expect(demo.stdout).toMatch(/↳ Todo list updated \(0\/2 completed\):\n\[loop\] {5}\[>\] write isPalindrome/);
    expect(demo.stdout).toMatch(
      /✔ finished {2}thread \S+ {2}\(\S+ tokens in, \S+ out, [\d.]+ s; round 1: \S+ in, \S+ out · round 2: \S+ in, \S+ out\)/,
    );
  });
});
