/**
 * The OS sandbox for the commands the agent runs (the shell tool): bubblewrap, where it can start.
 * Inside it the workspace is writable except every `.git`, `.loopgraph/`, `loopgraph.yaml` and
 * bare repository in it, at any depth (read-only: protected-entries.ts); of the rest of the file
 * system, only the system's program and library folders (`/usr`, `/bin`, `/sbin`, `/lib*`, `/etc`
 * less its secrets, and Node's own install folder) are there, read-only: no other project, no `/srv`, `/opt`, `/mnt`, `/media`, `/var`, `/run`, so no
 * socket of the host either. `/tmp` and the home directories are empty and private, there is no
 * network (only a private loopback) unless the user's policy allows it, and the whole process
 * tree dies with the step (a PID namespace whose first process dies with bubblewrap).
 *
 * `--no-sandbox` (or `LOOPGRAPH_SANDBOX=off`) runs commands without it, by the user's choice.
 * `LOOPGRAPH_BWRAP` names the bubblewrap program (default `bwrap` on the PATH).
 */
import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
import { dirname } from "node:path";

export interface SandboxOptions {
  /** Let commands reach the network (the user's policy `sandbox: { network: allow }`). */
  network?: boolean;
  /** The workspace read-only too (what a project's own hooks and MCP servers run with). */
  readOnlyWorkspace?: boolean;
  /** Folders made readable besides the system's (the program files of a user's MCP server; the user policy's `sandbox.read`). */
  readable?: readonly string[];
  /** Folders made writable besides the workspace (the user policy's `sandbox.write`). */
  writable?: readonly string[];
}

/**
 * `bash -c COMMAND`, watched so that it dies with loopgraph, even by SIGKILL: descriptor 3 is a
 * pipe whose other end only loopgraph holds; a watcher reads it, and at end-of-file kills
 * everything in the sandbox's PID namespace (`kill -1` there), or, without a sandbox, the
 * command's process group (`kill 0`). The command itself gets neither descriptor.
 *
 * `--norc`: a bash whose standard input is a socket (Node's pipes are) and that is no one's
 * subshell takes itself for a shell started by sshd and runs the user's `~/.bashrc` (Debian's
 * build does), which is not the command's to run, and which can hang it (a `pyenv init` waiting
 * on a stale lock). A hook, given its event on standard input, would otherwise start so.
 */
export function watchedBash(command: string, scope: "namespace" | "group"): string[] {
  const watch = "exec 4<&3 3<&-; ( read -r _ <&4; kill -KILL " + (scope === "namespace" ? "-1" : "0") + " ) </dev/null >/dev/null 2>&1 &";
  // In a namespace the watcher dies with it when the command ends; in a group it is stopped by hand.
  const run =
    scope === "namespace"
      ? 'exec 4<&-; exec bash --norc -c "$1"'
      : 'w=$!; exec 4<&-; bash --norc -c "$1"; s=$?; kill $w 2>/dev/null; exit $s';
  return ["bash", "--norc", "-c", `${watch} ${run}`, "bash", command];
}

export interface Sandbox {
  /**
   * Shown in the run's header: `bubblewrap`; `none` where no sandbox can start; `off` where the
   * user chose to run commands without one.
   */
  readonly name: "bubblewrap" | "none" | "off";
  /** How a command is watched so that it dies with loopgraph (see `watchedBash`). */
  readonly scope: "namespace" | "group";
  /**
   * The program and arguments that run `argv` in the sandbox, in `workspace` (absolute, real
   * path), with the workspace's paths `readOnly` bound read-only (`protectedPaths` of
   * protected-entries.ts).
   */
  wrap(
    argv: readonly string[],
    workspace: string,
    env: NodeJS.ProcessEnv,
    readOnly: readonly string[],
  ): { file: string; args: string[]; env: NodeJS.ProcessEnv };
}

const unconfined = (name: "none" | "off"): Sandbox => ({
  name,
  scope: "group",
  wrap: ([file, ...args], _workspace, env) => ({ file: file!, args, env }),
});

/** No confinement, because none can start: the command runs as loopgraph's own child. */
export const NO_SANDBOX: Sandbox = unconfined("none");
/** No confinement, by the user's choice (`--no-sandbox`). */
export const SANDBOX_OFF: Sandbox = unconfined("off");

/** The system's folders a command may need (programs, libraries, their configuration): there read-only, as links where they are links (merged /usr). */
const SYSTEM_FOLDERS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];
/** What /etc holds that no command of the agent's needs: password hashes, the sudo rules, host and TLS private keys. */
const ETC_FILE_SECRETS = ["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/security/opasswd"];
const ETC_FOLDER_SECRETS = ["/etc/ssh", "/etc/ssl/private", "/etc/sudoers.d"];

