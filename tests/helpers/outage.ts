/**
 * For outages of a PostgreSQL store under real CLI processes (tests/workers.outage.e2e.test.ts,
 * the chaos suite's tests/chaos/postgres-outages.ts): a scripted Coder slow enough for an outage
 * to land in a step, workers as processes, and what output must never hold.
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { collect, eventually, spawnCli, type CliResult } from "./cli.js";
import { queryRows } from "./postgres.js";

/** The shell steps of `slowSteps`'s script. */
export const SLOW_STEPS = 2;

/** A scripted Coder whose shell steps each write `begin k`, take a second (an outage lands in one), then write `end k`. */
export function slowSteps(dir: string): string {
  const calls = Array.from({ length: SLOW_STEPS }, (_, i) => `      - name: shell\n        args: { command: "echo begin ${i + 1} >> log.txt; sleep 1; echo end ${i + 1} >> log.txt" }`).join("\n");
  const path = join(dir, "slow.script.yaml");
  writeFileSync(path, `responses:\n  - node: coder\n    tool_calls:\n${calls}\n  - node: coder\n    content: "done"\n`);
  return path;
}

/** The workspace's log.txt ("" before the first step). */
export function readLog(dir: string): string {
  try {
    return readFileSync(join(dir, "log.txt"), "utf8");
  } catch {
    return "";
  }
}

/** Whether the log shows every step of `slowSteps` done, the last one last. */
export const allStepsDone = (dir: string): boolean => readLog(dir).endsWith(`end ${SLOW_STEPS}\n`);

/** What must never reach a user's terminal: Node's crash output, a stack, an internal error. */
export function crashLines(output: string): string[] {
  return output.split("\n").filter((line) => /^\s+at |Unhandled 'error' event|internal error:|UnhandledPromiseRejection|node:internal/.test(line));
}

export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface WorkerProcess {
  child: ChildProcess;
  done: Promise<CliResult>;
  alive: () => boolean;
  /** SIGTERM, and its end. */
  stop: () => Promise<CliResult>;
}

/** `loopgraph worker --concurrency 2` as a process of the built CLI. */
export function startWorker(env: NodeJS.ProcessEnv): WorkerProcess {
  const child = spawnCli(["worker", "--concurrency", "2"], { env });
  const done = collect(child);
  return {
    child,
    done,
    alive: () => child.exitCode === null && child.signalCode === null,
    stop: () => {
      child.kill("SIGTERM");
      return done;
    },
  };
}

/** The status of every thread of the store (`thread:status`), once all have left `queued` and `running`, or the time is up. */
export function statusesWhenSettled(url: string, timeoutMs = 120_000): Promise<string[]> {
  return eventually(
    async () => {
      await delay(250);
      // While the server is away there is nothing to read yet.
      const rows = await queryRows<{ thread_id: string; status: string }>(url, "SELECT thread_id, status FROM loopgraph_threads ORDER BY thread_id").catch(() => []);
      return rows.map((row) => `${row.thread_id}:${row.status}`);
    },
    (now) => now.length > 0 && now.every((entry) => !/:(queued|running)$/.test(entry)),
    timeoutMs,
  );
}
