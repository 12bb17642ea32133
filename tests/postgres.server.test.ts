/**
 * The throwaway PostgreSQL server the team-store tests run against (tests/helpers/postgres.ts):
 * it starts on 127.0.0.1 with a password of its own, refuses a wrong one, and is gone after stop.
 * Skipped, saying why, where PostgreSQL cannot start, except under LOOPGRAPH_REQUIRE_POSTGRES=1 (CI).
 */
import { existsSync } from "node:fs";
import { createConnection } from "node:net";
import { describe, expect, it } from "vitest";
import { startPostgres } from "./helpers/postgres.js";
import { lacks } from "./helpers/requirements.js";

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

describe.skipIf(lacks("postgres", "the PostgreSQL server tests"))("a throwaway PostgreSQL server", () => {
  it("serves its own user over TCP with its password, refuses another password, and is gone after stop", async () => {
    const server = await startPostgres();
    try {
      expect(server.url).toMatch(/^postgres:\/\/loopgraph:[0-9a-f]{24}@127\.0\.0\.1:\d+\/postgres$/);
      const ok = server.psql("SELECT current_user || ' ' || current_setting('server_version_num')::int / 10000");
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout.trim()).toMatch(/^loopgraph \d+$/);
      const wrong = server.psql("SELECT 1", { password: "not-the-password" });
      expect(wrong.code).not.toBe(0);
      expect(wrong.stderr).toMatch(/password authentication failed/);
    } finally {
      server.stop();
    }
    expect(existsSync(server.socketDir)).toBe(false);
    expect(await portOpen(server.port)).toBe(false);
  }, 120_000);
});
