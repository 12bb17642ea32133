import pc from "picocolors";
import type { EventSink, RerunNode, RunEvent } from "../runtime/events.js";
import { printable, printableJson } from "./terminal-text.js";

/** `--json`: one JSON object per line on stdout. */
export function jsonRenderer(out: NodeJS.WritableStream = process.stdout): EventSink {
  return (event) => out.write(`${printableJson(JSON.stringify(event))}\n`);
}

const describeRerun = ({ node, effects }: RerunNode): string => (effects.length > 0 ? `${node} (${effects.join(", ")})` : node);

/** `text` cut to `max` characters, made printable (see terminal-text.ts). */
const truncate = (text: string, max: number): string => printable(text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Live progress for a person: nodes as they start and finish, streamed text, tool calls. */
export function humanRenderer(out: NodeJS.WritableStream = process.stdout): EventSink {
  let streaming = false;
  let streamedThisNode = false;
  const endStream = (): void => {
    if (streaming) out.write("\n");
    streaming = false;
  };
  const line = (text: string): void => {
    endStream();
    out.write(`${text}\n`);
  };
  return (event: RunEvent) => {
    switch (event.type) {
      case "run_started":
        line(`${pc.bold(event.forkedFrom ? "⑂ forking" : event.resumed ? "↻ resuming" : "▶ running")} ${pc.cyan(event.graph)}  ${pc.dim(`thread ${event.threadId}`)}`);
        if (event.task && !event.resumed) line(pc.dim(`  task: ${truncate(event.task, 200)}`));
        line(
          event.sandbox === "none"
            ? pc.yellow("  ⚠ no OS sandbox can start here: shell commands would run with your rights, so they ask even in --approval auto (install bubblewrap, or pass --no-sandbox)")
            : event.sandbox === "off"
              ? pc.yellow("  ⚠ OS sandbox off (--no-sandbox): the agent's shell commands run with your rights")
              : pc.dim(`  sandbox: ${event.sandbox}`),
        );
        break;
      case "fork":
        line(`  new branch from checkpoint ${event.from} (starts at ${event.checkpointId})`);
        if (event.restored) {
          const files = event.restored.map((change) => `${change.action} ${change.path}`).join(", ");
          line(`  workspace restored to that checkpoint: ${event.restored.length === 0 ? "nothing to change" : truncate(files, 300)}`);
        }
        line(pc.yellow(`  will re-run: ${event.rerun.length > 0 ? event.rerun.map(describeRerun).join(", ") : "nothing (the run ended at that checkpoint)"}`));
        break;
      case "node_started":
        streamedThisNode = false;
        line(`${pc.blue("●")} ${pc.bold(event.node)}${event.visit > 1 ? pc.dim(` (visit ${event.visit})`) : ""}`);
        break;
      case "message":
        if (event.delta !== undefined) {
          if (!streaming) out.write("  ");
          out.write(pc.dim(printable(event.delta).replace(/\n/g, "\n  ")));
          streaming = true;
          streamedThisNode = true;
        } else if (event.content !== undefined && !streamedThisNode) {
          line(pc.dim(`  ${printable(event.content).replace(/\n/g, "\n  ")}`));
        }
        break;
      case "node_finished": {
        const tokens = event.usage ? `, ${event.usage.inputTokens}→${event.usage.outputTokens} tokens` : "";
        line(`${pc.green("✓")} ${event.node} ${pc.dim(`(${(event.durationMs / 1000).toFixed(1)}s${tokens})`)}`);
        break;
      }
      case "retry":
        line(pc.yellow(`  ↻ ${printable(event.message)}: retrying in ${(event.delayMs / 1000).toFixed(1)}s (attempt ${event.attempt + 1} of ${event.maxAttempts})`));
        break;
      case "tool_call":
        line(`  ${pc.yellow("⚙")} ${event.name} ${pc.dim(truncate(JSON.stringify(event.args), 160))}`);
        break;
      case "tool_result":
        line(`  ${event.ok ? pc.green("↳") : pc.red("↳")} ${pc.dim(truncate(event.result.replace(/\s+/g, " "), 160))}`);
        break;
      case "interrupt":
        line(
          event.reason === "breakpoint"
            ? `${pc.yellow("⏸")} paused at breakpoint ${event.when ?? ""} ${event.node ?? ""}`.trimEnd()
            : `${pc.yellow("⏸")} waiting for input${event.node ? ` in ${event.node}` : ""}: ${truncate(JSON.stringify(event.value), 300)}`,
        );
        break;
      case "error":
        // The run's error is its outcome's reason: the command prints it last (see run-commands.ts `report`).
        break;
      case "warning":
        line(`${pc.yellow("⚠")} ${printable(event.message)}`);
        break;
      case "run_finished":
        endStream();
        break;
    }
  };
}
