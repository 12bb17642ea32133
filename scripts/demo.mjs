// The offline demo (`npm run demo`): `loopgraph demo` of this checkout (see src/cli/demo-command.ts).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = fileURLToPath(new URL("../dist/cli/loopgraph.js", import.meta.url));
const { status } = spawnSync(process.execPath, [cli, "demo"], { cwd: root, stdio: "inherit" });
process.exit(status ?? 1);
