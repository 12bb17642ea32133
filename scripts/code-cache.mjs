// `node scripts/code-cache.mjs <profile> <dir> [<cli dir>]`: one V8 code cache of the CLI bundle
// (<cli dir>/loopgraph.cjs.<profile>.cache, by default dist/cli; see src/cli/launcher.ts), the last step of the build.
// Run by scripts/bundle.mjs in a process of its own with no Node options, as the `loopgraph`
// command runs (V8 refuses a cache made under other flags). The bundle is loaded, then runs that
// profile's commands in this process, so the cache holds the bytecode of the functions they run,
// not only of the bundle's top level: `run`, the offline demo's run (the shipped `monitor` graph,
// the scripted model, without the OS sandbox so that every machine makes the same cache: its
// commands are known) in a new git repository under <dir>, whose store the other profiles then
// read; `inspect`, that thread's history; `base`, its status and the thread list. Their output
// goes to stdout, which bundle.mjs discards. A command that fails leaves a smaller cache, never a
// failed build: the warning says which.
import { execFileSync } from "node:child_process";
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cacheFile, cacheFileBytes, loadCli } from "../dist/src/cli/launcher.js";

const [profile, work, cliDir] = process.argv.slice(2);
const root = fileURLToPath(new URL("..", import.meta.url));
const dir = cliDir ?? join(root, "dist/cli");
const workspace = join(work, "workspace");
const db = ["--db", join(work, "store.db")];
const thread = "code-cache";
const commands = {
  run: [
    [
      "run",
      join(root, "graphs/monitor.yaml"),
      "--task",
      "Add isPalindrome(text) in palindrome.js, with a test.",
      "--workspace",
      workspace,
      "--model",
      `scripted:${join(root, "examples/monitor.script.yaml")}`,
      "--approval",
      "auto",
      "--no-sandbox",
      "--thread",
      thread,
      ...db,
    ],
  ],
  inspect: [
    ["inspect", `${thread}.loop`, ...db],
    ["inspect", `${thread}.loop`, "--diff", ...db],
    ["inspect", thread, ...db],
  ],
  base: [["status", `${thread}.loop`, ...db], ["inspect", ...db], ["--help"]],
}[profile];
if (!commands || !work) throw new Error("usage: node scripts/code-cache.mjs run|inspect|base <dir>");

const { main, script, buildId } = loadCli(dir, false);
try {
  if (profile === "run") {
    execFileSync("git", ["init", "-q", workspace]);
    writeFileSync(join(workspace, "package.json"), '{ "type": "module" }\n');
  }
  for (const args of commands) {
    const code = await main([process.execPath, join(dir, "loopgraph.js"), ...args]).catch((error) => `${error}`);
    if (code !== 0) console.error(`code-cache: warning: \`loopgraph ${args[0]}\` ended with ${code}: the ${profile} cache holds less`);
  }
} catch (error) {
  console.error(`code-cache: warning: ${error instanceof Error ? error.message : error}: the ${profile} cache holds less`);
}
const file = join(dir, cacheFile(profile));
writeFileSync(`${file}.tmp`, cacheFileBytes(buildId, script.createCachedData()));
renameSync(`${file}.tmp`, file);
process.exit(0);
