// npm's `prepare`: runs on `npm install` in this checkout, on `npm pack`, and on `npx loopgraph`
// in a checkout (npm installs the checkout into its npx cache as a link, which runs `prepare`).
// A full build takes a minute or more: it runs only when the build is missing or older than
// something it is built from. `npm run build` always builds.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
/** What the build makes last of each of its parts (scripts/bundle.mjs puts a folder in place only once whole). */
const OUTPUTS = [
  "dist/src/index.js",
  "dist/cli/loopgraph.cjs",
  "dist/cli/loopgraph.js",
  "dist/ui/index.html",
  "dist/examples/serve-chat/index.html",
];
const INPUTS = [
  "src",
  "ui",
  "examples/serve-chat",
  "scripts/bundle.mjs",
  "scripts/code-cache.mjs",
  "package.json",
  "package-lock.json",
  "tsconfig.json",
];

/** The latest modification time of `path` and, for a folder, of everything under it (node_modules aside). */
function newest(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat?.isDirectory()) return stat?.mtimeMs ?? 0;
  return readdirSync(path)
    .filter((name) => name !== "node_modules")
    .reduce((latest, name) => Math.max(latest, newest(join(path, name))), stat.mtimeMs);
}

const outputTimes = OUTPUTS.map((output) => statSync(join(root, output), { throwIfNoEntry: false })?.mtimeMs ?? 0);
const sourcesTime = Math.max(...INPUTS.map((input) => newest(join(root, input))));
if (outputTimes.every((time) => time > sourcesTime)) {
  console.log("loopgraph: the build is up to date (npm run build rebuilds it)");
} else {
  const build = spawnSync("npm", ["run", "build"], { cwd: root, stdio: "inherit" });
  process.exit(build.status ?? 1);
}
