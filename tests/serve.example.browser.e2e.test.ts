/**
 * The example web chat of `loopgraph serve` (examples/serve-chat/, built into
 * dist/examples/serve-chat/) in a real headless browser: LangGraph's `useStream` hook against the
 * server the CLI starts on 127.0.0.1, with a scripted Coder whose first call asks for approval.
 * Debian's Chromium driven by playwright-core, as in ui.browser.e2e.test.ts; skipped without it
 * unless LOOPGRAPH_REQUIRE_CHROMIUM is set. Screenshots go to test-results/.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "./helpers/cli.js";
import { CHROMIUM, lacks } from "./helpers/requirements.js";
import { startServe } from "./helpers/serve.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

const noChromium = lacks("chromium", "the serve example's browser tests");
const SHOTS = join(ROOT, "test-results");
const APP = join(ROOT, "dist/examples/serve-chat");
/** How long the page may take to show a run's change (a model call, a checkpoint, the next event), on a busy machine. */
const LIVE = { timeout: 30_000 };

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/**
 * A script for the Coder. A task starting "Write": first it writes `file` (a call that asks for
 * approval in mode `ask`), after a moment, so the page shows its Stop button; then it answers
 * `answer`. A task starting "Wait": an answer that takes a minute (a run to stop).
 */
function coderScript(ws: Workspace, file: string, answer: string): string {
  const script = join(ws.root, "coder.script.yaml");
  const write = JSON.stringify({ name: "write_file", args: { path: file, contents: "hello\n" } });
  const responses = [
    `{ node: coder, task: "^Write", delay_ms: 1500, content: "I will write ${file}.", tool_calls: [${write}] }`,
    `{ node: coder, task: "^Write", content: ${JSON.stringify(answer)} }`,
    `{ node: coder, task: "^Wait", delay_ms: 60000, content: "too late" }`,
  ];
  writeFileSync(script, ["responses:", ...responses.map((response) => `  - ${response}`), ""].join("\n"));
  return script;
}

/** `loopgraph serve --static <the built example>` in the workspace, answered by `script`: the app's URL, the server's and its token. */
async function serveApp(ws: Workspace, script: string): Promise<{ app: string; url: string; token: string }> {
  const args = ["--db", ws.db, "--static", APP, "--model", `scripted:${script}`];
  const { app, url, token } = await startServe(ws.dir, args, { env: { TMPDIR: ws.root } });
  return { app: app!, url, token };
}

