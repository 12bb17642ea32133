import { createInterface } from "node:readline/promises";
import pc from "picocolors";
import type { ApprovalAnswer, ApprovalRequest } from "../runtime/approval.js";
import { printable } from "./terminal-text.js";

/** The call asked about, whole and printable: the shell command, a file tool's path, or the arguments. */
export function describeCall(request: ApprovalRequest): string {
  const args = request.args as Record<string, unknown> | undefined;
  if (request.tool === "shell" && typeof args?.command === "string") return printable(`shell: ${args.command}`);
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
  return `${printable(request.node)} wants to run ${describeCall(request)} (${printable(request.reason)})`;
}

/** The chat's line for a pending approval: the call, why, and the answers (`/always` with what it would allow). */
export function chatApprovalLine(request: ApprovalRequest): string {
  const always = describeAlways(request);
  const answers = always ? `/approve, /always (${always}) or /reject [why]` : "/approve or /reject [why]";
  return `${approvalSummary(request)}: ${answers}`;
}

/**
 * Asks at the terminal whether a tool call may run: approve, reject (with an optional reason), or
 * always. Ctrl-D, Ctrl-C or an abort of `signal` (SIGTERM) leaves it unanswered: the run pauses.
 */
export async function promptForApproval(request: ApprovalRequest, signal?: AbortSignal): Promise<ApprovalAnswer | undefined> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const always = describeAlways(request);
    process.stderr.write(
      `\n${pc.yellow("?")} ${pc.bold(printable(request.node))} wants to run ${pc.cyan(describeCall(request))}\n  ${pc.dim(printable(request.reason))}\n` +
        (request.diff ? `${renderDiff(request.diff)}\n` : "") +
        (always ? `  ${pc.dim(always)}\n` : ""),
    );
    for (;;) {
      const choice = (await rl.question(`  Allow? ${pc.bold("[y]")}es / ${pc.bold("[n]")}o / ${pc.bold("[a]")}lways: `, { signal })).trim().toLowerCase();
      if (choice === "y" || choice === "yes") return { decision: "approve" };
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
