import type { Settings } from "../config/environment-settings.js";
import type { GlobalOptions } from "./global-options.js";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import pc from "picocolors";
import { ConfigError } from "../errors.js";
import { parseModelSpec, resolveProviderEndpoint } from "../models/spec.js";
import { resolveStore } from "../store/tables.js";
import { findRipgrep } from "../tools/grep.js";
import { sandboxProblem, sandboxWaived } from "../tools/sandbox.js";
import { printable } from "./terminal-text.js";

/**
 * `loopgraph doctor`: what this machine offers loopgraph and what each missing piece costs, one
 * line each with the command that brings it (as `flutter doctor` and `brew doctor` do). The
 * configuration is the one that applies here (flags, environment, config files); the exit code is
 * 0 when everything it needs is there, 1 otherwise.
 */

/** `ok`: there; `missing`: not there or not working; `off`: not used, by the user's choice or because nothing asks for it. */
export type CheckStatus = "ok" | "missing" | "off";

export interface Check {
  name: string;
  status: CheckStatus;
  /** Whether the configuration that applies here needs it: a needed check that is missing makes the exit code 1. */
  needed: boolean;
  /** What was found, or what its absence costs. */
  detail: string;
  /** The command that brings it, for a missing one. */
  fix?: string;
}

export interface DoctorOptions extends GlobalOptions {
  json?: boolean;
  cwd?: string;
}

const APT = (packages: string) => `${process.getuid?.() === 0 ? "" : "sudo "}apt-get install ${packages}`;

export async function doctorCommand(options: DoctorOptions): Promise<number> {
  const cwd = options.cwd ?? process.cwd();
  const checks = [
    nodeCheck(),
    gitCheck(),
    sandboxCheck(options.settings.env),
    ripgrepCheck(options.settings.env),
    await storeCheck(options.db, options.settings.env, cwd),
    modelCheck(options.settings),
    chromiumCheck(),
  ];
  const healthy = checks.every((check) => !check.needed || check.status !== "missing");
  if (options.json) {
    process.stdout.write(`${JSON.stringify({ ok: healthy, checks }, null, 2)}\n`);
  } else {
    for (const check of checks) process.stdout.write(`${checkLine(check)}\n`);
    process.stdout.write(
      healthy
        ? `\n${pc.green("Everything this configuration needs is here.")}\n`
        : `\n${pc.red("Something this configuration needs is missing: see the ✗ lines.")}\n`,
    );
  }
  return healthy ? 0 : 1;
}

function checkLine(check: Check): string {
  const mark = check.status === "ok" ? pc.green("✓") : check.status === "off" ? pc.dim("-") : check.needed ? pc.red("✗") : pc.yellow("!");
  const fix = check.fix ? ` ${pc.dim("→")} ${check.fix}` : "";
  return `${mark} ${check.name.padEnd(11)} ${printable(check.detail)}${fix}`;
}

/** The first line `program args…` prints, or undefined when it cannot run. */
function firstLine(program: string, ...args: string[]): string | undefined {
  try {
    return execFileSync(program, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 10_000 })
      .split("\n")[0]!
      .trim();
  } catch {
    return undefined;
  }
}

function nodeCheck(): Check {
  const major = Number(process.versions.node.split(".")[0]);
  return major >= 20
    ? { name: "node", status: "ok", needed: true, detail: `Node ${process.versions.node}` }
    : {
        name: "node",
        status: "missing",
        needed: true,
        detail: `Node ${process.versions.node} is older than loopgraph needs (20 or newer)`,
        fix: "install Node 20 or newer",
      };
}

function gitCheck(): Check {
  const version = firstLine("git", "--version");
  return version
    ? { name: "git", status: "ok", needed: true, detail: version }
    : {
        name: "git",
        status: "missing",
        needed: true,
        detail: "git is not on the PATH: runs keep their workspace snapshots and repositories with it",
        fix: APT("git"),
      };
}

function sandboxCheck(env: NodeJS.ProcessEnv): Check {
  const name = "sandbox";
  if (sandboxWaived(env))
    return {
      name,
      status: "off",
      needed: false,
      detail: "off by your choice (LOOPGRAPH_SANDBOX=off or sandbox: { enabled: false }): the agent's shell commands run with your rights",
    };
  const problem = sandboxProblem(env);
  if (problem === undefined)
    return {
      name,
      status: "ok",
      needed: true,
      detail: "bubblewrap starts: the agent's shell commands run confined, and --approval auto runs them unasked",
    };
  const costs = "the agent's shell commands ask before they run, even in --approval auto";
  if (!problem.installed) return { name, status: "missing", needed: true, detail: `${problem.reason}: ${costs}`, fix: APT("bubblewrap") };
  return {
    name,
    status: "missing",
    needed: true,
    detail: `${problem.reason}: ${costs}`,
    fix: "allow unprivileged user namespaces (sudo sysctl -w kernel.unprivileged_userns_clone=1; on Ubuntu: kernel.apparmor_restrict_unprivileged_userns=0)",
  };
}

function ripgrepCheck(env: NodeJS.ProcessEnv): Check {
  const rg = findRipgrep(env);
  const version = rg ? firstLine(rg, "--version") : undefined;
  return version
    ? { name: "ripgrep", status: "ok", needed: false, detail: `${version}: the grep tool searches with it` }
    : {
        name: "ripgrep",
        status: "missing",
        needed: false,
        detail: "rg is not on the PATH: the grep tool uses its built-in search, slower on large trees",
        fix: APT("ripgrep"),
      };
}

function chromiumCheck(): Check {
  const found = ["chromium", "chromium-browser"].map((program) => firstLine(program, "--version")).find(Boolean);
  return found
    ? { name: "chromium", status: "ok", needed: false, detail: `${found}: for loopgraph's own browser tests only` }
    : {
        name: "chromium",
        status: "off",
        needed: false,
        detail: "not found: only loopgraph's own browser tests use it (npm test skips them)",
        fix: APT("chromium"),
      };
}

function modelCheck({ env, providers }: Settings): Check {
  const name = "model";
  const configured = env.LOOPGRAPH_MODEL?.trim();
  if (!configured)
    return {
      name,
      status: "off",
      needed: false,
      detail: "none configured: each run takes --model, or its graph's model: (e.g. openai:gpt-4o-mini, with OPENAI_API_KEY)",
    };
  try {
    const spec = parseModelSpec(configured, providers);
    if (spec.provider === "scripted") {
      return existsSync(spec.model)
        ? { name, status: "ok", needed: true, detail: `${configured}: a scripted model, offline` }
        : { name, status: "missing", needed: true, detail: `${configured}: the script file ${spec.model} is not found` };
    }
    const endpoint = resolveProviderEndpoint(spec, env, providers);
    const key = endpoint.apiKeyEnv ? `${endpoint.apiKeyEnv} is set` : "needs no key";
    return { name, status: "ok", needed: true, detail: `${configured}: ${key} (${endpoint.baseURL})` };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return { name, status: "missing", needed: true, detail: error.message };
  }
}

async function storeCheck(db: string | undefined, env: NodeJS.ProcessEnv, cwd: string): Promise<Check> {
  const name = "store";
  try {
    const { backend, location } = resolveStore(db, env, cwd);
    const { status, detail, fix } = await backend.check(location, env);
    // In the order of every check's fields (as --json shows them).
    return { name, status, needed: true, detail, ...(fix !== undefined && { fix }) };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return { name, status: "missing", needed: true, detail: error.message };
  }
}
