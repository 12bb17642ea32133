import pc from "picocolors";
import type { EventSink, NotRun, RerunNode, RunEvent } from "../runtime/events.js";
import { isApprovalRequest } from "../runtime/approval.js";
import type { TokenUsage } from "../state/graph-state.js";
import { approvalSummary } from "./approval-prompt.js";
import { printable, printableJson } from "./terminal-text.js";
import { instanceName } from "../state/map.js";

/** The version of the `--json` event format (docs/events.md): raised when a field changes meaning or goes away. */
export const EVENTS_VERSION = 1;

/** One `--json` line of an event (without its newline): the format's version, when it happened, then the event. */
export function eventLine(event: { type: string } | RunEvent): string {
  return printableJson(JSON.stringify({ version: EVENTS_VERSION, ts: new Date().toISOString(), ...event }));
}

/** `--json`: one JSON object per line on stdout (see eventLine). */
export function jsonRenderer(out: NodeJS.WritableStream = process.stdout): EventSink {
  return (event) => out.write(`${eventLine(event)}\n`);
}

const describeRerun = ({ node, effects }: RerunNode): string => (effects.length > 0 ? `${node} (${effects.join(", ")})` : node);

/** `text` cut to `max` characters, made printable (see terminal-text.ts). */
const truncate = (text: string, max: number): string => printable(text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** A token count as a person reads it: `950`, `12.3k`, `1.2M`. */
export function formatTokens(count: number): string {
  if (count < 1000) return String(count);
  if (count < 1_000_000) return `${(count / 1000).toFixed(1)}k`;
  return `${(count / 1_000_000).toFixed(1)}M`;
}

/** The tokens one Looper round used (a `round_finished` event). */
export interface RoundTokens {
  round: number;
  usage: TokenUsage;
}

/** What a command's runs cost, for its end line: the tokens its nodes reported (all threads), each loop round's, and the wall time. */
export interface RunTotals {
  usage?: TokenUsage;
  rounds?: readonly RoundTokens[];
  elapsedMs: number;
}

/** The most rounds the end line lists one by one (the last ones). */
const ROUNDS_SHOWN = 10;

/**
 * The end line's totals: `12.3k tokens in, 1.2k out, 8.4 s` (without tokens when no node reported
 * usage), then each loop round's tokens: `; round 1: 10.0k in, 1.0k out · round 2: 2.3k in, 200 out`.
 */
export function describeTotals({ usage, rounds = [], elapsedMs }: RunTotals): string {
  const time = `${(elapsedMs / 1000).toFixed(1)} s`;
  const total = usage ? `${formatTokens(usage.inputTokens)} tokens in, ${formatTokens(usage.outputTokens)} out, ${time}` : time;
  if (rounds.length === 0) return total;
  const shown = rounds
    .slice(-ROUNDS_SHOWN)
    .map(({ round, usage: used }) => `round ${round}: ${formatTokens(used.inputTokens)} in, ${formatTokens(used.outputTokens)} out`);
  return `${total}; ${rounds.length > ROUNDS_SHOWN ? "… " : ""}${shown.join(" · ")}`;
}

/** Lines of a tool result shown: a shell command's last ones (its output ends with what matters), other tools' first ones. */
const RESULT_LINES = 5;
/** Lines of a running command's output shown live in a terminal. */
const LIVE_LINES = 5;

/** A tool result as indented lines: whole up to RESULT_LINES lines, each printable and cut to 160 characters. */
function resultLines(name: string, result: string): string[] {
  const lines = result
    .replace(/\s+$/, "")
    .split("\n")
    .map((text) => text.trimEnd());
  if (lines.length <= RESULT_LINES) return lines.map((text) => truncate(text, 160));
  const more = lines.length - RESULT_LINES;
  return name === "shell"
    ? [pc.dim(`… ${more} earlier line${more === 1 ? "" : "s"}`), ...lines.slice(-RESULT_LINES).map((text) => truncate(text, 160))]
    : [...lines.slice(0, RESULT_LINES).map((text) => truncate(text, 160)), pc.dim(`… ${more} more line${more === 1 ? "" : "s"}`)];
}

/** What the renderer knows of one thread: its label, the node running, whether its text is mid-line. */
interface ThreadView {
  label: string;
  node?: string;
  visit?: number;
  streamedThisNode: boolean;
}

export interface HumanRendererOptions {
  /** Draw a spinner with the elapsed time while a node works (default: `out` is a TTY). Never in piped output. */
  spinner?: boolean;
  /** The clock (tests). */
  now?: () => number;
  /** Spinner redraw period in milliseconds (default 1000). */
  tickMs?: number;
}

/** The human renderer: an event sink, with the tokens its runs reported and a way to quiet it. */
export interface HumanRenderer extends EventSink {
  /** Tokens of every node_finished seen (all threads), undefined when none reported usage. */
  usage(): TokenUsage | undefined;
  /** The Looper rounds that ended (all threads), in order, with their tokens. */
  rounds(): readonly RoundTokens[];
  /** Clears the spinner and keeps it off until `resumeSpinner` (a prompt is being shown). */
  pauseSpinner(): void;
  resumeSpinner(): void;
  /** Clears the spinner and stops its timer. */
  close(): void;
}

/** Why a call did not run, in words, where its kind is not plain enough. */
const NOT_RUN_WORDS: Partial<Record<NotRun, string>> = {
  invalid_arguments: "invalid arguments",
  tool_not_found: "unknown tool",
  not_allowed: "not allowed in this mode",
};

/**
 * Live progress for a person: nodes as they start and finish, streamed text, tool calls. The
 * run's own thread is the first to start; lines of any other (the loop thread `<thread>.loop` of
 * `run monitor`) carry its role (`[loop] `), and when output switches thread mid-node the node's
 * header is repeated, so two threads never share a header or a line.
 */
export function humanRenderer(out: NodeJS.WritableStream = process.stdout, options: HumanRendererOptions = {}): HumanRenderer {
  const now = options.now ?? Date.now;
  const spinnerOn = options.spinner ?? Boolean((out as NodeJS.WriteStream).isTTY);
  const threads = new Map<string, ThreadView>();
  let ownThread: string | undefined;
  /** The thread whose text ends the output so far, and whether its line is still open (streaming). */
  let lastThread: string | undefined;
  let streaming: string | undefined;
  let usage: TokenUsage | undefined;
  const rounds: RoundTokens[] = [];

  // The spinner: one line redrawn in place while some node works, cleared before any output.
  let spinnerShown = false;
  let spinnerPaused = false;
  let activity = "thinking";
  let since = now();
  let timer: NodeJS.Timeout | undefined;
  const running = (): boolean => [...threads.values()].some((view) => view.node !== undefined);
  /**
   * The live tail of a running command's output (a terminal only): its last LIVE_LINES lines,
   * redrawn in place above the spinner, erased before any other output (the result follows).
   */
  let live: { threadId: string; lines: string[]; partial: string } | undefined;
  let liveShown = 0;
  const clearLive = (): void => {
    if (liveShown > 0) out.write(`\x1b[${liveShown}A\r\x1b[J`);
    liveShown = 0;
  };
  const clearSpinner = (): void => {
    if (spinnerShown) out.write("\r\x1b[2K");
    spinnerShown = false;
    clearLive();
  };
  const drawLive = (): void => {
    if (!live) return;
    clearSpinner();
    const width = Math.max(20, ((out as NodeJS.WriteStream).columns ?? 100) - 8);
    const label = viewOf(live.threadId).label;
    const shown = [...live.lines, ...(live.partial ? [live.partial] : [])].slice(-LIVE_LINES);
    for (const text of shown) out.write(`${label}    ${pc.dim(`│ ${truncate(text.replace(/\r/g, ""), width)}`)}\n`);
    liveShown = shown.length;
    drawSpinner();
  };
  /** The thread of the latest event: the spinner names its node (and its role, for another thread). */
  let activeThread: string | undefined;
  const drawSpinner = (): void => {
    if (!spinnerOn || spinnerPaused || streaming !== undefined || !running()) return;
    const seconds = Math.floor((now() - since) / 1000);
    if (seconds < 1) return;
    const active = activeThread === undefined ? undefined : threads.get(activeThread);
    const view = active?.node !== undefined ? active : [...threads.values()].find((candidate) => candidate.node !== undefined)!;
    out.write(`\r\x1b[2K${view.label}${pc.dim(`  … ${printable(view.node!)}: ${activity} ${seconds}s`)}`);
    spinnerShown = true;
  };
  const syncTimer = (): void => {
    if (spinnerOn && running() && !timer) {
      timer = setInterval(drawSpinner, options.tickMs ?? 1000);
      timer.unref();
    } else if (timer && !running()) {
      clearInterval(timer);
      timer = undefined;
    }
  };

  const viewOf = (threadId: string): ThreadView => {
    let view = threads.get(threadId);
    if (!view) {
      ownThread ??= threadId;
      const role = threadId === ownThread ? "" : threadId.startsWith(`${ownThread}.`) ? threadId.slice(ownThread.length + 1) : threadId;
      view = { label: role ? `${pc.magenta(`[${printable(role)}]`)} ` : "", streamedThisNode: false };
      threads.set(threadId, view);
    }
    return view;
  };
  const endStream = (): void => {
    if (streaming !== undefined) out.write("\n");
    streaming = undefined;
  };
  /** Output of `threadId` is next: closes another thread's open line, and repeats this thread's node header after another thread's lines. */
  const switchTo = (threadId: string, header = true): ThreadView => {
    clearSpinner();
    const view = viewOf(threadId);
    if (streaming !== undefined && streaming !== threadId) endStream();
    if (header && lastThread !== undefined && lastThread !== threadId && view.node !== undefined) {
      out.write(`${view.label}${pc.blue("●")} ${pc.bold(view.node)}${pc.dim(" (continued)")}\n`);
    }
    lastThread = threadId;
    return view;
  };
  const line = (threadId: string, text: string, header = true): void => {
    const view = switchTo(threadId, header);
    endStream();
    out.write(`${view.label}${text}\n`);
  };

  // A call of a graph nested in the node's (a subagent's, node `<coder>-task`) is drawn inside the node's own.
  const nesting = (event: { threadId: string; node: string }): string => {
    const node = viewOf(event.threadId).node;
    return node !== undefined && event.node !== node ? pc.dim("│ ") : "";
  };
  const render = (event: RunEvent): void => {
    since = now();
    activity = "thinking";
    activeThread = event.threadId;
    switch (event.type) {
      case "run_started":
        line(
          event.threadId,
          `${pc.bold(event.forkedFrom ? "⑂ forking" : event.resumed ? "↻ resuming" : "▶ running")} ${pc.cyan(event.graph)}  ${pc.dim(`thread ${event.threadId}`)}`,
          false,
        );
        if (event.task && !event.resumed) line(event.threadId, pc.dim(`  task: ${truncate(event.task, 200)}`), false);
        line(
          event.threadId,
          event.sandbox === "none"
            ? pc.yellow(
                "  ⚠ no OS sandbox can start here: shell commands would run with your rights, so they ask even in --approval auto (install bubblewrap, or pass --no-sandbox)",
              )
            : event.sandbox === "off"
              ? pc.yellow("  ⚠ OS sandbox off (--no-sandbox): the agent's shell commands run with your rights")
              : pc.dim(`  sandbox: ${event.sandbox}`),
          false,
        );
        break;
      case "fork":
        line(event.threadId, `  new branch from checkpoint ${event.from} (starts at ${event.checkpointId})`);
        if (event.restored) {
          const files = event.restored.map((change) => `${change.action} ${change.path}`).join(", ");
          line(
            event.threadId,
            `  workspace restored to that checkpoint: ${event.restored.length === 0 ? "nothing to change" : truncate(files, 300)}`,
          );
        }
        line(
          event.threadId,
          pc.yellow(
            `  will re-run: ${event.rerun.length > 0 ? event.rerun.map(describeRerun).join(", ") : "nothing (the run ended at that checkpoint)"}`,
          ),
        );
        break;
      case "node_started": {
        const view = viewOf(event.threadId);
        view.node = event.node;
        view.visit = event.visit;
        view.streamedThisNode = false;
        // A map's instances run together: each by its index, not as a visit after the others.
        const shown = instanceName(event.node, event.instance);
        const visit = event.visit > 1 && event.instance === undefined ? pc.dim(` (visit ${event.visit})`) : "";
        line(event.threadId, `${pc.blue("●")} ${pc.bold(shown)}${visit}`, false);
        break;
      }
      case "message": {
        const view = viewOf(event.threadId);
        if (event.delta !== undefined) {
          switchTo(event.threadId);
          if (streaming === undefined) out.write(`${view.label}  `);
          out.write(pc.dim(printable(event.delta).replace(/\n/g, `\n${view.label}  `)));
          streaming = event.threadId;
          view.streamedThisNode = true;
        } else if (event.content !== undefined && !view.streamedThisNode) {
          line(event.threadId, pc.dim(`  ${printable(event.content).replace(/\n/g, `\n${view.label}  `)}`));
        }
        break;
      }
      case "node_finished": {
        const view = viewOf(event.threadId);
        if (event.usage) {
          usage = {
            inputTokens: (usage?.inputTokens ?? 0) + event.usage.inputTokens,
            outputTokens: (usage?.outputTokens ?? 0) + event.usage.outputTokens,
          };
        }
        const tokens = event.usage ? `, ${event.usage.inputTokens}→${event.usage.outputTokens} tokens` : "";
        const shown = instanceName(event.node, event.instance);
        line(event.threadId, `${pc.green("✓")} ${shown} ${pc.dim(`(${(event.durationMs / 1000).toFixed(1)}s${tokens})`)}`, false);
        view.node = undefined;
        break;
      }
      case "retry":
        line(
          event.threadId,
          pc.yellow(
            `  ↻ ${printable(event.message)}: retrying in ${(event.delayMs / 1000).toFixed(1)}s (attempt ${event.attempt + 1} of ${event.maxAttempts})`,
          ),
        );
        break;
      case "tool_call_started":
        activity = `writing a call of ${printable(event.name)}`;
        break;
      case "tool_output": {
        activity = `running ${printable(event.name)}`;
        if (!spinnerOn || spinnerPaused) break;
        if (live?.threadId !== event.threadId) live = { threadId: event.threadId, lines: [], partial: "" };
        const parts = (live.partial + event.text).split("\n");
        live.partial = parts.pop()!;
        live.lines = [...live.lines, ...parts].slice(-LIVE_LINES);
        drawLive();
        break;
      }
      case "tool_call": {
        activity = `running ${printable(event.name)}`;
        const nest = nesting(event);
        line(event.threadId, `  ${nest}${pc.yellow("⚙")} ${printable(event.name)} ${pc.dim(truncate(JSON.stringify(event.args), 160))}`);
        break;
      }
      case "tool_result": {
        live = undefined;
        const nest = nesting(event);
        const [first, ...rest] = resultLines(event.name, event.result);
        const arrow = event.ok
          ? pc.green("↳")
          : pc.red(`↳ ✗ ${printable(event.name)}${event.notRun ? ` not run (${NOT_RUN_WORDS[event.notRun] ?? event.notRun})` : ""}:`);
        line(event.threadId, `  ${nest}${arrow} ${pc.dim(first ?? "")}`);
        for (const more of rest) line(event.threadId, `    ${nest}${pc.dim(more)}`, false);
        break;
      }
      case "compression":
        line(
          event.threadId,
          pc.cyan(
            `  ⇣ history compressed: ${event.removedMessages} earlier message${event.removedMessages === 1 ? "" : "s"} ` +
              `replaced by a summary (${formatTokens(event.tokensBefore)} → ${formatTokens(event.tokensAfter)} tokens)`,
          ),
        );
        break;
      case "plan_check":
        line(
          event.threadId,
          pc.cyan(
            `  ↺ plan not done (${event.open.length} item${event.open.length === 1 ? "" : "s"} open): sent back to it, check ${event.check} of ${event.of}`,
          ),
        );
        break;
      case "complexity":
        line(
          event.threadId,
          pc.cyan(
            `  ◇ task looks ${event.level} (${Math.round(event.confidence * 100)}% sure)${event.indicators.length > 0 ? `: ${event.indicators.join(", ")}` : ""}`,
          ),
        );
        break;
      case "interrupt":
        if (event.pending) {
          line(event.threadId, `${pc.yellow("⏸")} ${event.pending.length} calls wait for approval, each answered on its own:`, false);
          for (const question of event.pending) line(event.threadId, `    ${pendingLine(question)}`, false);
          break;
        }
        line(
          event.threadId,
          event.reason === "breakpoint"
            ? `${pc.yellow("⏸")} paused at breakpoint ${event.when ?? ""} ${event.node ?? ""}`.trimEnd()
            : isApprovalRequest(event.value)
              ? `${pc.yellow("⏸")} waiting for approval: ${approvalSummary(event.value)}`
              : `${pc.yellow("⏸")} waiting for input${event.node ? ` in ${event.node}` : ""}: ${truncate(JSON.stringify(event.value), 300)}`,
          false,
        );
        // A plan waiting for approval is read whole before answering.
        if (isApprovalRequest(event.value) && event.value.details) {
          for (const text of event.value.details.split("\n")) line(event.threadId, `    ${printable(text)}`, false);
        }
        break;
      case "error":
        // The run's error is its outcome's reason: the command prints it last (see run-commands.ts `report`).
        break;
      case "warning":
        line(event.threadId, `${pc.yellow("⚠")} ${printable(event.message)}`, false);
        break;
      case "hook":
        // A hook that did its work quietly is not worth a line; one that blocked or failed is.
        if (event.blocked)
          line(event.threadId, `${pc.yellow("⛔")} ${printable(`the ${event.event} hook \`${event.command}\` blocked the call`)}`, false);
        else if (event.failure) line(event.threadId, `${pc.yellow("⚠")} ${printable(event.failure)}`, false);
        break;
      case "round_finished":
        rounds.push({ round: event.round, usage: event.usage });
        break;
      case "run_finished": {
        const view = viewOf(event.threadId);
        view.node = undefined;
        if (streaming === event.threadId) endStream();
        break;
      }
    }
    syncTimer();
  };
  return Object.assign(render, {
    usage: () => usage,
    rounds: () => rounds,
    pauseSpinner: () => {
      clearSpinner();
      spinnerPaused = true;
    },
    resumeSpinner: () => {
      spinnerPaused = false;
    },
    close: () => {
      clearSpinner();
      endStream();
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  });
}

/** One of several pending questions: the id to answer it by, and what it asks. */
function pendingLine(question: { id: string; node: string; value: unknown }): string {
  if (!isApprovalRequest(question.value))
    return `${question.id}  ${printable(question.node)}: ${truncate(JSON.stringify(question.value), 200)}`;
  return `${printable(question.value.callId ?? question.id)}  ${approvalSummary(question.value)}`;
}
