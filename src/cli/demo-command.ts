import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "../errors.js";
import { git } from "../git/run.js";
import { packageRoot } from "../package.js";
import { availableSandbox } from "../tools/sandbox.js";

/**
 * `loopgraph demo`: the offline demo. The Mediator (graph `monitor`, shipped with loopgraph) hands
 * a task to the Looper, which drives two rounds of Coder → Review → Judge in a fresh git
 * repository under the temp directory, with the scripted model (no API key); the Mediator then
 * sums up. Then the loop's status and its checkpoint history. The threads go to the store that
 * applies here (`loopgraph config`).
 *
 * Its shell commands are the scripted model's, known in advance, so where no OS sandbox can start
 * the demo runs them without one (`--no-sandbox`) rather than stop at an approval, and says so.
 * That choice is the demo's alone: a user's own `run` without a sandbox still asks before commands.
 */
/** How the demo's commands run, in one line. */
const SANDBOX_LINES = {
  bubblewrap: "Commands: in the OS sandbox (bubblewrap).",
  none:
    "Commands: without an OS sandbox, which cannot start here (bubblewrap is missing or cannot start): " +
    "these are the demo's own scripted commands; your own runs ask before each command " +
    "(see `loopgraph doctor`).",
  off: "Commands: without the OS sandbox, as LOOPGRAPH_SANDBOX=off asks.",
} as const;

export async function demoCommand(options: { db?: string }): Promise<number> {
  const root = packageRoot();
  if (!root) throw new ConfigError("loopgraph's package files (graphs/, examples/) are not found beside its program: reinstall loopgraph");
  const thread = `demo-${new Date().toISOString().replace(/[-:T]/g, "").slice(0, 14)}`;
  const workspace = mkdtempSync(join(tmpdir(), "loopgraph-demo-"));
  await git(["init", "-q"], { cwd: workspace });
  writeFileSync(join(workspace, "package.json"), '{ "type": "module" }\n');
  const db = options.db === undefined ? [] : ["--db", options.db];

  const loopgraph = (...args: string[]): number => {
    process.stdout.write(`\n$ loopgraph ${args.map((arg) => (/\s/.test(arg) ? JSON.stringify(arg) : arg)).join(" ")}\n`);
    const { status } = spawnSync(process.execPath, [process.argv[1]!, ...db, ...args], { stdio: "inherit" });
    return status ?? 1;
  };

  const sandbox = availableSandbox(process.env);
  process.stdout.write(`Workspace: ${workspace}\n${SANDBOX_LINES[sandbox.name]}\n`);
  const status = loopgraph(
    "run",
    join(root, "graphs", "monitor.yaml"),
    "--task",
    "Add isPalindrome(text) in palindrome.js, with a test.",
    "--workspace",
    workspace,
    "--model",
    `scripted:${join(root, "examples", "monitor.script.yaml")}`,
    "--approval",
    "auto",
    "--thread",
    thread,
    ...(sandbox.name === "bubblewrap" ? [] : ["--no-sandbox"]),
  );
  if (status !== 0) return status;
  loopgraph("status", thread);
  return loopgraph("inspect", `${thread}.loop`);
}
