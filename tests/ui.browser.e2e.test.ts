/**
 * `loopgraph ui` in a real headless browser: Debian's Chromium driven by playwright-core (its own
 * browser download cannot be reached here), against the server the CLI starts on 127.0.0.1.
 * Screenshots go to test-results/ for review. Without Chromium the tests are skipped, unless
 * LOOPGRAPH_REQUIRE_CHROMIUM is set (CI), where they fail.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, ROOT, runCli } from "./helpers/cli.js";
import { finalState, historyOf, recordedStatus, run, startRun } from "./helpers/e2e.js";
import { writeLongThread } from "../bench/fixtures.js";
import { threadHistory } from "../src/engine/inspect.js";
import { startEval } from "../src/eval/run.js";
import { withTables } from "../src/store/tables.js";
import { evalFixture, HOSTILE_OUTPUT, passingAndHostile, writeStoppedEval } from "./helpers/eval.js";
import { startUi } from "./helpers/ui.js";
import { CHROMIUM, lacks } from "./helpers/requirements.js";
import { sharedWorkspace, tempWorkspace } from "./helpers/workspace.js";

const noChromium = lacks("chromium", "the web inspector's browser tests");
const SHOTS = join(ROOT, "test-results");
/** How long a page may take to show a change: a CLI command started by the server, then the next server-sent event (a busy machine is slow to start node). */
const LIVE = { timeout: 30_000, interval: 100 };
/**
 * How soon a long thread's page shows its newest step, from the request, on a machine busy with
 * other tests: the page's own script is small (Mermaid comes in a script of its own, used only for
 * the graph), so this is mostly the server's first answer (the bench row ui_thread_first_page_5000).
 */
const FIRST_PAINT_MS = 1000;

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** A scripted-model file of `responses` (one YAML flow mapping each) in the test's folder, beside the workspace (its `wait_for` gates are files there). */
function scriptFile(place: { root: string }, name: string, responses: string[]): string {
  const script = join(place.root, name);
  writeFileSync(script, ["responses:", ...responses.map((response) => `  - ${response}`), ""].join("\n"));
  return script;
}