/** The system folders as bubblewrap arguments: each folder bound read-only, each link made again as a link. */
function systemView(): string[] {
  const args: string[] = [];
  for (const dir of SYSTEM_FOLDERS) {
    const found = lstatSync(dir, { throwIfNoEntry: false });
    if (found?.isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
    else if (found?.isDirectory()) args.push("--ro-bind", dir, dir);
  }
  for (const file of ETC_FILE_SECRETS) if (existsSync(file)) args.push("--ro-bind", "/dev/null", file);
  for (const dir of ETC_FOLDER_SECRETS) if (existsSync(dir)) args.push("--tmpfs", dir);
  // Node itself (the agent runs `node`, `npm`, `npx`) where it is installed outside /usr, e.g. under ~/.nvm or /opt.
  const nodePrefix = dirname(dirname(realpathSync(process.execPath)));
  if (!SYSTEM_FOLDERS.some((dir) => nodePrefix === dir || nodePrefix.startsWith(`${dir}/`))) args.push("--ro-bind", nodePrefix, nodePrefix);
  return args;
}

/** Bubblewrap run as `program`. */
export function bubblewrap(program = "bwrap", options: SandboxOptions = {}): Sandbox {
  return {
    name: "bubblewrap",
    scope: "namespace",
    wrap(argv, workspace, env, readOnly) {
      // Every home directory, the user's own wherever it is: other users' files are not the agent's business either.
      const home = [...new Set([...(env.HOME && env.HOME !== "/" ? [env.HOME] : []), "/home", "/root"])];
      const args = [
        // A new, empty root: only what is bound below is there.
        ...systemView(),
        ...(options.network ? resolverView() : []),
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        // Private, empty /tmp and home, mounted before the workspace (which may be under either).
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/var/tmp",
        ...home.flatMap((dir) => (existsSync(dir) ? ["--tmpfs", dir] : [])),
        ...(options.readable ?? []).flatMap((dir) => (existsSync(dir) ? ["--ro-bind", dir, dir] : [])),
        ...(options.writable ?? []).flatMap((dir) => (existsSync(dir) ? ["--bind", dir, dir] : [])),
        options.readOnlyWorkspace ? "--ro-bind" : "--bind",
        workspace,
        workspace,
        // Every .git, .loopgraph and loopgraph.yaml, at any depth (protected-entries.ts).
        ...readOnly.flatMap((path) => ["--ro-bind", path, path]),
        "--unshare-all",
        ...(options.network ? ["--share-net"] : []),
        "--die-with-parent",
        "--new-session",
        "--chdir",
        workspace,
        "--",
        ...argv,
      ];
      return { file: program, args, env: { ...env, TMPDIR: "/tmp" } };
    },
  };
}

/** With the network allowed: the resolver's configuration, which /etc/resolv.conf often links to under /run. */
function resolverView(): string[] {
  try {
    const real = realpathSync("/etc/resolv.conf");
    return real.startsWith("/etc/") ? [] : ["--ro-bind", real, real];
  } catch {
    return [];
  }
}

export const BUBBLEWRAP: Sandbox = bubblewrap();

/** Whether the user chose to run commands without a sandbox (`--no-sandbox`, or `LOOPGRAPH_SANDBOX=off`). */
export function sandboxWaived(env: NodeJS.ProcessEnv, noSandbox = false): boolean {
  return noSandbox || env.LOOPGRAPH_SANDBOX === "off";
}

/** Why bubblewrap cannot start: `installed` false when the program is not there at all. */
export interface SandboxProblem {
  installed: boolean;
  reason: string;
}

const problems = new Map<string, SandboxProblem | undefined>();

/**
 * Why bubblewrap cannot start here (tried once per program and process; `LOOPGRAPH_BWRAP` names
 * the program), or undefined when it can: not installed, or not allowed to create namespaces (a
 * kernel or AppArmor setting can forbid unprivileged user namespaces).
 */
export function sandboxProblem(env: NodeJS.ProcessEnv): SandboxProblem | undefined {
  const program = env.LOOPGRAPH_BWRAP || "bwrap";
  if (!problems.has(program)) problems.set(program, bubblewrapProblem(program));
  return problems.get(program);
}

/**
 * The sandbox for this run: bubblewrap where it can start, `off` when the user waived it, else
 * `none`.
 */
export function availableSandbox(env: NodeJS.ProcessEnv, options: SandboxOptions & { noSandbox?: boolean } = {}): Sandbox {
  if (sandboxWaived(env, options.noSandbox)) return SANDBOX_OFF;
  if (sandboxProblem(env) !== undefined) return NO_SANDBOX;
  const program = env.LOOPGRAPH_BWRAP || "bwrap";
  return options.network || options.readOnlyWorkspace || options.readable?.length || options.writable?.length
    ? bubblewrap(program, options)
    : program === "bwrap"
      ? BUBBLEWRAP
      : bubblewrap(program);
}

/**
 * Where a command declared in a config file or a graph runs (an MCP server, a hook), in a run
 * whose sandbox is `run`: the user's own as the run's commands do, or in bubblewrap with `own`
 * options; anyone else's only in bubblewrap, with the workspace read-only (nobody approves its
 * start: it may read the project, not change it), else nowhere (undefined).
 */
export function sandboxForDeclared(run: Sandbox, trusted: boolean, env: NodeJS.ProcessEnv, own?: SandboxOptions): Sandbox | undefined {
  if (run.name === "bubblewrap" && !(trusted && own === undefined)) {
    const confined = availableSandbox(env, trusted ? own : { readOnlyWorkspace: true });
    if (confined.name === "bubblewrap") return confined;
  }
  return trusted ? run : undefined;
}

/** Why `program` cannot run a trial command in new namespaces, from what it said; undefined when it can. */
function bubblewrapProblem(program: string): SandboxProblem | undefined {
  const trial = spawnSync(
    program,
    ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "--", "true"],
    {
      stdio: ["ignore", "ignore", "pipe"],
      encoding: "utf8",
      timeout: 5_000,
    },
  );
  if (trial.status === 0) return undefined;
  if ((trial.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT")
    return { installed: false, reason: `${program} is not installed` };
  const said = trial.stderr?.trim().split("\n")[0];
  return {
    installed: true,
    reason: `${program} cannot start a sandbox here${said ? ` (${said})` : trial.error ? ` (${trial.error.message})` : ""}`,
  };
}
