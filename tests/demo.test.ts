import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, ROOT } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

describe("npm run demo", () => {
  it("runs the Mediator and its Looper offline for two rounds, then shows the summary, the status and the history", () => {
    const demo = spawnSync(process.execPath, [join(ROOT, "scripts/demo.mjs")], {
      env: cleanEnv({ LOOPGRAPH_DB: join(tempWorkspace().root, "demo.db") }),
      encoding: "utf8",
    });
    expect(demo.status, demo.stderr).toBe(0);
    expect(demo.stdout).toContain("round 2/5 started");
    expect(demo.stdout).toContain("loop ended: the function and its test are done");
    expect(demo.stdout).toContain("palindrome tests passed");
    expect(demo.stdout).toContain("send_to_looper");
    expect(demo.stdout).toContain("Done: palindrome.js has isPalindrome");
    expect(demo.stdout).toContain("[Looper status]");
    expect(demo.stdout).toMatch(/#\s+STEP\s+NODE/);
  });
});
