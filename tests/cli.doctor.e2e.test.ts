/**
 * `loopgraph doctor`: one line per piece of the machine, the install command of a missing one, and
 * exit 1 only when the configuration here needs something that is missing.
 */
import { createServer } from "node:net";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { cleanEnv, ROOT, runCli, SANDBOX_AS_FOUND } from "./helpers/cli.js";
import { run } from "./helpers/e2e.js";
import { describeOnPostgres } from "./helpers/postgres.js";
import { lacks } from "./helpers/requirements.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

interface DoctorReport {
  ok: boolean;
  checks: { name: string; status: "ok" | "missing" | "off"; needed: boolean; detail: string; fix?: string }[];
}

const SCRIPT = join(ROOT, "examples/monitor.script.yaml");

/** `loopgraph doctor` in `ws` (its store `ws.db`), its own config folder, and `extra` on top of a clean environment. */
async function doctor(ws: Workspace, extra: NodeJS.ProcessEnv, ...args: string[]) {
  const env = cleanEnv({ XDG_CONFIG_HOME: join(ws.root, "config"), LOOPGRAPH_DB: ws.db, LOOPGRAPH_MODEL: `scripted:${SCRIPT}`, ...extra });
  const text = await runCli(["doctor", ...args], { cwd: ws.dir, env });
  const json = await runCli(["doctor", "--json", ...args], { cwd: ws.dir, env });
  return { text, code: text.code, report: JSON.parse(json.stdout) as DoctorReport, jsonCode: json.code };
}

const check = (report: DoctorReport, name: string) => report.checks.find((entry) => entry.name === name);

