/**
 * `loopgraph ui`'s server without a browser (tests/ui.browser.test.ts drives the pages in Chromium):
 * what it answers to requests that are not for a page or an API.
 */
import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { run, startCli } from "./helpers/e2e.js";
import { ROOT } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

describe("loopgraph ui (the server)", () => {
  it("answers 404 for the assets folder itself and for a file that is not there, with the token; the page itself is 200", async () => {
    const ws = tempWorkspace();
    expect((await run(ws, { graph: "example-review", thread: "t", task: "x", script: join(ROOT, "examples/example-review.script.yaml") })).code).toBe(0);
    const ui = startCli(["--db", ws.db, "ui"]);
    const at = await ui.waitForLine((line) => line.startsWith("loopgraph ui: "));
    const url = new URL(ui.lines[at]!.slice("loopgraph ui: ".length).trim());
    const token = url.searchParams.get("token")!;
    for (const path of ["/assets/", "/assets/nothing-here.js"]) {
      const answer = await fetch(`${url.origin}${path}?token=${token}`);
      expect(answer.status, path).toBe(404);
    }
    expect((await fetch(url)).status).toBe(200);
  });
});
