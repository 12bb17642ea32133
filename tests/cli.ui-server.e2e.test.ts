/**
 * `loopgraph ui`'s server without a browser (tests/ui.browser.e2e.test.ts drives the pages in Chromium):
 * what it answers to requests that are not for a page or an API.
 */
import { describe, expect, it } from "vitest";
import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { run } from "./helpers/e2e.js";
import { ROOT } from "./helpers/cli.js";
import { startUi } from "./helpers/ui.js";
import { tempWorkspace } from "./helpers/workspace.js";

describe("loopgraph ui (the server)", () => {
  it("answers 404 for the assets folder itself and for a file that is not there, with the token; the page itself is 200", async () => {
    const ws = tempWorkspace();
    expect(
      (await run(ws, { graph: "example-review", thread: "t", task: "x", script: join(ROOT, "examples/example-review.script.yaml") })).code,
    ).toBe(0);
    const { url, origin, token } = await startUi(ws.db);
    for (const path of ["/assets/", "/assets/nothing-here.js"]) {
      const answer = await fetch(`${origin}${path}?token=${token}`);
      expect(answer.status, path).toBe(404);
    }
    expect((await fetch(url)).status).toBe(200);
  });

  it("an action that runs the thread on and ends at once (an approval of a thread that waits for none) is answered with its exit code and output, and leaves no log behind", async () => {
    const ws = tempWorkspace();
    expect(
      (await run(ws, { graph: "example-review", thread: "t", task: "x", script: join(ROOT, "examples/example-review.script.yaml") })).code,
    ).toBe(0);
    const logs = join(ws.root, "ui-tmp");
    mkdirSync(logs);
    const { origin, token } = await startUi(ws.db, [], { TMPDIR: logs });
    const answer = await fetch(`${origin}/api/threads/t/actions/approve`, {
      method: "POST",
      headers: { "x-loopgraph-token": token, "content-type": "application/json" },
      body: "{}",
    });
    const result = (await answer.json()) as { command: string; exitCode?: number; output: string; log?: string };
    expect(result).toMatchObject({ command: "loopgraph resume --approve -- t", exitCode: 2 });
    expect(result.output).toMatch(/^loopgraph: .*\S/);
    expect(result.log).toBeUndefined();
    expect(readdirSync(logs)).toEqual([]);
  });

  it("answers the browser's own request for /favicon.ico, which carries no token, with no content (204); every other request without the token is still refused", async () => {
    const { origin } = await startUi(tempWorkspace().db);
    const icon = await fetch(`${origin}/favicon.ico`);
    expect([icon.status, await icon.text()]).toEqual([204, ""]);
    for (const path of ["/", "/favicon.ico/", "/assets/favicon.ico", "/api/threads"])
      expect((await fetch(`${origin}${path}`)).status, path).toBe(401);
    expect((await fetch(`${origin}/favicon.ico`, { method: "POST" })).status).toBe(401);
  });
});