/** A port of 127.0.0.1 with nothing listening on it. */
function closedPort(): Promise<number> {
  return new Promise((resolvePort) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

describe("loopgraph doctor", () => {
  it("a machine where bubblewrap is missing: the sandbox line says what that costs and how to install it, exit 1", async () => {
    const ws = tempWorkspace({ git: true });
    const { text, code, report, jsonCode } = await doctor(ws, { ...SANDBOX_AS_FOUND, LOOPGRAPH_BWRAP: "/nonexistent/bwrap" });
    expect(code, text.stderr).toBe(1);
    expect(jsonCode).toBe(1);
    expect(text.stdout).toMatch(
      /^✗ sandbox +\/nonexistent\/bwrap is not installed: the agent's shell commands ask before they run, even in --approval auto → (sudo )?apt-get install bubblewrap$/m,
    );
    expect(text.stdout).toMatch(/^✓ git +git version \d/m);
    expect(text.stdout).toMatch(/^✓ store +.*store\.db: not created yet; the first run creates it/m);
    expect(text.stdout).toMatch(/^✓ model +scripted:.*: a scripted model, offline$/m);
    expect(text.stdout).toContain("Something this configuration needs is missing");
    expect(report.ok).toBe(false);
    expect(check(report, "sandbox")).toMatchObject({
      status: "missing",
      needed: true,
      fix: expect.stringMatching(/apt-get install bubblewrap$/),
    });
    expect(report.checks.map((entry) => entry.name)).toEqual(["node", "git", "sandbox", "ripgrep", "store", "model", "chromium"]);
    // ripgrep and Chromium are never needed: present or not, they do not decide the exit code.
    expect(check(report, "ripgrep")!.needed).toBe(false);
    expect(check(report, "chromium")!.needed).toBe(false);
  });

  it("the sandbox off by the user's choice is not needed: with a store and a model that work, exit 0", async () => {
    const ws = tempWorkspace({ git: true });
    const { text, code, report } = await doctor(ws, { LOOPGRAPH_SANDBOX: "off" });
    expect(code, text.stdout).toBe(0);
    expect(text.stdout).toMatch(/^- sandbox +off by your choice/m);
    expect(text.stdout).toContain("Everything this configuration needs is here.");
    expect(report.ok).toBe(true);
  });

  it.skipIf(lacks("sandbox", "the doctor's complete-machine test"))(
    "a complete machine: bubblewrap starts, a store written by a run, the model's key set: every needed line is ✓, exit 0",
    async () => {
      const ws = tempWorkspace({ git: true });
      const ran = await run(ws, {
        graph: "example-review",
        thread: "t",
        script: join(ROOT, "examples/example-review.script.yaml"),
        task: "explain",
      });
      expect(ran.code, ran.stderr).toBe(0);
      const { text, code, report } = await doctor(ws, {
        ...SANDBOX_AS_FOUND,
        LOOPGRAPH_MODEL: "openai:gpt-4o-mini",
        OPENAI_API_KEY: "sk-doctor-test",
      });
      expect(code, text.stdout).toBe(0);
      expect(text.stdout).toMatch(/^✓ sandbox +bubblewrap starts/m);
      expect(text.stdout).toMatch(/^✓ store +.*store\.db: SQLite, writable, schema version \d+$/m);
      expect(text.stdout).toMatch(/^✓ model +openai:gpt-4o-mini: OPENAI_API_KEY is set/m);
      expect(text.stdout).not.toContain("sk-doctor-test");
      expect(report.checks.filter((entry) => entry.needed).every((entry) => entry.status === "ok")).toBe(true);
    },
  );

  it("a model whose key is not set, and a store newer than this loopgraph: both ✗ with what to do, exit 1", async () => {
    const ws = tempWorkspace({ git: true });
    const db = new Database(ws.db);
    db.pragma("user_version = 999");
    db.close();
    const { text, code, report } = await doctor(ws, { LOOPGRAPH_SANDBOX: "off", LOOPGRAPH_MODEL: "anthropic:claude-sonnet-4-5" });
    expect(code).toBe(1);
    expect(text.stdout).toMatch(/^✗ model +ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=<your key>/m);
    expect(text.stdout).toMatch(
      /^✗ store +.*store\.db has schema version 999, newer than this loopgraph understands \(\d+\) → upgrade loopgraph$/m,
    );
    expect(check(report, "model")).toMatchObject({ status: "missing", needed: true });
  });

  it("a postgres:// store that cannot be reached: one line naming the server without its password, exit 1", async () => {
    const ws = tempWorkspace({ git: true });
    const url = `postgres://loopgraph:pw-never-shown@127.0.0.1:${await closedPort()}/loopgraph`;
    const { text, code } = await doctor(ws, { LOOPGRAPH_SANDBOX: "off", LOOPGRAPH_DB: url, LOOPGRAPH_PG_CONNECT_TIMEOUT_MS: "3000" });
    expect(code).toBe(1);
    expect(text.stdout).toMatch(
      /^✗ store +cannot reach the PostgreSQL server of postgres:\/\/loopgraph:\*\*\*@127\.0\.0\.1:\d+\/loopgraph .*check that it runs/m,
    );
    expect(text.stdout + text.stderr).not.toContain("pw-never-shown");
  });
});

describeOnPostgres("loopgraph doctor with a PostgreSQL store", "the doctor's PostgreSQL test", (server) => {
  it("reachable, and after a run its schema version: exit 0", async () => {
    const ws = tempWorkspace({ git: true });
    const url = server().createDatabase("doctor");
    const fresh = await doctor(ws, { LOOPGRAPH_SANDBOX: "off", LOOPGRAPH_DB: url });
    expect(fresh.code, fresh.text.stdout).toBe(0);
    expect(fresh.text.stdout).toMatch(
      /^✓ store +postgres:\/\/loopgraph:\*\*\*@127\.0\.0\.1:\d+\/doctor: PostgreSQL reachable; no loopgraph store yet/m,
    );
    const ran = await run(
      { dir: ws.dir, db: url },
      { graph: "example-review", thread: "t", script: join(ROOT, "examples/example-review.script.yaml"), task: "explain" },
    );
    expect(ran.code, ran.stderr).toBe(0);
    const after = await doctor(ws, { LOOPGRAPH_SANDBOX: "off", LOOPGRAPH_DB: url });
    expect(after.text.stdout).toMatch(
      /^✓ store +postgres:\/\/loopgraph:\*\*\*@127\.0\.0\.1:\d+\/doctor: PostgreSQL reachable, schema version \d+$/m,
    );
    expect(after.text.stdout).not.toContain(server().password);
  });
});
