import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { createInterface } from "node:readline/promises";
import pc from "picocolors";
import type { ApprovalAnswer, ApprovalRequest } from "../runtime/approval.js";
import { printable } from "./terminal-text.js";
import { instanceName } from "../state/map.js";

/** The call asked about, whole and printable: the shell command, a file tool's path, or the arguments. */
export function describeCall(request: ApprovalRequest): string {
  const args = request.args as Record<string, unknown> | undefined;
  if (request.tool === "shell" && typeof args?.command === "string") return printable(`shell: ${args.command}`);
  if (request.tool === "present_plan" && typeof args?.plan === "string")
    return printable(`present_plan (a plan of ${args.plan.split("\n").length} lines, shown below)`);
  if (typeof args?.path === "string") return printable(`${request.tool}: ${args.path}`);
  return printable(`${request.tool} ${JSON.stringify(request.args)}`);
}

/** A file edit's diff as the user reads it: each line printable, additions green, removals red. */
export function renderDiff(diff: string): string {
  return diff
    .split("\n")
    .map((line) => {
      const shown = `    ${printable(line)}`;
      if (line.startsWith("+++") || line.startsWith("---")) return pc.bold(shown);
      if (line.startsWith("+")) return pc.green(shown);
      if (line.startsWith("-")) return pc.red(shown);
      return line.startsWith("@@") ? pc.cyan(shown) : shown;
    })
    .join("\n");
}

/** What answering "always" would allow, printable (`always: …`); undefined when the request does not say. */
export function describeAlways(request: ApprovalRequest): string | undefined {
  return request.always === undefined ? undefined : printable(`always: ${request.always}`);
}

/** A pending approval in words, printable: who wants to run what, and why (`coder wants to run shell: rm -rf build (reason)`). */
export function approvalSummary(request: ApprovalRequest): string {
  return `${printable(instanceName(request.node, request.instance))} wants to run ${describeCall(request)} (${printable(request.reason)})`;
}

/**
 * Opens the user's editor ($VISUAL, $EDITOR, else vi) on a proposed call: on a `write_file`'s
 * contents as the file's text, on any other call's arguments as JSON. Returns the edited
 * arguments, or why they cannot be used (the editor failed, the JSON does not parse).
 */
export function editInEditor(request: ApprovalRequest, env: NodeJS.ProcessEnv = process.env): Record<string, unknown> | string {
  const args = { ...(request.args as Record<string, unknown>) };
  const contents = request.tool === "write_file" && typeof args.contents === "string";
  const dir = mkdtempSync(join(tmpdir(), "loopgraph-edit-"));
  // The file's own name (its extension) lets the editor colour it.
  const file = join(dir, contents ? basename(String(args.path ?? "contents.txt")) || "contents.txt" : "arguments.json");
  try {
    writeFileSync(file, contents ? (args.contents as string) : `${JSON.stringify(args, null, 2)}\n`, { mode: 0o600 });
    const editor = env.VISUAL || env.EDITOR || "vi";
    const ran = spawnSync("sh", ["-c", `${editor} "$1"`, "sh", file], { stdio: "inherit", env });
    if (ran.status !== 0)
      return `the editor (${editor}) ${ran.error ? `could not start: ${ran.error.message}` : `exited with ${ran.status ?? ran.signal}`}: nothing was changed`;
    const text = readFileSync(file, "utf8");
    if (contents) return { ...args, contents: text };
    let edited: unknown;
    try {
      edited = JSON.parse(text);
    } catch (error) {
      return `the edited arguments are not JSON (${(error as Error).message}): nothing was changed`;
    }
    return edited !== null && typeof edited === "object" && !Array.isArray(edited)
      ? (edited as Record<string, unknown>)
      : "the edited arguments must be one JSON object: nothing was changed";
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The chat's line for a pending approval: the call, why, and the answers (`/always` with what it would allow). */
export function chatApprovalLine(request: ApprovalRequest): string {
  const always = describeAlways(request);
  const answers = always ? `/approve, /always (${always}) or /reject [why]` : "/approve or /reject [why]";
  const details = request.details
    ? `\n${request.details
        .split("\n")
        .map((line) => `    ${printable(line)}`)
        .join("\n")}`
    : "";
  return `${approvalSummary(request)}: ${answers}${details}`;
}

/**
 * Asks at the terminal whether a tool call may run: approve, reject (with an optional reason), or
 * always. Ctrl-D, Ctrl-C or an abort of `signal` (SIGTERM) leaves it unanswered: the run pauses.
 */
export async function promptForApproval(request: ApprovalRequest, signal?: AbortSignal): Promise<ApprovalAnswer | undefined> {
  let rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const always = describeAlways(request);
    process.stderr.write(
      `\n${pc.yellow("?")} ${pc.bold(printable(request.node))} wants to run ${pc.cyan(describeCall(request))}\n  ${pc.dim(printable(request.reason))}\n` +
        (request.diff ? `${renderDiff(request.diff)}\n` : "") +
        (request.details
          ? `${request.details
              .split("\n")
              .map((line) => `    ${printable(line)}`)
              .join("\n")}\n`
          : "") +
        (always ? `  ${pc.dim(always)}\n` : ""),
    );
    for (;;) {
      const choice = (
        await rl.question(`  Allow? ${pc.bold("[y]")}es / ${pc.bold("[n]")}o / ${pc.bold("[a]")}lways / ${pc.bold("[e]")}dit: `, { signal })
      )
        .trim()
        .toLowerCase();
      if (choice === "y" || choice === "yes") return { decision: "approve" };
      if (choice === "e" || choice === "edit") {
        // The editor has the terminal to itself.
        rl.close();
        const edited = editInEditor(request);
        rl = createInterface({ input: process.stdin, output: process.stderr });
        if (typeof edited === "string") process.stderr.write(`  ${pc.red(printable(edited))}\n`);
        else return { decision: "approve", args: edited };
        continue;
      }
      if (choice === "a" || choice === "always") return { decision: "always" };
      if (choice === "n" || choice === "no") {
        const reason = (await rl.question("  Reason for the agent (optional): ", { signal })).trim();
        return reason ? { decision: "reject", reason } : { decision: "reject" };
      }
    }
  } catch {
    // Input closed (Ctrl-D), Ctrl-C, or the run stopped: leave the run paused at the approval; it can be resumed later.
    return undefined;
  } finally {
    rl.close();
  }
}
