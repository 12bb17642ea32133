/**
 * The web inspector's eval API (src/ui/evals.ts through src/ui/server.ts), in-process on a real
 * SQLite store: an eval run in-process with the scripted model (tests/helpers/eval.ts), the list
 * of evals, one eval's report, an unknown eval, a trial's thread page naming its eval, and text
 * from the store (a check's output) sent back as data. The pages themselves are driven in Chromium
 * (tests/ui.browser.e2e.test.ts).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startEval } from "../src/eval/run.js";
import type { EvalRecord } from "../src/runs/evals.js";
import { startUiServer } from "../src/ui/server.js";
import { evalFixture, HOSTILE_OUTPUT, passingAndHostile, writeStoppedEval } from "./helpers/eval.js";
import { tempDir } from "./helpers/workspace.js";

describe("the web inspector's eval API", () => {
  it("lists the evals newest first, answers an eval's report (priced with the server's prices) and a trial's eval on its thread page; an unknown eval is one line", async () => {
    const { db, root, suite, variants, options } = evalFixture(passingAndHostile);
    const run = await startEval({ suite, variants, repeat: 1, concurrency: 2 }, options());
    const [passed, failed] = run.trials.map((trial) => trial.result!);
    expect([passed!.outcome, failed!.outcome]).toEqual(["passed", "check-failed"]);
    // A later eval of a priced model, stopped with its one trial pending.
    const store = { db, cwd: root, env: {} };
    const stopped = await writeStoppedEval(store, run.record, "openai:gpt-4o");

    const assets = tempDir("loopgraph-ui-assets-");
    writeFileSync(join(assets, "index.html"), "<!doctype html>");
    const server = await startUiServer({
      ...store,
      assetsDir: assets,
      cli: { node: process.execPath, script: "unused.js" },
      prices: { "openai:gpt-4o": { input: 2.5, output: 10 } },
    });
    try {
      const origin = new URL(server.url).origin;
      const ask = async <T>(path: string, status = 200): Promise<T> => {
        const answer = await fetch(`${origin}${path}`, { headers: { "x-loopgraph-token": server.token } });
        const body = (await answer.json()) as T;
        expect(answer.status, `${path}: ${JSON.stringify(body)}`).toBe(status);
        return body;
      };

      const { evals } = await ask<{ evals: unknown[] }>("/api/evals");
      expect(evals).toEqual([
        {
          id: "e-0000beef",
          suite: "answers",
          status: "stopped",
          createdAt: stopped.createdAt,
          updatedAt: stopped.updatedAt,
          variants: [{ label: "A", graph: "coder-review", model: "openai:gpt-4o", passed: 0 }],
          trials: { total: 1, finished: 0 },
        },
        {
          id: run.record.id,
          suite: "answers",
          status: "finished",
          createdAt: run.record.createdAt,
          updatedAt: expect.any(String),
          variants: [{ label: "A", graph: "coder-review", model: variants[0]!.model, passed: 1 }],
          trials: { total: 2, finished: 2 },
        },
      ]);

      type Report = import("../src/eval/report-schema.js").EvalReport;
      const { record, report } = await ask<{ record: EvalRecord; report: Report }>(`/api/evals/${run.record.id}`);
      expect(record.id).toBe(run.record.id);
      expect(report.variants[0]).toMatchObject({ run: 2, passed: 1, cost: { total: null, unknown: "a scripted model has no price" } });
      expect(report.tasks.map((task) => [task.id, task.variants[0]!.trials.map((cell) => [cell.outcome, cell.threadId])])).toEqual([
        ["writes-42", [["passed", passed!.threadId]]],
        ["wants-43", [["check-failed", failed!.threadId]]],
      ]);
      // The check's output comes back as the string it printed: data, for the page to show as text.
      const cell = report.tasks[1]!.variants[0]!.trials[0]!;
      expect("reason" in cell && cell.reason).toBe(`\`echo '${HOSTILE_OUTPUT}'; exit 1\` exited with 1: ${HOSTILE_OUTPUT}`);
      // The stopped eval: its trial pending, with its thread; its cost from the server's prices (no token spent yet: 0).
      const pending = await ask<{ report: Report }>("/api/evals/e-0000beef");
      expect(pending.report).toMatchObject({ pending: 1, eval: { status: "stopped" } });
      expect(pending.report.variants[0]!.cost).toEqual({ total: 0, mean: null });
      expect(pending.report.tasks[0]!.variants[0]!.trials).toEqual([
        { repetition: 1, outcome: "pending", threadId: "e-0000beef-A1-writes-42" },
      ]);

      // A trial's thread page names its eval.
      const page = await ask<{ eval?: unknown }>(`/api/threads/${encodeURIComponent(failed!.threadId)}`);
      expect(page.eval).toEqual({ id: run.record.id, task: "wants-43", variant: "A", repetition: 1 });

      expect(await ask("/api/evals/e-nope", 400)).toEqual({ error: `no eval "e-nope" in ${db}: see loopgraph eval --list` });
      for (const path of ["/api/evals", `/api/evals/${run.record.id}`]) expect((await fetch(`${origin}${path}`)).status, path).toBe(401);
    } finally {
      await server.close();
    }
  });
});