describe.skipIf(noChromium)("the web inspector in headless Chromium", () => {
  const ws = sharedWorkspace({ git: "init" });
  let browser: Browser;
  let demoThread: string;

  beforeAll(async () => {
    const demo = await runCli(["--db", ws.db, "demo"], { env: cleanEnv({ TMPDIR: ws.root }), cwd: ws.dir });
    expect(demo.code, demo.stderr).toBe(0);
    demoThread = /thread (demo-\d+)/.exec(demo.stdout)![1]!;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
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

  /** `loopgraph ui` on the store `db`, and a page of it at the thread; its temporary files (the logs of the runs it starts) beside the store, removed with the test's folder. */
  const openThread = async (db: string, thread: string) => {
    const started = await startUi(db, [], { TMPDIR: dirname(db) });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(`${started.url}#/thread/${thread}`);
    return { ...started, page };
  };

  it("refuses a request without the token, by another host name or from another origin; the page's own requests carry it; --open hands the URL to the browser", async () => {
    // A stand-in for the desktop's opener: it writes down what it was given.
    const bin = join(ws.root, "bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, "xdg-open"), `#!/bin/sh\necho "$1" > ${JSON.stringify(join(ws.root, "opened"))}\n`, { mode: 0o755 });
    const { url, origin, token } = await startUi(ws.db, ["--open"], { PATH: `${bin}:${process.env.PATH}` });
    await expect
      .poll(() => (existsSync(join(ws.root, "opened")) ? readFileSync(join(ws.root, "opened"), "utf8").trim() : ""), LIVE)
      .toBe(url);
    expect((await fetch(`${origin}/`)).status).toBe(401);
    expect((await fetch(`${origin}/api/threads`)).status).toBe(401);
    expect((await fetch(`${origin}/api/threads?token=${"0".repeat(token.length)}`)).status).toBe(401);
    expect((await fetch(`${origin}/api/threads`, { headers: { "x-loopgraph-token": token, origin: "http://evil.example" } })).status).toBe(
      403,
    );
    const ok = await fetch(url);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBeNull();
    expect(ok.headers.get("content-security-policy")).toContain("default-src 'self'");
    // Every script and style is served by the server itself: nothing from a CDN.
    const html = await ok.text();
    expect(html.match(/(?:src|href)="([^"]+)"/g)!.every((ref) => ref.includes('="/assets/'))).toBe(true);
    const { createConnection } = await import("node:net");
    const status = await new Promise<string>((resolve) => {
      const socket = createConnection(Number(new URL(origin).port), "127.0.0.1", () =>
        socket.write(`GET /api/threads?token=${token} HTTP/1.1\r\nHost: rebound.example:80\r\nConnection: close\r\n\r\n`),
      );
      let answer = "";
      socket.on("data", (chunk) => (answer += chunk.toString()));
      socket.on("end", () => resolve(answer.split("\r\n")[0]!));
    });
    expect(status).toBe("HTTP/1.1 403 Forbidden");
    // A bad request is answered with its reason, never a stack: a malformed escape, an unknown thread, an unknown action.
    const ask = (path: string, init: RequestInit = {}) =>
      fetch(`${origin}${path}`, { ...init, headers: { "x-loopgraph-token": token, ...(init.headers as Record<string, string>) } });
    expect((await ask("/api/threads/%E0%A4%A")).status).toBe(400);
    const unknown = await ask("/api/threads/nope");
    expect([unknown.status, ((await unknown.json()) as { error: string }).error]).toEqual([400, expect.stringMatching(/thread "nope"/)]);
    const action = await ask("/api/threads/nope/actions/explode", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect([action.status, ((await action.json()) as { error: string }).error]).toEqual([
      400,
      'no action "explode": use approve, reject, resume, send, rewind or fork',
    ]);
    // A port in use is one line, exit 2.
    const taken = await runCli(["--db", ws.db, "ui", "--port", new URL(origin).port], { env: cleanEnv() });
    expect([taken.code, taken.stderr]).toEqual([
      2,
      `loopgraph: port ${new URL(origin).port} is in use: pick another with --port, or leave it out for a free one\n`,
    ]);
  });

  it("shows the demo's monitor thread and its loop: the graph's nodes, the timeline with the Coder's nested steps, a step's changes, the Looper's status and [AUTO] log", async () => {
    const { url } = await startUi(ws.db);
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(url);
    await page.getByRole("link", { name: demoThread, exact: true }).first().waitFor();
    await expect.poll(() => page.locator("table.threads tbody tr").count(), LIVE).toBe(2);
    // Each thread's tokens.
    expect(await page.locator("table.threads tbody tr", { hasText: "coder-review" }).innerText()).toMatch(/\t[1-9]\d*→[1-9]\d*\t/);
    // Filter and search.
    await page.getByPlaceholder("search thread, graph, task").fill("coder-review");
    await expect.poll(() => page.locator("table.threads tbody tr").count(), LIVE).toBe(1);
    await shot(page, "ui-threads");

    await page
      .getByRole("link", { name: `${demoThread}.loop` })
      .first()
      .click();
    await page.locator("[data-testid=graph] svg").waitFor();
    const graph = await page.locator("[data-testid=graph]").innerText();
    for (const node of ["looper", "coder", "review", "judge"]) expect(graph).toContain(node);
    expect(graph).toMatch(/ran 2×/);
    const timeline = page.locator("[data-testid=timeline]");
    expect(await timeline.innerText()).toMatch(/coder/);
    // A step opened: its state changes, and the Coder's own steps under its node's step.
    expect(await timeline.locator("tr.nested").count()).toBe(0);
    await timeline.locator("tr.step", { hasText: "coder" }).first().click();
    await page.locator("[data-testid=checkpoint] .change").first().waitFor();
    expect(await page.locator("[data-testid=checkpoint]").innerText()).toMatch(/outputs\.coder/);
    await timeline.locator("tr.nested").first().waitFor();
    expect(await timeline.innerText()).toContain("↳ tools");
    // The Looper's status block; its [AUTO] log, the messages, when opened.
    expect(await page.locator(".status-block").innerText()).toContain("[Looper status]");
    await page.getByText("Messages and the [AUTO] log").click();
    await page.locator(".message.auto").first().waitFor();
    expect(await page.locator(".messages").innerText()).toContain("[AUTO] loop ended");
    // The tool calls of each of the Coder's turns (one a round), with their arguments and results, when opened.
    await page.getByText("Tool calls", { exact: true }).click();
    const turns = page.locator("[data-testid=tool-turn]");
    await turns.first().waitFor();
    expect(await turns.locator("h3").allInnerTexts()).toEqual(["coder, turn 1", "coder, turn 2"]);
    expect(await turns.nth(0).innerText()).toMatch(/todo_write[\s\S]*write_file[\s\S]*palindrome\.js[\s\S]*shell/);
    expect(await turns.nth(1).innerText()).toMatch(/write_file[\s\S]*palindrome\.test\.js[\s\S]*shell/);
    // Each file-changing step's diff, from the workspace snapshots, when opened.
    await page.getByText("Files changed, step by step").click();
    const files = page.locator("[data-testid=file-step]");
    await files.first().waitFor();
    expect(await files.first().innerText()).toContain("palindrome.js");
    expect(await files.first().locator(".d2h-ins .d2h-code-line-ctn").first().innerText()).toMatch(/isPalindrome|\S/);
    expect(await files.first().locator(".d2h-file-name").first().innerText()).toContain("palindrome.js");
    // A rewind preview changes nothing and says what a rewind would do.
    await page.getByRole("button", { name: "Rewind preview" }).click();
    await expect
      .poll(() => page.locator("[data-testid=action-result]").innerText(), LIVE)
      .toMatch(/loopgraph rewind --dry-run --json -- .*: exit 0/);
    expect(await page.locator("[data-testid=action-result]").innerText()).toContain('"dryRun": true');
    // The loop has ended: no Add or Stop for it, nothing to resume.
    expect(await page.locator(".looper-commands").count()).toBe(0);
    expect(await page.locator("[data-testid=resume]").count()).toBe(0);
    await shot(page, "ui-loop-thread");
    // The exported script, downloaded as `inspect --export-script` writes it.
    const href = await page.getByRole("link", { name: "Download the exported script" }).getAttribute("href");
    const download = await fetch(new URL(href!, url));
    expect(download.status).toBe(200);
    expect(download.headers.get("content-disposition")).toBe(`attachment; filename="${demoThread}.loop.script.yaml"`);
    expect(await download.text()).toMatch(/^responses:/m);

    // The chat thread links to its loop.
    await page.goto(`${url}#/thread/${demoThread}`);
    await expect.poll(() => page.locator("[data-testid=graph]").innerText(), LIVE).toContain("mediator");
    expect(await page.locator(".meta").innerText()).toContain(`linked: ${demoThread}.loop`);
    await page.close();
  });

  it("shows the evals and an eval's report: pass rates with their intervals, the comparison, the task matrix whose marks open each trial's thread, which links back; a stopped eval says how to continue it, a running one is followed to its end", async () => {
    // Variant A writes 42 (writes-42 passes), B writes 43 (nothing passes).
    const { db, root, suite, variants, options } = evalFixture(passingAndHostile, ["42", "43"]);
    const run = await startEval({ suite, variants, repeat: 1, concurrency: 2 }, options());
    const failed = run.trials.find((trial) => trial.task === "wants-43" && trial.variant === "A")!;
    const stopped = await writeStoppedEval({ db, cwd: root, env: {} }, run.record, "openai:gpt-4o");
    // The user's config prices that model: the stopped eval's cost is estimated with it.
    const config = join(root, "config");
    mkdirSync(join(config, "loopgraph"), { recursive: true });
    writeFileSync(join(config, "loopgraph", "config.yaml"), "prices:\n  openai:gpt-4o: { input: 2.5, output: 10 }\n");
    const { url } = await startUi(db, [], { TMPDIR: root, XDG_CONFIG_HOME: config });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(url);
    await page.getByRole("link", { name: "Evals", exact: true }).click();
    await expect.poll(() => page.locator("table.evals tbody tr").count(), LIVE).toBe(2);
    expect(await page.locator("table.evals tbody tr").first().innerText()).toMatch(new RegExp(`^${stopped.id}\tanswers\tstopped\t`));
    await page.getByRole("link", { name: run.record.id, exact: true }).click();

    await page.locator("td.pass-rate").first().waitFor();
    expect(await page.locator("td.pass-rate").allInnerTexts()).toEqual(["1/2 passed 50% [9%–91%]", "0/2 passed 0% [0%–66%]"]);
    expect(await page.locator(".comparison").innerText()).toBe("B − A: −50 points [−91 to +27]\n\ngained: none\n\nlost: writes-42");
    const matrix = page.getByTestId("matrix");
    expect(await matrix.locator("tbody tr").allInnerTexts()).toEqual(["writes-42\t✓\t✗", "wants-43\t✗\t✗"]);
    // What the check printed is text on the page, in the mark's title and the list of trials that did not pass: no element of it.
    const mark = matrix.locator("tbody tr", { hasText: "wants-43" }).locator("a.mark-check-failed").first();
    const reason = `\`echo '${HOSTILE_OUTPUT}'; exit 1\` exited with 1: ${HOSTILE_OUTPUT}`;
    expect(await mark.getAttribute("title")).toBe(`wants-43 A#1: check-failed: ${reason}`);
    expect(await page.locator(".failed-trials li").allInnerTexts()).toEqual([
      `wants-43 A#1: check-failed (${reason})`,
      'writes-42 B#1: check-failed (`test "$(cat answer.txt)" = 42` exited with 1)',
      `wants-43 B#1: check-failed (${reason})`,
    ]);
    expect(await page.locator("main img, main b:has-text('bold')").count()).toBe(0);
    await shot(page, "ui-eval");

    // A mark opens its trial's thread, which names its eval and links back.
    await mark.click();
    await expect
      .poll(
        () =>
          page
            .getByTestId("trial")
            .innerText()
            .catch(() => ""),
        LIVE,
      )
      .toBe(`trial wants-43 A#1 of eval ${run.record.id}`);
    expect(new URL(page.url()).hash).toBe(`#/thread/${failed.threadId}`);
    await page.getByTestId("trial").getByRole("link").click();
    await page.locator("td.pass-rate").first().waitFor();
    expect(new URL(page.url()).hash).toBe(`#/eval/${run.record.id}`);
    expect(await page.evaluate("document.title")).not.toBe("1");

    await page.goto(`${url}#/eval/${stopped.id}`);
    expect(await page.getByTestId("stopped").innerText()).toBe(
      `Stopped with 1 trial pending: loopgraph eval --resume ${stopped.id} continues it (finished trials are not run again).`,
    );
    expect(await page.getByTestId("matrix").locator("a.mark-pending").getAttribute("href")).toBe(`#/thread/${stopped.id}-A1-writes-42`);
    expect(await page.locator("table.variants tbody tr").innerText()).toBe(
      "A\tcoder-review\topenai:gpt-4o\t0/0 passed (no trial ran)\t-\t0 → 0\tcost 0.0000\t0.0 s\tnone\t0\t1",
    );
    // Resumed (running): the page follows it to its end without a reload.
    const store = { db, cwd: root, env: {} };
    await withTables(store, "write", (tables) => tables.evals.setStatus(stopped.id, "running"));
    await page.reload();
    expect(await page.getByTestId("running").innerText()).toBe("Running: 1 trial pending; this page follows it.");
    await withTables(store, "write", async (tables) => {
      const trial = { task: "writes-42", variant: "A", repetition: 1, threadId: `${stopped.id}-A1-writes-42` };
      const tokens = { inputTokens: 1_000_000, outputTokens: 0 };
      await tables.evals.finishTrial(stopped.id, {
        ...trial,
        outcome: "passed",
        rounds: 1,
        tokens,
        wallMs: 1000,
        finishedAt: stopped.createdAt,
      });
      await tables.evals.setStatus(stopped.id, "finished");
    });
    await expect
      .poll(() => page.locator("table.variants tbody tr").innerText(), LIVE)
      .toBe("A\tcoder-review\topenai:gpt-4o\t1/1 passed 100% [21%–100%]\t1.0\t1000000 → 0\tcost 2.50\t1.0 s\tnone\t0\t0");
    expect(await page.locator(".thread-title .status").innerText()).toBe("finished");
    await page.getByRole("link", { name: "all evals" }).click();
    await expect.poll(() => page.locator("table.evals tbody tr").first().innerText(), LIVE).toMatch(/\tfinished\t[\s\S]*\t1\/1\t/);
    await page.close();
  });

  it("opens a 5,000-checkpoint thread at its newest steps within the target (a first answer of at most 100 KB); older steps come a page at a time", async () => {
    const place = tempWorkspace();
    await writeLongThread(place.db, "long", 5000);
    const newest = (await threadHistory("long", { db: place.db, env: {} }, { limit: 1 })).checkpoints[0]!;
    const { origin, token, url } = await startUi(place.db, [], { TMPDIR: place.root });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const first = await fetch(`${origin}/api/threads/long`, { headers: { "x-loopgraph-token": token } });
    expect((await first.arrayBuffer()).byteLength).toBeLessThanOrEqual(100_000);
    // When the newest step's row is in the page, by the page's clock (from the request of the page): the
    // browser paints it next, before the graph is drawn (an effect, after the paint).
    await page.addInitScript(`
      const seen = new MutationObserver(() => {
        if (!document.querySelector("[data-testid=timeline] tr.step.head")) return;
        window.headAt = performance.now();
        seen.disconnect();
      });
      seen.observe(document, { childList: true, subtree: true });
    `);
    const head = page.locator("[data-testid=timeline] tr.step.head");
    // The median of three loads of the page: one load slowed by another test's burst says little.
    const times: number[] = [];
    for (let load = 0; load < 3; load++) {
      await (load === 0 ? page.goto(`${url}#/thread/long`) : page.reload());
      await head.waitFor();
      times.push((await page.evaluate("window.headAt")) as number);
      expect(await head.innerText()).toMatch(new RegExp(`^4999\\t\\t${newest.nodes[0]}\\t`));
    }
    expect(times.sort((a, b) => a - b)[1], `first paints ${times.join(", ")} ms`).toBeLessThanOrEqual(FIRST_PAINT_MS);
    await expect.poll(() => page.locator("[data-testid=graph] svg").count(), LIVE).toBe(1);
    const rows = page.locator("[data-testid=timeline] tr.step");
    expect(await rows.count()).toBe(200);
    await page.getByTestId("older").click();
    await expect.poll(() => rows.count(), LIVE).toBe(400);
    expect(await rows.first().locator("td").first().innerText()).toBe("4600");
    expect(await page.getByTestId("older").innerText()).toBe("4600 older steps: show 200 more");
    await page.close();
  });

  it("no secret of the run reaches a page: what the store redacted stays redacted, in the state, the diffs and the exported script", async () => {
    const secret = "s3cret-ui-value-42";
    const place = tempWorkspace({ git: "init", files: { "leak.txt": `key=${secret}\n` } });
    const script = scriptFile(place, "leak.script.yaml", [
      "{ node: coder, tool_calls: [ { name: read_file, args: { path: leak.txt } } ] }",
      `{ node: coder, tool_calls: [ { name: write_file, args: { path: copy.txt, contents: "${secret}" } } ] }`,
      `{ node: coder, content: "The key is ${secret}." }`,
    ]);
    const done = await run(
      place,
      { graph: "coder", task: "copy the key", thread: "leaky", script, approval: "auto" },
      { env: cleanEnv({ UI_SECRET_TOKEN: secret }) },
    );
    expect(done.code, done.stderr).toBe(0);
    const { origin, token, page } = await openThread(place.db, "leaky");
    for (const section of ["Files changed, step by step", "Tool calls", "Messages and the [AUTO] log"])
      await page.getByText(section).click();
    await page.locator("[data-testid=file-step]").first().waitFor();
    await page.locator(".messages .message").first().waitFor();
    await page.getByText("no tool call").waitFor();
    await page.locator("[data-testid=timeline] tr.step", { hasText: "coder" }).first().click();
    await page.locator("[data-testid=checkpoint] .change").first().waitFor();
    await page.locator("[data-testid=checkpoint] details").click();
    await expect.poll(() => page.locator("[data-testid=checkpoint] .state").innerText(), LIVE).toContain("[redacted]");
    expect(await page.content()).not.toContain(secret);
    const api = (path: string) =>
      fetch(`${origin}${path}`, { headers: { "x-loopgraph-token": token } }).then((response) => response.text());
    const thread = await api("/api/threads/leaky");
    const steps = (JSON.parse(thread) as { history: { checkpoints: { checkpointId: string }[] } }).history.checkpoints;
    const opened = await Promise.all(steps.map((step) => api(`/api/threads/leaky/steps/${step.checkpointId}`)));
    const onDemand = await Promise.all(["messages", "tool-calls", "files"].map((part) => api(`/api/threads/leaky/${part}`)));
    expect(onDemand[0]).toContain("[redacted]");
    expect(opened.join("\n")).toContain("[redacted]");
    for (const body of [thread, ...opened, ...onDemand, await api("/api/threads"), await api("/api/threads/leaky/export-script")])
      expect(body).not.toContain(secret);
    await page.close();
  });

  it("follows a running run live: the node at work is outlined on the graph, and the end arrives without a reload", async () => {
    const place = tempWorkspace({ git: "init" });
    const script = scriptFile(place, "slow.script.yaml", [
      "{ node: coder, tool_calls: [ { name: list_dir, args: { path: . } } ] }",
      '{ node: coder, wait_for: gate, content: "Listed." }',
    ]);
    const running = startRun(place, { graph: "coder", task: "look around", thread: "live", script, approval: "auto" });
    await running.waitForEvent("tool_result");
    const { page } = await openThread(place.db, "live");
    await page.locator(".thread-title .status-running").waitFor();
    await expect.poll(() => page.locator("[data-testid=graph] g.node.current").count(), LIVE).toBe(1);
    expect(await page.locator("[data-testid=graph] g.node.current").textContent()).toContain("coder");
    expect(await page.locator("[data-testid=timeline]").innerText()).toMatch(/steps of a node that has not finished:[\s\S]*→ list_dir/);
    writeFileSync(join(place.root, "gate"), "");
    await page.locator(".thread-title .status-finished").waitFor({ timeout: 30_000 });
    expect((await running.done).code).toBe(0);
    await expect.poll(() => page.locator("[data-testid=graph] g.node.current").count(), LIVE).toBe(0);
    expect(await page.locator("[data-testid=timeline]").innerText()).toContain("Listed.");
    await page.close();
  });

  it("outlines the node at work when it is a node without steps of its own (an agent), and none once the run ended", async () => {
    const place = tempWorkspace({ git: "init" });
    const script = scriptFile(place, "critique-waits.script.yaml", [
      '{ node: draft, content: "A draft." }',
      '{ node: critique, wait_for: gate, content: \'{"verdict": "approve", "notes": "ok"}\' }',
    ]);
    const running = startRun(place, { graph: "example-review", task: "write", thread: "agent-at-work", script });
    await running.waitForNode("critique");
    const { page } = await openThread(place.db, "agent-at-work");
    await page.locator(".thread-title .status-running").waitFor();
    await expect.poll(() => page.locator("[data-testid=graph] g.node.current").count(), LIVE).toBe(1);
    expect(await page.locator("[data-testid=graph] g.node.current").textContent()).toContain("critique");
    writeFileSync(join(place.root, "gate"), "");
    expect((await running.done).code).toBe(0);
    await page.locator(".thread-title .status-finished").waitFor({ timeout: 30_000 });
    await expect.poll(() => page.locator("[data-testid=graph] g.node.current").count(), LIVE).toBe(0);
    await page.close();
  });

  it("offers Resume for an interrupted thread, not for a running or finished one; Resume runs `loopgraph resume` and the page follows it to the end", async () => {
    const place = tempWorkspace({ git: "init" });
    const script = scriptFile(place, "resumed.script.yaml", ['{ node: coder, wait_for: gate, content: "Done after a resume." }']);
    const running = startRun(place, { graph: "coder", task: "look around", thread: "cut-off", script, approval: "auto" });
    await running.waitForNode("coder");
    const { page } = await openThread(place.db, "cut-off");
    await page.locator(".thread-title .status-running").waitFor();
    expect(await page.locator("[data-testid=resume]").count()).toBe(0);
    // While it runs, a fork or a rewind would change the thread under its run: only the preview is offered.
    await page.locator("[data-testid=timeline] tr.step", { hasText: "start" }).first().click();
    await page.getByRole("button", { name: "Rewind preview" }).waitFor();
    expect(await page.getByRole("button", { name: "Fork from here" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: "Rewind files" }).count()).toBe(0);
    await running.kill("SIGKILL");
    await page.locator(".thread-title .status-interrupted").waitFor({ timeout: 30_000 });
    expect(await page.getByRole("button", { name: "Fork from here" }).count()).toBe(1);
    writeFileSync(join(place.root, "gate"), "");
    await page.getByRole("button", { name: "Resume" }).click();
    await page.locator(".thread-title .status-finished").waitFor({ timeout: 30_000 });
    expect(await page.locator("[data-testid=timeline]").innerText()).toContain("Done after a resume.");
    expect(await page.locator("[data-testid=resume]").count()).toBe(0);
    await page.close();
  });

  it("offers Add and Stop while a loop runs, as `loopgraph send`, and neither once it has stopped", async () => {
    const place = tempWorkspace({ git: "init" });
    const script = scriptFile(place, "loop.script.yaml", [
      '{ node: coder, wait_for: gate, content: "Did round 1." }',
      '{ node: review.specs_breakdown, content: \'{"rating": "normal", "comments": []}\' }',
      '{ node: review.task_log, content: \'{"rating": "normal", "comments": []}\' }',
      '{ node: judge, content: \'{"decision": "terminate", "reason": "done"}\' }',
    ]);
    const running = startRun(place, { graph: "coder-review", task: "do it", thread: "looping", script, approval: "auto" });
    await running.waitForNode("coder");
    const { page } = await openThread(place.db, "looping");
    // A task sent to the loop for after this round (as `loopgraph send <thread> "add: …"`): the status block shows it, live.
    await page.getByPlaceholder("a task for after this round").fill("write the docs");
    await page.getByRole("button", { name: "Add", exact: true }).click();
    await expect.poll(() => page.locator(".status-block").innerText(), LIVE).toContain('pending: 1 ("write the docs")');
    // Stop, as `loopgraph send <thread> stop`: the command's answer is shown.
    await page.getByRole("button", { name: "Stop", exact: true }).click();
    await expect
      .poll(() => page.locator(".looper-commands .result").innerText(), LIVE)
      .toMatch(/^loopgraph send -- looping stop: exit 0\nqueued for thread .*\{"command":"stop"\}/);
    writeFileSync(join(place.root, "gate"), "");
    // Stopped by the command: the run ends as interrupted (exit 130).
    expect((await running.done).code).toBe(130);
    await page.locator(".thread-title .status-interrupted").waitFor({ timeout: 30_000 });
    expect(await page.locator(".status-block").count()).toBe(1);
    await expect.poll(() => page.locator(".looper-commands").count(), LIVE).toBe(0);
    await page.close();
  });

  /**
   * A scripted Coder whose model step after `first` waits until the file `gate` beside the script
   * exists, then calls a tool: the run writes its progress while it goes on, as the CLI does.
   */
  const slowScript = (place: { root: string }, first: string[]): string =>
    scriptFile(place, "slow.script.yaml", [
      ...first,
      "{ node: coder, wait_for: gate, tool_calls: [ { name: list_dir, args: { path: . } } ] }",
      '{ node: coder, content: "Done, slowly." }',
    ]);

  it("a run the page approves lives on its own: its next model step waits, loopgraph ui is stopped (SIGTERM) meanwhile, and the run finishes", async () => {
    const place = tempWorkspace({ git: "init", files: { "notes.txt": "old\n" } });
    const script = slowScript(place, [
      '{ node: coder, tool_calls: [ { name: write_file, args: { path: notes.txt, contents: "new\\n" } } ] }',
    ]);
    expect((await run(place, { graph: "coder", task: "update the notes", thread: "slow", script, approval: "ask" })).code).toBe(3);
    const { ui, page } = await openThread(place.db, "slow");
    await page.getByRole("button", { name: "Approve" }).click();
    await page.locator(".thread-title .status-running").waitFor({ timeout: 30_000 });
    await page.close();
    expect((await ui.kill("SIGTERM")).code).toBe(0);
    // The run's model step answers only now, with loopgraph ui gone.
    expect(await recordedStatus(place.db, "slow")).toBe("running");
    writeFileSync(join(place.root, "gate"), "");
    await expect.poll(() => recordedStatus(place.db, "slow"), LIVE).toBe("finished");
    expect(readFileSync(join(place.dir, "notes.txt"), "utf8")).toBe("new\n");
    expect(JSON.stringify((await finalState(place.db, "slow")).messages)).toContain("Done, slowly.");
  });

  it("a fork started from the page lives on its own: its model step waits, the page follows it to its end", async () => {
    const place = tempWorkspace({ git: "init" });
    const script = slowScript(place, []);
    const gate = join(place.root, "gate");
    writeFileSync(gate, "");
    expect((await run(place, { graph: "coder", task: "look around", thread: "forked", script, approval: "auto" })).code).toBe(0);
    // The fork takes the gated answer again: it waits until the page has shown it running.
    rmSync(gate);
    const { page } = await openThread(place.db, "forked");
    await page.locator("[data-testid=timeline] tr.step", { hasText: "start" }).first().click();
    await page.getByPlaceholder(/state edits/).fill("task=look around again");
    await page.getByRole("button", { name: "Fork from here" }).click();
    await expect
      .poll(() => page.locator("[data-testid=action-result]").innerText(), LIVE)
      .toMatch(/^loopgraph replay --from=\S+ "--set=task=look around again" -- forked: running/);
    await page.locator(".thread-title .status-running").waitFor({ timeout: 30_000 });
    writeFileSync(gate, "");
    await page.locator(".thread-title .status-finished").waitFor({ timeout: 30_000 });
    const fork = (await historyOf(place.db, "forked")).checkpoints.filter((checkpoint) => checkpoint.branch === 1);
    expect(fork.map((checkpoint) => checkpoint.nodes.join(","))).toContain("coder");
    expect(await page.locator("[data-testid=timeline]").innerText()).toMatch(/fork 1[\s\S]*Done, slowly\./);
    await page.close();
  });

  it("several calls waiting at once: a box for each, answered on its own; the run goes on once the last is answered, its map step shown as lanes", async () => {
    const place = tempWorkspace({ git: "init" });
    const fixture = (name: string) => join(ROOT, "tests/fixtures/parallel", name);
    const paused = await run(place, {
      graph: fixture("two-asks.yaml"),
      thread: "two",
      task: "t",
      script: fixture("two-asks.script.yaml"),
      approval: "ask",
    });
    expect(paused.code, paused.stderr).toBe(3);
    const { page } = await openThread(place.db, "two");
    const boxes = page.locator("[data-testid=approval]");
    await expect.poll(() => boxes.count(), LIVE).toBe(2);
    expect(await boxes.nth(0).innerText()).toContain("coder[0] wants to call shell (call_0_0)");
    expect(await boxes.nth(1).innerText()).toContain("coder[1] wants to call shell (call_2_0)");
    await boxes.nth(1).getByRole("button", { name: "Approve" }).click();
    // The answered branch runs on; the run pauses again with the other call alone.
    await expect.poll(() => page.locator("[data-testid=approval]").innerText(), LIVE).toMatch(/coder\[0\] wants to call shell\n/);
    await page.getByPlaceholder("reason for the agent (reject)").fill("not now");
    await page.getByRole("button", { name: "Reject" }).click();
    await page.locator(".thread-title .status-finished").waitFor({ timeout: 30_000 });
    const coders = (await finalState<{ outputs: { coder: { toolCalls: { ok: boolean }[] }[] } }>(place.db, "two")).outputs.coder;
    expect(coders.map((coder) => coder.toolCalls.map((call) => call.ok))).toEqual([[false], [true]]);
    // The map's step, with a lane under it for each instance: its tokens and its time.
    const lanes = page.locator("[data-testid=timeline] tr.lane");
    await expect.poll(() => lanes.count(), LIVE).toBe(2);
    const texts = await lanes.allInnerTexts();
    texts.forEach((text, i) => expect(text).toMatch(new RegExp(`∥ coder\\[${i}\\]\\s+[1-9]\\d*→[1-9]\\d*\\s+\\d+\\.\\ds`)));
    await shot(page, "ui-lanes");
    await page.close();
  });

  it("approves a paused run from the page (the call runs, the page follows the run live to its end), forks it with an edited task, rejects the new ask with a reason", async () => {
    const place = tempWorkspace({ git: "init", files: { "notes.txt": "old\n" } });
    const script = scriptFile(place, "approve.script.yaml", [
      '{ node: coder, tool_calls: [ { name: write_file, args: { path: notes.txt, contents: "new\\n" } } ] }',
      '{ node: coder, content: "Wrote notes.txt." }',
    ]);
    const paused = await run(place, { graph: "coder", task: "update the notes", thread: "waits", script, approval: "ask" });
    expect(paused.code, paused.stderr).toBe(3);
    const { page } = await openThread(place.db, "waits");
    const approval = page.locator("[data-testid=approval]");
    await approval.waitFor();
    expect(await approval.innerText()).toContain("write_file");
    // Paused at an approval: Approve and Reject answer it; there is nothing else to resume.
    expect(await page.locator("[data-testid=resume]").count()).toBe(0);
    // The file diff of what it would change.
    expect(await page.locator("[data-testid=diff] .d2h-del .d2h-code-line-ctn").innerText()).toBe("old");
    expect(await page.locator("[data-testid=diff] .d2h-ins .d2h-code-line-ctn").innerText()).toBe("new");
    // The Coder's steps so far, though its node's step has not finished: the call it waits on.
    expect(await page.locator("[data-testid=timeline]").innerText()).toMatch(/steps of a node that has not finished:[\s\S]*→ write_file/);
    // The header sums the tokens the steps show, the Coder's steps before its approval among them.
    const cells = await page.locator("[data-testid=timeline] tbody tr td:nth-child(5)").allInnerTexts();
    const [tokensIn, tokensOut] = cells
      .filter((cell) => cell.includes("→"))
      .reduce(([sumIn, sumOut], cell) => [sumIn + Number(cell.split("→")[0]), sumOut + Number(cell.split("→")[1])], [0, 0]);
    expect(tokensIn).toBeGreaterThan(0);
    expect(await page.locator(".meta").innerText()).toContain(`${tokensIn} tokens in, ${tokensOut} out`);
    await shot(page, "ui-approval");
    await page.getByRole("button", { name: "Approve" }).click();
    // No reload: the server's events bring the run's end.
    await page.locator(".thread-title .status-finished").waitFor({ timeout: 30_000 });
    expect(await approval.count()).toBe(0);
    expect(readFileSync(join(place.dir, "notes.txt"), "utf8")).toBe("new\n");
    await shot(page, "ui-approved");

    // Fork from the start with an edited task (`replay --from --set`): a new branch, which asks again.
    await page.locator("[data-testid=timeline] tr.step", { hasText: "start" }).first().click();
    await page.getByPlaceholder(/state edits/).fill("task=update the notes again");
    await page.getByRole("button", { name: "Fork from here" }).click();
    await page.locator(".thread-title .status-paused").waitFor({ timeout: 30_000 });
    expect(await page.locator("[data-testid=timeline]").innerText()).toContain("fork 1");
    await page.locator("[data-testid=timeline] tr.step", { hasText: "fork 1" }).click();
    await expect
      .poll(() => page.locator("[data-testid=checkpoint] .changes").innerText(), LIVE)
      .toContain('task: "update the notes again"');
    await shot(page, "ui-forked");
    // Reject it with a reason (as `resume --reject "…"`): the model is told, the file stays as it is.
    await page.getByPlaceholder("reason for the agent (reject)").fill("the notes are fine as they are");
    await page.getByRole("button", { name: "Reject" }).click();
    await page.locator(".thread-title .status-finished").waitFor({ timeout: 30_000 });
    // The fork's Coder step opened: its own steps, the rejected call's result among them.
    await page.locator("[data-testid=timeline] tr.step", { hasText: "fork 1" }).filter({ hasText: "coder" }).click();
    await expect.poll(() => page.locator("[data-testid=timeline]").innerText(), LIVE).toContain("the notes are fine as they are");
    expect(readFileSync(join(place.dir, "notes.txt"), "utf8")).toBe("new\n");
    // Rewind the files to the start (as `loopgraph rewind`, once confirmed): the notes are as they were.
    page.once("dialog", (dialog) => void dialog.accept());
    await page.locator("[data-testid=timeline] tr.step", { hasText: "start" }).first().click();
    await page.getByRole("button", { name: "Rewind files" }).click();
    await expect
      .poll(() => page.locator("[data-testid=action-result]").innerText(), LIVE)
      .toMatch(/^loopgraph rewind --json -- waits \S+: exit 0/);
    expect(readFileSync(join(place.dir, "notes.txt"), "utf8")).toBe("old\n");
    await page.close();
  });
});
