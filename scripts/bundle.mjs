// The CLI as two files instead of ~1,500 modules: a command starts in a fraction of the time
// (Node resolves, parses and links each module on every start). Built from tsc's output (dist/src)
// into dist/cli/: the CLI as one CommonJS bundle (loopgraph.cjs), so that it can be compiled with
// V8 code caches (loopgraph.cjs.<profile>.cache, made last by scripts/code-cache.mjs), and the command
// itself (loopgraph.js), src/cli/bin.ts with the launcher that loads the two (src/cli/launcher.ts).
// The library (`dist/src/index.js`) stays unbundled. better-sqlite3 is native and tsx loads user
// TypeScript modules: both stay outside the bundle.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { BUNDLE_FILE, bundleHeader } from "../dist/src/cli/launcher.js";

const root = fileURLToPath(new URL("..", import.meta.url));
// Each output folder is made beside the one it replaces, and put in its place only once whole: a
// build interrupted (Ctrl-C, or `npx loopgraph` stopped while npm runs `prepare`) leaves the
// previous build working, never a CLI without its bundle. What an interrupted build left is removed here.
const BUILDING = ".building-";
for (const name of readdirSync(`${root}dist`))
  if (name.startsWith(BUILDING)) rmSync(`${root}dist/${name}`, { recursive: true, force: true });
const building = (folder) => `dist/${BUILDING}${folder}-${process.pid}`;

/** Puts the folder built at `from` in the place of `to` (both under the root). */
function replaceFolder(from, to) {
  const old = `${root}${building("old")}`;
  if (existsSync(`${root}${to}`)) renameSync(`${root}${to}`, old);
  renameSync(`${root}${from}`, `${root}${to}`);
  rmSync(old, { recursive: true, force: true });
}

/**
 * pg picks its socket functions when loaded: it asks whether it runs in Cloudflare Workers by
 * `typeof Response`, which makes Node 20 load its whole fetch implementation (undici, ~20 ms of a
 * PostgreSQL command's start). The bundle runs on Node only: it takes Node's functions directly.
 */
const pgOnNode = {
  name: "pg-on-node",
  setup(plugin) {
    plugin.onLoad({ filter: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]stream\.js$/ }, ({ path }) => {
      const source = readFileSync(path, "utf8");
      const pick = "= getStreamFuncs()";
      if (!source.includes(pick)) throw new Error(`${path} no longer picks its socket functions with \`${pick}\`: update bundle.mjs`);
      return { contents: source.replace(pick, "= getNodejsStreamFuncs()"), loader: "js" };
    });
  },
};

const cliDir = building("cli");
const buildId = randomBytes(16).toString("hex");
/** What the CLI's two files share: built from dist/src into dist/cli (by way of cliDir), for Node 20. */
const forNode = { absWorkingDir: root, outdir: cliDir, bundle: true, platform: "node", target: "node20", logLevel: "warning" };
await build({
  ...forNode,
  entryPoints: { loopgraph: "dist/src/cli/main.js" },
  outExtension: { ".js": ".cjs" },
  format: "cjs",
  // pg loads the optional native binding (pg-native) only when asked to; loopgraph never asks.
  external: ["better-sqlite3", "tsx", "pg-native"],
  plugins: [pgOnNode],
  // The first line names the build (the launcher checks the code cache against it); `import.meta.url`
  // of the bundled modules is the bundle's own URL, as it was each module's.
  banner: { js: `${bundleHeader(buildId, true)}\nconst __loopgraphImportMetaUrl = require("node:url").pathToFileURL(__filename).href;` },
  define: { "import.meta.url": "__loopgraphImportMetaUrl" },
  // Node 20 loses the `import()` of a script compiled from a code cache: the dependencies' `import()`
  // of Node's own modules become `require`, and loopgraph imports a module named at run time through
  // the launcher's (package.ts, importAtRunTime).
  supported: { "dynamic-import": false },
  // Less text to read and hash on every start; names are kept (stack traces, LangChain class names).
  minify: true,
  keepNames: true,
  charset: "ascii",
  legalComments: "linked",
  sourcemap: "linked",
});
// The launcher reads an ASCII bundle as latin1 (no UTF-8 decoding); a character esbuild left as it
// is (in a regular expression, say) makes it read the bundle as UTF-8: the header says which.
const bundle = `${root}${cliDir}/${BUNDLE_FILE}`;
if (readFileSync(bundle).some((byte) => byte > 0x7f)) {
  const fd = openSync(bundle, "r+");
  writeSync(fd, bundleHeader(buildId, false), 0, "latin1");
  closeSync(fd);
  console.warn(`bundle: ${BUNDLE_FILE} holds non-ASCII text: it is read as UTF-8, which is slower`);
}
await build({ ...forNode, entryPoints: { loopgraph: "dist/src/cli/bin.js" }, format: "esm" });
// The code caches: `run` first (it makes the thread the others read), then the other two side by side.
const work = mkdtempSync(join(tmpdir(), "loopgraph-code-cache-"));
const codeCache = (profile) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [`${root}scripts/code-cache.mjs`, profile, work, `${root}${cliDir}`], {
      cwd: work,
      env: { ...process.env, NODE_OPTIONS: "" },
      stdio: ["ignore", "ignore", "inherit"],
    });
    child.on("error", () => resolve(`could not start (${profile})`));
    child.on("close", (code, signal) => resolve(code === 0 ? undefined : `${profile}: exit ${code ?? signal}`));
  });