describe.skipIf(noChromium)("the serve example chat in headless Chromium", () => {
  let browser: Browser;

  beforeAll(async () => {
    expect(existsSync(join(APP, "index.html")), "npm run build makes dist/examples/serve-chat").toBe(true);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  /** Opens the app and sends `task`: the page, its script errors, and the answers its runs resumed with. */
  const openAndSend = async (app: string, task: string) => {
    const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    // What each run the page starts resumes with (the answers it gives to approvals).
    const resumes: unknown[] = [];
    page.on("request", (request) => {
      const body = request.method() === "POST" && /\/runs\/stream$/.test(request.url()) ? request.postDataJSON() : undefined;
      if (body?.command?.resume !== undefined) resumes.push(body.command.resume);
    });
    await page.goto(app);
    await send(page, task);
    return { page, errors, resumes };
  };

  /** Sends `task` from the page's form; while the Coder's first answer is on its way, the run can be stopped. */
  const send = async (page: Page, task: string) => {
    await page.getByPlaceholder("a task for the agent", { exact: false }).fill(task);
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByRole("button", { name: "Stop" }).waitFor(LIVE);
  };

  /** Opens the app, sends `task`, and waits for the approval panel. */
  const sendTask = async (app: string, task: string) => {
    const opened = await openAndSend(app, task);
    const panel = opened.page.getByRole("region", { name: "approval" });
    await panel.waitFor(LIVE);
    expect(opened.errors).toEqual([]);
    return { ...opened, panel };
  };

  /** The thread the page shows (kept in its URL's hash). */
  const threadOf = (page: Page) => /#thread=(.+)$/.exec(page.url())?.[1];

  it("shows the approval a write asks for (tool, arguments, reason); approved, the file is written and the Coder's answer shows, as text", async () => {
    const ws = tempWorkspace({ git: true });
    const { app, url, token } = await serveApp(ws, coderScript(ws, "hello.txt", "Wrote hello.txt, <b>not bold</b>."));
    const { page, panel, errors, resumes } = await sendTask(app, "Write hello.txt");
    expect(await panel.locator("h2").innerText()).toBe("Approve write_file?");
    expect(JSON.parse(await panel.locator(".args").innerText())).toEqual({ path: "hello.txt", contents: "hello\n" });
    // The reason is the server's own: the interrupt's value, as getState gives it.
    const thread = threadOf(page);
    expect(thread).toBeDefined();
    const state = (await (await fetch(`${url}/threads/${thread}/state`, { headers: { "x-api-key": token } })).json()) as {
      tasks: { interrupts: { value: { reason: string; tool: string } }[] }[];
    };
    const request = state.tasks.flatMap((task) => task.interrupts)[0]!.value;
    expect(request.tool).toBe("write_file");
    expect(await panel.locator(".reason").innerText()).toBe(request.reason);
    expect(await page.locator(".message.human").first().innerText()).toContain("Write hello.txt");
    expect(existsSync(join(ws.dir, "hello.txt"))).toBe(false);
    await shot(page, "serve-chat-approval");

    await panel.getByRole("button", { name: "Approve" }).click();
    const answer = page.locator(".message.ai", { hasText: "Wrote hello.txt" });
    await answer.waitFor(LIVE);
    await page.getByRole("button", { name: "Send" }).waitFor(LIVE);
    expect(resumes).toEqual([{ decision: "approve" }]);
    expect(readFileSync(join(ws.dir, "hello.txt"), "utf8")).toBe("hello\n");
    expect(await panel.count()).toBe(0);
    // The model's text is shown as text, never as HTML.
    expect(await answer.locator(".text").innerText()).toBe("Wrote hello.txt, <b>not bold</b>.");
    expect(await page.locator(".messages b").count()).toBe(0);
    expect(errors).toEqual([]);
    await shot(page, "serve-chat-approved");
  });

  it("rejected with a reason, the call does not run, and the model's next answer shows; the next task is a new thread, whose run Stop stops", async () => {
    const ws = tempWorkspace({ git: true });
    const { app, url, token } = await serveApp(ws, coderScript(ws, "secret.txt", "Understood: I left secret.txt alone."));
    const { page, panel, errors, resumes } = await sendTask(app, "Write secret.txt");
    expect(await panel.locator("h2").innerText()).toBe("Approve write_file?");
    await panel.getByPlaceholder("why not", { exact: false }).fill("keep secrets out of the repository");
    await panel.getByRole("button", { name: "Reject" }).click();
    await page.locator(".message.ai", { hasText: "Understood: I left secret.txt alone." }).waitFor(LIVE);
    await page.getByRole("button", { name: "Send" }).waitFor(LIVE);
    expect(resumes).toEqual([{ decision: "reject", reason: "keep secrets out of the repository" }]);
    expect(existsSync(join(ws.dir, "secret.txt"))).toBe(false);
    expect(await panel.count()).toBe(0);
    expect(errors).toEqual([]);
    await shot(page, "serve-chat-rejected");

    // The next task is a thread of its own; Stop stops its run, which waits, resumable, as Ctrl-C leaves one.
    const first = threadOf(page);
    await send(page, "Wait for a minute");
    await expect.poll(() => threadOf(page) !== undefined && threadOf(page) !== first, LIVE).toBe(true);
    const second = threadOf(page)!;
    // Its messages only: the first thread's are gone.
    await expect.poll(() => page.locator(".message").allInnerTexts(), LIVE).toEqual([expect.stringContaining("Wait for a minute")]);
    await page.getByRole("button", { name: "Stop" }).click();
    await page.getByRole("button", { name: "Send" }).waitFor(LIVE);
    const status = async () =>
      ((await (await fetch(`${url}/threads/${second}`, { headers: { "x-api-key": token } })).json()) as { status: string }).status;
    await expect.poll(status, LIVE).toBe("interrupted");
    expect(errors).toEqual([]);
  });
});
