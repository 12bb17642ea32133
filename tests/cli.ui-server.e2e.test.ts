/**
 * `loopgraph ui`'s server without a browser (tests/ui.browser.e2e.test.ts drives the pages in Chromium):
 * what it answers to requests that are not for a page or an API.
 */
import { describe, expect, it } from "vitest";
import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { historyOf, run } from "./helpers/e2e.js";
import { writeLongThread } from "../bench/fixtures.js";
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

describe("the thread page's API pages a long thread", () => {
  it("answers the newest steps first, older ones page by page down to the first, a step's changes and nested steps when opened, the rest on demand; each asks for the token", async () => {
    const ws = tempWorkspace();
    await writeLongThread(ws.db, "long", 450);
    const whole = await historyOf(ws.db, "long");
    const { origin, token } = await startUi(ws.db);
    const ask = async <T>(path: string, status = 200): Promise<T> => {
      const answer = await fetch(`${origin}/api/threads/long${path}`, { headers: { "x-loopgraph-token": token } });
      const body = (await answer.json()) as T;
      expect(answer.status, `${path}: ${JSON.stringify(body)}`).toBe(status);
      return body;
    };
    type Listed = { checkpointId: string; index: number; what: string; seconds?: number; changes?: unknown };
    type Page = { checkpoints: Listed[]; range: { from: number; to: number; total: number } };
    const first = await ask<{ history: Page; tokens: unknown; messages?: unknown; toolCalls?: unknown; files?: unknown }>("");
    expect(first.history.range).toEqual({ from: 250, to: 450, total: 450 });
    expect(first.history.checkpoints.at(-1)).toMatchObject({ checkpointId: whole.head, index: 449, head: true });
    // Each step's time, the first's too (its parent is on an older page): the thread's steps are a second apart.
    expect(first.history.checkpoints.map((step) => step.seconds)).toEqual(first.history.checkpoints.map(() => 1));
    expect(first.tokens).toEqual(whole.tokens);
    // What grows with the thread besides its steps is not in it: a step's changes, the messages, tool calls and files.
    expect(first.history.checkpoints.some((step) => "changes" in step)).toBe(false);
    expect([first.messages, first.toolCalls, first.files]).toEqual([undefined, undefined, undefined]);
    // Older pages, down to the first step: together the whole history, each step at its index.
    const pages = [first.history];
    while (pages[0]!.range.from > 0) pages.unshift(await ask<Page>(`/steps?before=${pages[0]!.range.from}`));
    expect(pages.map((page) => page.range.from)).toEqual([0, 50, 250]);
    const listed = pages.flatMap((page) => page.checkpoints);
    expect(listed.map((step) => [step.index, step.checkpointId])).toEqual(
      whole.checkpoints.map((step, index) => [index, step.checkpointId]),
    );
    expect((await ask<Page>("/steps?before=3&limit=2")).checkpoints.map((step) => step.index)).toEqual([1, 2]);
    // Refreshed from an index (a page that loaded older steps), the steps from there on.
    expect((await ask<{ history: Page }>("?from=440")).history.range).toEqual({ from: 440, to: 450, total: 450 });
    // A step opened: its changes as inspect gives them.
    const opened = whole.checkpoints[300]!;
    expect(await ask(`/steps/${opened.checkpointId}`)).toEqual({ checkpointId: opened.checkpointId, changes: opened.changes, nested: [] });
    // On demand: the messages of the newest state, the tool calls, the file changes.
    const { messages } = await ask<{ messages: { content: string }[] }>("/messages");
    expect(messages.at(-1)?.content).toBe("step 440: looper did its part");
    expect(await ask("/tool-calls")).toEqual({ toolCalls: [] });
    expect(await ask<{ diffs: unknown[] }>("/files")).toMatchObject({ diffs: [] });
    // Bad requests are answered with their reason; none is answered without the token.
    expect(await ask("/steps", 400)).toEqual({ error: "say which steps: before=<index>" });
    expect(await ask("/steps?before=-1", 400)).toEqual({ error: "before must be a whole number" });
    expect(await ask("/steps/zzz", 400)).toEqual({ error: 'no checkpoint of thread "long" matches "zzz": see `loopgraph inspect long`' });
    const unknown = await fetch(`${origin}/api/threads/nope/messages`, { headers: { "x-loopgraph-token": token } });
    expect([unknown.status, await unknown.json()]).toEqual([400, { error: expect.stringMatching(/thread "nope"/) }]);
    for (const path of ["", "/steps?before=10", `/steps/${opened.checkpointId}`, "/messages", "/tool-calls", "/files"])
      expect((await fetch(`${origin}/api/threads/long${path}`)).status, path).toBe(401);
  });
});
