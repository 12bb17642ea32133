// The CLI as a few files instead of ~1,500 modules: a command starts in a fraction of the time
// (Node resolves and links each ES module file on every start). Built from tsc's output
// (dist/src) into dist/cli/; the library (`dist/src/index.js`) stays unbundled.
// better-sqlite3 is native and tsx loads user TypeScript modules: both stay outside the bundle.
import { copyFileSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
rmSync(`${root}dist/cli`, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { loopgraph: "dist/src/cli/main.js" },
  outdir: "dist/cli",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // pg loads the optional native binding (pg-native) only when asked to; loopgraph never asks.
  external: ["better-sqlite3", "tsx", "pg-native"],
  // Bundled CommonJS dependencies call require(): give the ES module one.
  banner: { js: "import { createRequire as __loopgraphRequire } from 'node:module'; const require = __loopgraphRequire(import.meta.url);" },
  sourcemap: "linked",
  logLevel: "warning",
});

// The web inspector (`loopgraph ui`): its pages, every script and style bundled here, so it works
// offline (nothing from a CDN). One file each, so every request can carry the server's token.
rmSync(`${root}dist/ui`, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { app: "ui/src/main.tsx" },
  outdir: "dist/ui/assets",
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
copyFileSync(`${root}ui/index.html`, `${root}dist/ui/index.html`);
