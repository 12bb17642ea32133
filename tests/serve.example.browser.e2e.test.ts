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
import { cleanEnv, ROOT } from "./helpers/cli.js";
import { startCli } from "./helpers/e2e.js";
import { CHROMIUM, lacks } from "./helpers/requirements.js";
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
 * A script for the Coder: first it writes `file` (a call that asks for approval in mode `ask`),
 * after a moment, so the page shows its Stop button; then it answers `answer`.
 */
function coderScript(ws: Workspace, file: string, answer: string): string {
  const script = join(ws.root, "coder.script.yaml");
  const write = JSON.stringify({ name: "write_file", args: { path: file, contents: "hello\n" } });
  const responses = [
    `{ node: coder, delay_ms: 1500, content: "I will write ${file}.", tool_calls: [${write}] }`,
    `{ node: coder, content: ${JSON.stringify(answer)} }`,
  ];
  writeFileSync(script, ["responses:", ...responses.map((response) => `  - ${response}`), ""].join("\n"));
  return script;
}

/** `loopgraph serve --static <the built example>` in the workspace, answered by `script`: the app's URL it printed, its origin and token. */
async function startServe(ws: Workspace, script: string): Promise<{ app: string; origin: string; token: string }> {
  const serve = startCli(["--db", ws.db, "serve", "--static", APP, "--model", `scripted:${script}`], {
    cwd: ws.dir,
    env: cleanEnv({ TMPDIR: ws.root }),
  });
  const at = await serve.waitForLine((line) => line.startsWith("  app: "));
  const app = serve.lines[at]!.slice("  app: ".length).trim();
  const url = new URL(app);
  return { app, origin: url.origin, token: url.searchParams.get("token")! };
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

  /** Opens the app, sends `task`, and waits for the approval panel: the page and the panel. */
  const sendTask = async (app: string, task: string) => {
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
    await page.getByPlaceholder("a task for the agent", { exact: false }).fill(task);
    await page.getByRole("button", { name: "Send" }).click();
    // While the Coder's first answer is on its way, the run can be stopped.
    await page.getByRole("button", { name: "Stop" }).waitFor(LIVE);
    const panel = page.getByRole("region", { name: "approval" });
    await panel.waitFor(LIVE);
    expect(errors).toEqual([]);
    return { page, panel, errors, resumes };
  };

  /** The thread the page shows (kept in its URL's hash). */
  const threadOf = (page: Page) => /#thread=(.+)$/.exec(page.url())?.[1];

  it("shows the approval a write asks for (tool, arguments, reason); approved, the file is written and the Coder's answer shows, as text", async () => {
    const ws = tempWorkspace({ git: true });
    const { app, origin, token } = await startServe(ws, coderScript(ws, "hello.txt", "Wrote hello.txt, <b>not bold</b>."));
    const { page, panel, errors, resumes } = await sendTask(app, "Write hello.txt");
    expect(await panel.locator("h2").innerText()).toBe("Approve write_file?");
    expect(JSON.parse(await panel.locator(".args").innerText())).toEqual({ path: "hello.txt", contents: "hello\n" });
    // The reason is the server's own: the interrupt's value, as getState gives it.
    const thread = threadOf(page);
    expect(thread).toBeDefined();
    const state = (await (await fetch(`${origin}/threads/${thread}/state`, { headers: { "x-api-key": token } })).json()) as {
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

  it("rejected with a reason, the call does not run, and the model's next answer shows", async () => {
    const ws = tempWorkspace({ git: true });
    const { app } = await startServe(ws, coderScript(ws, "secret.txt", "Understood: I left secret.txt alone."));
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
  });
});
