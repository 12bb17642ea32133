#!/usr/bin/env node
// The `loopgraph` command (dist/cli/loopgraph.js, bundled with launcher.ts): loads the CLI bundle
// beside it and runs it on the process's arguments.
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { ExitCode } from "../errors.js";
import { cacheProfile, loadCli, type LoadedCli } from "./launcher.js";

let cli: LoadedCli | undefined;
try {
  cli = loadCli(dirname(fileURLToPath(import.meta.url)), cacheProfile(process.argv));
} catch (error) {
  // An incomplete install (the bundle missing or not built): one line, no stack trace.
  process.stderr.write(`loopgraph: cannot start: ${String((error as Error).message ?? error).split("\n")[0]}\n`);
  // This file is not minified, and has no source map: its stack is read as it is.
  if (process.env.LOOPGRAPH_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`);
}
const exitCode = cli ? await cli.main(process.argv) : ExitCode.Failed;
// Exit explicitly once output is flushed: idle HTTP keep-alive sockets must not hold the process open.
process.stdout.write("", () => process.exit(exitCode));
