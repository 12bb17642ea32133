/**
 * For outages of a PostgreSQL store under real CLI processes (tests/workers.outage.e2e.test.ts,
 * the chaos suite's tests/chaos/postgres-outages.ts): a scripted Coder slow enough for an outage
 * to land in a step, workers as processes, and what output must never hold.
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { join } from "node:path";
import { collect, eventually, spawnCli, type CliResult } from "./cli.js";
import { queryRows } from "./postgres.js";

/** The shell steps of `slowSteps`'s script. */
export const SLOW_STEPS = 2;

/** A scripted Coder whose shell steps each write `begin k`, take a second (an outage lands in one), then write `end k`. */
export function slowSteps(dir: string): string {
  const calls = Array.from(
    { length: SLOW_STEPS },
    (_, i) => `      - name: shell\n        args: { command: "echo begin ${i + 1} >> log.txt; sleep 1; echo end ${i + 1} >> log.txt" }`,
  ).join("\n");
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
  return output
    .split("\n")
    .filter((line) => /^\s+at |Unhandled 'error' event|internal error:|UnhandledPromiseRejection|node:internal/.test(line));
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
      const rows = await queryRows<{ thread_id: string; status: string }>(
        url,
        "SELECT thread_id, status FROM loopgraph_threads ORDER BY thread_id",
      ).catch(() => []);
      return rows.map((row) => `${row.thread_id}:${row.status}`);
    },
    (now) => now.length > 0 && now.every((entry) => !/:(queued|running)$/.test(entry)),
    timeoutMs,
  );
}

/** A TCP proxy in front of a server: it cuts every connection at a chosen moment (see `cuttingProxy`). */
export interface CuttingProxy {
  port: number;
  /** How many chunks the clients sent through it so far. */
  chunks(): number;
  close(): Promise<void>;
}

/**
 * A proxy on 127.0.0.1 to the server at `port` that passes the first `budget` chunks its clients
 * send, then cuts every connection and stops listening (a new connect is refused): the server
 * gone at a moment chosen by count, which a sweep over `budget` moves through a whole command.
 */
export async function cuttingProxy(port: number, budget = Number.POSITIVE_INFINITY): Promise<CuttingProxy> {
  const sockets = new Set<Socket>();
  let sent = 0;
  const server = createServer((client) => {
    const upstream = connect(port, "127.0.0.1");
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => undefined);
      socket.on("close", () => sockets.delete(socket));
    }
    client.on("data", (chunk) => {
      if (++sent > budget) return cut();
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => client.write(chunk));
    client.on("end", () => upstream.end());
    upstream.on("end", () => client.end());
  });
  const cut = () => {
    if (server.listening) server.close();
    for (const socket of sockets) socket.destroy();
  };
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port: listening } = server.address() as AddressInfo;
  return {
    port: listening,
    chunks: () => sent,
    close: async () => cut(),
  };
}
