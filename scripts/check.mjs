// `npm test`'s first half: the build (tsc, then the bundles), the type checks of the tests and of
// the web inspector's pages, and the format check and linter, side by side (each tsc runs on one
// core), each one's output printed whole when it ends. Exits 1 if any of them failed.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const tsc = (project) => ({ label: `tsc -p ${project}`, args: [`${root}node_modules/typescript/bin/tsc`, "-p", project] });
const steps = [
  [tsc("tsconfig.json"), { label: "node scripts/bundle.mjs", args: [`${root}scripts/bundle.mjs`] }],
  [tsc("tsconfig.tests.json")],
  [tsc("ui/tsconfig.json")],
  // The format check and the linter (biome.json): about 2 s.
  [{ label: "biome check", args: [`${root}node_modules/@biomejs/biome/bin/biome`, "check", "--colors=off", "."] }],
];

function run({ args }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("error", (error) => resolve({ code: 1, output: `${output}${error.message}\n` }));
    child.on("close", (code) => resolve({ code: code ?? 1, output }));
  });
}

const results = await Promise.all(
  steps.map(async (commands) => {
    for (const command of commands) {
      const result = await run(command);
      if (result.output) process.stdout.write(result.output);
      if (result.code !== 0) return `${command.label} failed (exit ${result.code})`;
    }
    return undefined;
  }),
);
const failed = results.filter(Boolean);
for (const failure of failed) console.error(`check: ${failure}`);
process.exitCode = failed.length > 0 ? 1 : 0;
