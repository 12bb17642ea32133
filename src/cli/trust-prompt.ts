import { createInterface } from "node:readline/promises";
import pc from "picocolors";
import { projectRoot } from "../project.js";
import { pendingTrust, trustProject } from "../trust/trust.js";
import { printable } from "./terminal-text.js";
import { changesSince } from "./trust-command.js";

/**
 * At a terminal, before a run or chat: when the project holds files loopgraph would run, or that
 * change what it allows, that the user has not trusted as they are, shows them (what changed, as a
 * diff) and asks whether to trust the project now. Yes records the trust (as `loopgraph trust`);
 * anything else leaves them unused, and the run says what it did not use. Without a terminal,
 * nothing is asked: untrusted content is never used.
 */
export async function offerTrust(dirs: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return;
  for (const root of new Set(dirs.map((dir) => projectRoot(dir)))) {
    const { now, previous, untrusted } = pendingTrust(root, env);
    if (untrusted.length === 0) continue;
    process.stdout.write(
      `${pc.yellow("?")} ${printable(now.root)} holds files loopgraph would run, or that change what it allows, which you have not trusted as they are:\n`,
    );
    for (const name of untrusted) process.stdout.write(`  ${printable(name)}\n`);
    if (previous) process.stdout.write(changesSince(previous, now));
    const prompt = createInterface({ input: process.stdin, output: process.stdout });
    try {
      const answer = await prompt.question(`Trust ${printable(now.root)} as it is now? [y/N] `);
      if (/^\s*y(es)?\s*$/i.test(answer)) {
        trustProject(root, env);
        process.stdout.write(pc.dim("Trusted (loopgraph trust --revoke takes it back).\n"));
      }
    } finally {
      prompt.close();
    }
  }
}
