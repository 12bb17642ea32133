#!/usr/bin/env node
// The `loopgraph` command (dist/cli/loopgraph.js, bundled with launcher.ts): loads the CLI bundle
// beside it and runs it on the process's arguments.
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
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
// Tier up to V8's optimizing compiler later than its default (8× its interrupt budget, 67,584).
// Most commands live a fraction of a second: the compiler, on a thread of its own, compiled
// functions such a process stops calling soon after, so `inspect --all` of a 201-checkpoint thread
// spent 360 ms of CPU for 260 ms of wall time, and on a busy or one-core machine all of it in wall
// time (250 ms with this budget). Code that stays hot, a long run's or the inspector server's, is
// still optimized. Set after the bundle is compiled: V8 takes a code cache only under the flags it
// was made with.
setFlagsFromString("--interrupt-budget=540672");
const exitCode = cli ? await cli.main(process.argv) : ExitCode.Failed;
// Exit explicitly once output is flushed: idle HTTP keep-alive sockets must not hold the process open.
process.stdout.write("", () => process.exit(exitCode));
