// The offline demo: runs graphs/example-review.yaml with the scripted model (no API key),
// then shows the run's checkpoint history. `npm run demo`.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = fileURLToPath(new URL("../dist/src/cli/main.js", import.meta.url));
const thread = `demo-${new Date().toISOString().replace(/[-:T]/g, "").slice(0, 14)}`;

function loopgraph(...args) {
  console.log(`\n$ loopgraph ${args.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(" ")}`);
  const { status } = spawnSync(process.execPath, [cli, ...args], { cwd: root, stdio: "inherit" });
  return status ?? 1;
}

const status = loopgraph(
  "run", "example-review",
  "--model", "scripted:examples/example-review.script.yaml",
  "--task", "Explain in a few sentences what loopgraph does for a developer.",
  "--thread", thread,
);
if (status !== 0) process.exit(status);
process.exit(loopgraph("inspect", thread));