try {
  const failed = [await codeCache("run"), ...(await Promise.all([codeCache("inspect"), codeCache("base")]))].filter(Boolean);
  if (failed.length > 0) console.warn(`bundle: code caches not made (${failed.join(", ")}): those commands start slower`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
replaceFolder(cliDir, "dist/cli");

// The web inspector (`loopgraph ui`): its pages, every script and style bundled here, so it works
// offline (nothing from a CDN). One file each, so every request can carry the server's token:
// the page itself (app.js), and Mermaid (mermaid.js, most of the bytes), which the page imports by
// URL when it first draws a graph, so the steps show without waiting for it; boot.js, before them,
// asks for a thread's first page of steps while they load.
const uiDir = building("ui");
await build({
  absWorkingDir: root,
  entryPoints: { boot: "ui/src/boot.ts", app: "ui/src/main.tsx", mermaid: "ui/src/mermaid.ts" },
  outdir: `${uiDir}/assets`,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  minify: true,
  legalComments: "linked",
  logLevel: "warning",
});
copyFileSync(`${root}ui/index.html`, `${root}${uiDir}/index.html`);
replaceFolder(uiDir, "dist/ui");

/**
 * @langchain/core and langsmith say nothing of side effects (no `sideEffects` in their
 * package.json), so esbuild keeps every module they import: the SDK's use of a few message classes
 * would bring in all of @langchain/core/messages' index (runnables, callbacks, tracers) and langsmith's
 * client, 510 KB instead of 220. Their modules are declared free of side effects: what the page
 * uses stays, the rest goes (the browser test, tests/serve.example.browser.e2e.test.ts, runs it).
 */
const withoutUnusedLangChain = {
  name: "without-unused-langchain",
  setup(plugin) {
    const inPackages = /[\\/]node_modules[\\/](@langchain[\\/]core|langsmith)[\\/]/;
    // Their modules are reached by name from the SDK, or by relative path from one another.
    const mayReach = (path, importer) =>
      /^(@langchain\/core|langsmith)(\/|$)/.test(path) || (path.startsWith(".") && inPackages.test(importer));
    plugin.onResolve({ filter: /.*/ }, async ({ path, importer, kind, resolveDir, pluginData }) => {
      if (pluginData === "resolving" || !mayReach(path, importer)) return undefined;
      const found = await plugin.resolve(path, { importer, kind, resolveDir, pluginData: "resolving" });
      if (found.errors.length > 0) return { errors: found.errors };
      return inPackages.test(found.path) ? { ...found, sideEffects: false } : found;
    });
  },
};

// The example web chat of `loopgraph serve` (examples/serve-chat/, see its README): LangGraph's
// React hook `useStream` on Preact (its `react` imports are given `preact/compat`), bundled into
// dist/examples/serve-chat/ (index.html, app.js, app.css) for `loopgraph serve --static`.
const chatDir = building("serve-chat");
await build({
  absWorkingDir: root,
  entryPoints: { app: "examples/serve-chat/app.tsx" },
  outdir: chatDir,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  alias: { react: "preact/compat", "react-dom": "preact/compat" },
  plugins: [withoutUnusedLangChain],
  minify: true,
  legalComments: "linked",
  logLevel: "warning",
});
copyFileSync(`${root}examples/serve-chat/index.html`, `${root}${chatDir}/index.html`);
mkdirSync(`${root}dist/examples`, { recursive: true });
replaceFolder(chatDir, "dist/examples/serve-chat");
