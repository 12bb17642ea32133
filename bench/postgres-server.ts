/**
 * A throwaway PostgreSQL server for tests and benchmarks: Debian's `postgresql` binaries, a cluster made with
 * `initdb` in a temporary folder, started with `pg_ctl` on a free port of 127.0.0.1 (and a socket
 * in that folder), a password of its own for connections over TCP. As root (CI), the cluster
 * belongs to the unprivileged `postgres` user, as PostgreSQL requires. `fsync` is off: the
 * cluster is thrown away with its test.
 *
 * Where the server cannot start (no binaries), `startPostgres` says why and the tests that need it
 * skip, unless LOOPGRAPH_REQUIRE_POSTGRES=1 (`.ci/run` sets it): then it throws, so CI never skips.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface PostgresServer {
  /** postgres://loopgraph:PASSWORD@127.0.0.1:PORT/postgres */
  readonly url: string;
  readonly port: number;
  readonly password: string;
  /** The folder of the socket (for `psql -h`). */
  readonly socketDir: string;
  /** Creates an empty database (a name of letters, digits and `_`) and returns its URL. */
  createDatabase(name: string): string;
  /** Runs `psql` against the server (over TCP, with the password; in the database `postgres` unless told) and returns its stdout. */
  psql(sql: string, options?: { password?: string; database?: string }): { code: number | null; stdout: string; stderr: string };
  /**
   * An outage, as an operator makes one: `stop` is `pg_ctl stop -m fast` (every session ends with
   * 57P01), `start` brings the server back on the same port (nothing when it runs), `restart` is
   * `pg_ctl restart -m fast`.
   */
  pgCtl(action: "stop" | "start" | "restart"): void;
  stop(): void;
}

/** The folder of Debian's PostgreSQL binaries (the newest version installed), if any. */
function binDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((name) => existsSync(join(root, name, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], "bin");
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolvePort(address.port) : reject(new Error("no port"))));
    });
  });
}

/** The uid and gid of the `postgres` user, to run the server as when this process is root. */
function postgresUser(): { uid: number; gid: number } | undefined {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("postgres:"));
  if (!line) return undefined;
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

/** Why PostgreSQL cannot be started here, or undefined when it can. */
export function postgresUnavailable(): string | undefined {
  if (!binDir()) return "PostgreSQL is not installed (apt-get install postgresql)";
  if (process.getuid?.() === 0 && !postgresUser()) return "running as root and there is no postgres user to run the server as";
  return undefined;
}

/** Whether the tests must not skip for want of PostgreSQL (CI). */
export const POSTGRES_REQUIRED = process.env.LOOPGRAPH_REQUIRE_POSTGRES === "1";

export async function startPostgres(): Promise<PostgresServer> {
  const unavailable = postgresUnavailable();
  if (unavailable) throw new Error(`cannot start PostgreSQL: ${unavailable}`);
  const bin = binDir()!;
  const root = mkdtempSync(join(tmpdir(), "loopgraph-pg-"));
  const data = join(root, "data");
  const password = randomBytes(12).toString("hex");
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? postgresUser() : undefined;
  if (owner) {
    chownSync(root, owner.uid, owner.gid);
    chmodSync(root, 0o700);
  }
  const run = (command: string, args: string[], env: NodeJS.ProcessEnv = {}) => {
    const argv = owner
      ? (["runuser", ["-u", "postgres", "--", join(bin, command), ...args]] as const)
      : ([join(bin, command), args] as const);
    const result = spawnSync(argv[0], [...argv[1]], { encoding: "utf8", env: { ...process.env, ...env }, timeout: 60_000 });
    if (result.status !== 0) throw new Error(`${command} failed (${result.status}): ${result.stderr || result.stdout}`);
    return result;
  };
  const pwfile = join(root, "pwfile");
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (owner) chownSync(pwfile, owner.uid, owner.gid);
  run(
    "initdb",
    ["-D", data, "-U", "loopgraph", "--auth-local=trust", "--auth-host=scram-sha-256", `--pwfile=${pwfile}`, "-E", "UTF8", "--no-sync"],
    { LC_ALL: "C" },
  );
  rmSync(pwfile);
  // A port free a moment ago may be taken before the server binds it (a client connection's own
  // port, from the same range): then another one is tried.
  const log = join(root, "server.log");
  let port = 0;
  const options = () => ["-o", `-c listen_addresses=127.0.0.1 -p ${port} -k ${root} -c fsync=off`];
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    const from = existsSync(log) ? statSync(log).size : 0;
    try {
      run("pg_ctl", ["-D", data, "-l", log, "-w", "-t", "60", ...options(), "start"]);
      break;
    } catch (error) {
      const said = existsSync(log) ? readFileSync(log).subarray(from).toString("utf8") : "";
      if (attempt < 5 && /Address already in use/.test(said)) continue;
      throw new Error(`${(error as Error).message.trim()}\n${said.trim().split("\n").slice(-5).join("\n")}`);
    }
  }
  let stopped = false;
  let down = false;
  const server: PostgresServer = {
    url: `postgres://loopgraph:${password}@127.0.0.1:${port}/postgres`,
    port,
    password,
    socketDir: root,
    createDatabase(name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
      const created = server.psql(`CREATE DATABASE ${name}`);
      if (created.code !== 0) throw new Error(`CREATE DATABASE ${name} failed: ${created.stderr}`);
      return server.url.replace(/\/postgres$/, `/${name}`);
    },
    psql(sql, options = {}) {
      const target = ["-h", "127.0.0.1", "-p", String(port), "-U", "loopgraph", "-d", options.database ?? "postgres"];
      const result = spawnSync(join(bin, "psql"), ["-X", "-A", "-t", ...target, "-v", "ON_ERROR_STOP=1", "-c", sql], {
        encoding: "utf8",
        env: { ...process.env, PGPASSWORD: options.password ?? password, PGCONNECT_TIMEOUT: "10" },
        timeout: 30_000,
      });
      return { code: result.status, stdout: result.stdout, stderr: result.stderr };
    },
    pgCtl(action) {
      if (action === "start" && !down) return;
      const mode = action === "start" ? [] : ["-m", "fast"];
      run("pg_ctl", ["-D", data, "-l", log, "-w", "-t", "60", ...mode, ...(action === "stop" ? [] : options()), action]);
      down = action === "stop";
    },
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        if (!down) run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
  return server;
}
