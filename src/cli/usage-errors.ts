import type { Command } from "commander";

/** `loopgraph threads prune`: the command line that reaches `command`. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let current: Command | null = command; current; current = current.parent) names.unshift(current.name());
  return names.join(" ");
}

/**
 * Commander's error (`error: unknown option '--taks'\n(Did you mean --task?)`) as one line, the
 * suggestion folded in, then where to look: a mistake should not bury itself under the whole usage.
 */
export function usageErrorText(commanderMessage: string, path: string): string {
  const [first = "", ...rest] = commanderMessage.trim().split("\n");
  const suggestion = /\(Did you mean (.+)\?\)/.exec(rest.join(" "))?.[1];
  const line = `loopgraph: ${first.replace(/^error: /, "")}${suggestion ? ` (did you mean ${suggestion}?)` : ""}`;
  return `${line}\nsee ${path} --help\n`;
}

/** Makes `program` and every command under it print its usage errors as `usageErrorText` does. */
export function printUsageErrorsBriefly(program: Command): void {
  const path = commandPath(program);
  program.configureOutput({ outputError: (text, write) => write(usageErrorText(text, path)) });
  for (const command of program.commands) printUsageErrorsBriefly(command);
}
