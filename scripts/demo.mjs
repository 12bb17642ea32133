// The offline demo (`npm run demo`): the Mediator hands a task to the Looper, which drives two
// rounds of Coder → Review → Judge in a fresh git repository with the scripted model (no API
// key); the Mediator then sums up. Then the loop's status and checkpoint history.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = fileURLToPath(new URL("../dist/cli/loopgraph.js", import.meta.url));
const thread = `demo-${new Date().toISOString().replace(/[-:T]/g, "").slice(0, 14)}`;

const workspace = mkdtempSync(join(tmpdir(), "loopgraph-demo-"));
execFileSync("git", ["init", "-q", workspace]);
writeFileSync(join(workspace, "package.json"), '{ "type": "module" }\n');

function loopgraph(...args) {
  console.log(`\n$ loopgraph ${args.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(" ")}`);
  const { status } = spawnSync(process.execPath, [cli, ...args], { cwd: root, stdio: "inherit" });
  return status ?? 1;
}

console.log(`Workspace: ${workspace}`);
const status = loopgraph(
  "run", "monitor",
  "--task", "Add isPalindrome(text) in palindrome.js, with a test.",
  "--workspace", workspace,
  "--model", "scripted:examples/monitor.script.yaml",
  "--approval", "auto",
  "--thread", thread,
);
if (status !== 0) process.exit(status);
loopgraph("status", thread);
process.exit(loopgraph("inspect", `${thread}.loop`));
