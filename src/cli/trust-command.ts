import { statSync } from "node:fs";
import path from "node:path";
import { createTwoFilesPatch } from "diff";
import pc from "picocolors";
import { projectRoot } from "../project.js";
import { projectSurface } from "../trust/surface.js";
import { revokeTrust, sha256, trustedProjects, trustFile, trustFilePath, trustProject, type TrustedProject } from "../trust/trust.js";
import { printable } from "./terminal-text.js";

/**
 * `loopgraph trust [PATH]`: the user trusts the project PATH is in (default: here), as it is now.
 * It prints every file loopgraph will then use from it (and, when it was trusted before, what
 * changed since, as a diff), and records their digests in the user's config folder. `--list`
 * shows the trusted projects and whether each is still as trusted; `--revoke` takes trust back.
 */
export async function trustCommand(
  target: string | undefined,
  options: { list?: boolean; revoke?: boolean; env: NodeJS.ProcessEnv },
): Promise<number> {
  if (options.list) return listTrusted(options.env);
  const given = path.resolve(target ?? ".");
  if (!options.revoke && statSync(given, { throwIfNoEntry: false })?.isFile()) return trustOneFile(given, options.env);
  const root = projectRoot(given);
  if (options.revoke) {
    const revoked = revokeTrust(root, options.env);
    process.stdout.write(
      revoked ? `${root} is no longer trusted: its graphs, configuration, policy and modules are not used\n` : `${root} was not trusted\n`,
    );
    return 0;
  }
  const { record, previous } = trustProject(root, options.env);
  const files = Object.keys(record.files).sort();
  if (files.length === 0) {
    process.stdout.write(
      `${record.root} holds nothing loopgraph would run or that changes what it allows (no loopgraph.yaml, .loopgraph/policy.yaml or graphs/); trusted as it is\n`,
    );
  } else {
    process.stdout.write(`Trusted ${record.root} as it is now. loopgraph will use:\n`);
    for (const file of files) process.stdout.write(`  ${printable(file).padEnd(32)} ${pc.dim(roleOf(file))}\n`);
  }
  if (previous) process.stdout.write(changesSince(previous, record));
  process.stdout.write(
    pc.dim(
      `Recorded in ${trustFilePath(options.env)}; when any of these files changes, it is not used until you trust the project again.\n`,
    ),
  );
  return 0;
}

/** `loopgraph trust FILE`: a graph run by path, with what it brings along. */
function trustOneFile(file: string, env: NodeJS.ProcessEnv): number {
  const { record, previous, files } = trustFile(file, env);
  process.stdout.write(`Trusted in ${record.root}, as they are now:\n`);
  for (const name of files) process.stdout.write(`  ${printable(name)}\n`);
  if (previous)
    process.stdout.write(
      changesSince({ ...previous, files: pick(previous.files, files) }, { ...record, files: pick(record.files, files) }),
    );
  process.stdout.write(pc.dim(`Recorded in ${trustFilePath(env)}; the rest of the project is as trusted, or not, as it was.\n`));
  return 0;
}

function pick<T>(entries: Record<string, T>, names: readonly string[]): Record<string, T> {
  return Object.fromEntries(Object.entries(entries).filter(([name]) => names.includes(name)));
}

function roleOf(file: string): string {
  if (file === "loopgraph.yaml") return "settings, hooks, MCP servers, subagents";
  if (file === path.join(".loopgraph", "policy.yaml")) return "policy rules";
  if (/^graphs\/[^/]+\.ya?ml$/.test(file)) return "a graph, run by name";
  return "named by one of the above: code or a graph loopgraph runs";
}

/** What changed between the project's last trust and this one: each file's diff where its old text was kept. */
export function changesSince(previous: TrustedProject, now: TrustedProject): string {
  const names = [...new Set([...Object.keys(previous.files), ...Object.keys(now.files)])].sort();
  const changed = names.filter((name) => previous.files[name]?.sha256 !== now.files[name]?.sha256);
  if (changed.length === 0) return `Nothing changed since you trusted it on ${previous.trustedAt.slice(0, 10)}.\n`;
  const parts = [`Changed since you trusted it on ${previous.trustedAt.slice(0, 10)}:\n`];
  for (const name of changed) {
    const before = previous.files[name];
    const after = now.files[name];
    if (!before) parts.push(`  new: ${printable(name)}\n`);
    else if (!after) parts.push(`  gone: ${printable(name)}\n`);
    else if (before.text === undefined || after.text === undefined) parts.push(`  changed: ${printable(name)} (no text kept to compare)\n`);
    else {
      // The patch without its "=====" header line.
      const patch = createTwoFilesPatch(`a/${name}`, `b/${name}`, before.text, after.text, "", "", { context: 2 }).replace(/^=+\n/, "");
      parts.push(`${printable(patch).replace(/^/gm, "  ").trimEnd()}\n`);
    }
  }
  return parts.join("");
}

/** The trusted projects, each with whether its files are still as trusted. */
function listTrusted(env: NodeJS.ProcessEnv): number {
  const projects = trustedProjects(env);
  if (projects.length === 0) {
    process.stdout.write("no trusted projects\n");
    return 0;
  }
  for (const project of projects) {
    // Each recorded file against its digest on disk, and each surface file not recorded: hashed once.
    const surface = projectSurface(project.root).map((file) => path.relative(project.root, file));
    const changed = [...new Set([...Object.keys(project.files), ...surface])].filter(
      (name) => project.files[name]?.sha256 !== fileDigest(path.join(project.root, name)),
    );
    const state = changed.length === 0 ? pc.green("as trusted") : pc.yellow(`changed since: ${changed.map(printable).join(", ")}`);
    process.stdout.write(`${printable(project.root)}  ${pc.dim(project.trustedAt.slice(0, 10))}  ${state}\n`);
  }
  return 0;
}

function fileDigest(file: string): string | undefined {
  try {
    return sha256(file);
  } catch {
    return undefined;
  }
}
