import { storeOf, type GlobalOptions } from "./global-options.js";
import type { BaseMessage } from "@langchain/core/messages";
import pc from "picocolors";
import { CancelledError, ConfigError, ExitCode } from "../errors.js";
import { isMediatorThread } from "../engine/commands.js";
import { listThreads } from "../engine/thread-list.js";
import { interruptActiveRuns } from "../engine/active-runs.js";
import { openChat, type ChatSession, type TurnOptions } from "../engine/chat.js";
import type { RunEvent } from "../runtime/events.js";
import { dispatchLooperCommand, parseLooperCommand } from "../nodes/looper/index.js";
import { AUTO_PREFIX } from "../nodes/looper/node.js";
import { messageText } from "../runtime/model-session.js";
import { chatApprovalLine, renderDiff } from "./approval-prompt.js";
import { eventLine } from "./render.js";
import { printable } from "./terminal-text.js";
import { ChatScreen } from "./chat-screen.js";
import { withGraphSuggestion } from "./graph-suggestion.js";
import { inspectCommand } from "./inspect-command.js";
import { commonRunOptionsOf, dbFlag, type SandboxFlag } from "./run-commands.js";
import type { ApprovalMode, CoderMode } from "../state/thread.js";
import { isApprovalRequest } from "../runtime/approval.js";
import type { RunOutcome } from "../engine/run-types.js";

export interface ChatCommandOptions extends GlobalOptions, SandboxFlag {
  graph?: string;
  thread?: string;
  /** `--continue`: the chat the store holds that was used last. */
  continue?: boolean;
  workspace?: string;
  model?: string;
  approval?: ApprovalMode;
  mode?: CoderMode;
  maxRounds?: number;
  /** `--model-timeout` (milliseconds, parsed by main.ts). */
  modelTimeout?: number;
  /** Newline-delimited JSON events on stdout (docs/events.md), lines read from stdin as typed lines. */
  json?: boolean;
}

const HELP = [
  "Talk in plain words: the Mediator answers, and hands real work to the Looper, which runs in the background.",
  "  /status            the loop's status (no model call)",
  "  /stop              stop the loop after the step in progress",
  "  add: <task>        add a task to the running loop (start: <task> starts one)",
  "  /inspect           the loop's checkpoint history",
  "  /resume            continue an interrupted loop",
  "  /approve, /always, /reject [why]   answer the loop's pending approval",
  "  /help, /quit       this help; leave (also Ctrl-D, or Ctrl-C twice)",
].join("\n");

const HISTORY_SHOWN = 20;

/** How often an open chat looks for what other processes sent it (`loopgraph send <thread> …`). */
const INBOX_POLL_MS = 300;

/** What `chat --json` prints: the run events, and the chat's own (docs/events.md). */
type ChatEvent = { type: string } & Record<string, unknown>;

/** A line for the chat to handle: typed, sent from another process (`inboxId`), or the Mediator's summary of an ended loop. */
interface QueuedLine {
  text: string;
  /** The terminal echoed it already. */
  shown: boolean;
  inboxId?: number;
  summary?: RunOutcome;
}

/** `loopgraph chat`: an interactive session with a Mediator thread; its Looper runs in the background. */
export async function chatCommand(options: ChatCommandOptions): Promise<number> {
  if (options.continue && options.thread !== undefined) throw new ConfigError("use either --continue or --thread, not both");
  const threadId = options.continue ? await lastChatThread(options) : options.thread;
  const session = await withGraphSuggestion(options.graph, () =>
    openChat({ graph: options.graph, threadId, workspace: options.workspace, ...commonRunOptionsOf(options) }),
  );
  const emit = options.json ? (event: ChatEvent) => void process.stdout.write(`${eventLine(event)}\n`) : undefined;
  const screen = new ChatScreen(
    process.stdin,
    process.stdout,
    undefined,
    emit && ((text) => emit({ type: "chat_output", text: withoutColours(text) })),
  );
  return new ChatController(session, screen, options, emit).run();
}

/** `--continue`: the store's thread with a Mediator (a chat's, or a `run` of such a graph) that changed last. */
async function lastChatThread(options: GlobalOptions): Promise<string> {
  const threads = (await listThreads(storeOf(options))).sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
  for (const thread of threads) if (await isMediatorThread(thread)) return thread.threadId;
  throw new ConfigError(`no chat to continue in this store: start one with loopgraph chat${dbFlag(options.db)}`);
}

class ChatController {
  /** Lines typed, in order; `shown` once the terminal echoed them (not when typed while an answer streamed). */
  private readonly queue: QueuedLine[] = [];
  /** The last message sent from another process that is queued here. */
  private lastInboxId = 0;
  /** The poll of the inbox in progress. */
  private polling?: Promise<void>;
  private poller?: NodeJS.Timeout;
  private busy = false;
  private turn?: AbortController;
  /** A Ctrl-C since the last line typed: another one leaves. */
  private armed = false;
  private leaving = false;
  private inputEnded = false;
  /** Greeted, and what was sent while no chat was open taken up: typed lines are handled from now on. */
  private ready = false;
  private finish!: (code: number) => void;
  private readonly done = new Promise<number>((resolve) => (this.finish = resolve));

  constructor(
    private readonly session: ChatSession,
    private readonly screen: ChatScreen,
    /** The command's own: the store the chat is in. */
    private readonly globals: GlobalOptions,
    /** `--json`: events go out as lines of JSON instead of the screen's text. */
    private readonly emit?: (event: ChatEvent) => void,
  ) {}

  async run(): Promise<number> {
    const { session, screen } = this;
    const unsubscribe = session.looper.onMessage((message) => {
      if (this.emit) this.emit({ type: "loop_message", threadId: session.threadId, content: message.content, auto: Boolean(message.auto) });
      else if (message.auto) screen.print(pc.dim(printable(message.content)));
    });
    const unsettled = session.looper.onSettled((outcome) => this.loopSettled(outcome));
    // Listening from the start: piped input may be read, and end, while the chat greets and takes up
    // what was sent to it; its lines and its end wait for `ready`.
    screen.rl.on("line", (line) => {
      this.emit?.({ type: "user_message", threadId: session.threadId, text: line });
      this.armed = false;
      this.queue.push({ text: line, shown: screen.interactive && !screen.answering });
      void this.drainQueue();
    });
    screen.rl.on("close", () => {
      this.inputEnded = true;
      // Ctrl-D in a terminal leaves now; the end of piped input first lets the loop finish.
      void this.drainQueue();
    });
    screen.rl.on("SIGINT", () => this.interrupt());
    if (!screen.interactive) process.on("SIGINT", () => this.interrupt());
    // `kill`: leave as with /quit, the loop stopped; a second one quits at once.
    process.on("SIGTERM", () => void this.leave(ExitCode.Interrupted));
    await this.greet();
    // What other processes sent while no chat was open is taken up first, then as it comes.
    await this.pollInbox();
    this.poller = setInterval(() => void this.pollInbox(), INBOX_POLL_MS);
    this.ready = true;
    screen.prompt();
    void this.drainQueue();
    const code = await this.done;
    clearInterval(this.poller);
    unsubscribe();
    unsettled();
    return code;
  }

  private async greet(): Promise<void> {
    const { session, screen } = this;
    if (this.emit)
      return this.emit({ type: "chat_started", threadId: session.threadId, workspace: session.workspace, created: session.created });
    screen.print(pc.bold(`loopgraph chat`) + pc.dim(`  thread ${session.threadId}  workspace ${session.workspace}`));
    if (!session.created) {
      const history = await session.history();
      if (history.length > HISTORY_SHOWN)
        screen.print(pc.dim(`… ${history.length - HISTORY_SHOWN} earlier messages (loopgraph inspect ${session.threadId})`));
      for (const message of history.slice(-HISTORY_SHOWN)) {
        const shown = renderHistoryMessage(message);
        if (shown) screen.print(shown);
      }
      screen.print(await session.looper.status());
    }
    screen.print(pc.dim("Type /help for commands; Ctrl-D leaves."));
  }

  /**
   * Takes up what other processes sent this chat: free text for the Mediator is answered like a
   * typed line; commands for the loop start or continue it (see LoopSupervisor.takeUpQueued).
   */
  private pollInbox(): Promise<void> {
    if (this.busy || this.leaving) return Promise.resolve();
    // One poll at a time: a caller during one waits for it.
    this.polling ??= this.readInbox().finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async readInbox(): Promise<void> {
    try {
      for (const message of await this.session.unanswered()) {
        if (message.id <= this.lastInboxId) continue;
        this.lastInboxId = message.id;
        this.queue.push({ text: message.text, shown: false, inboxId: message.id });
      }
      // In the order sent: a task sent after a message waits until the Mediator has answered it.
      const firstMessage = Math.min(...this.queue.flatMap((line) => (line.inboxId === undefined ? [] : [line.inboxId])));
      const taskId = await this.session.looper.queuedTaskId();
      if (taskId !== undefined && taskId < firstMessage && !this.session.looper.running && !this.busy && !this.leaving) {
        const line = await this.session.looper.takeUpQueued();
        if (line) this.screen.print(pc.dim(line));
      }
    } catch (error) {
      // A store busy for a moment: the next poll tries again.
      if (process.env.LOOPGRAPH_DEBUG) console.error(error);
    }
    if (this.queue.length > 0) void this.drainQueue();
  }

  private async drainQueue(): Promise<void> {
    if (this.busy || !this.ready) return;
    this.busy = true;
    try {
      while (this.queue.length > 0 && !this.leaving) await this.handle(this.queue.shift()!);
    } finally {
      this.busy = false;
    }
    if (this.inputEnded && !this.leaving && this.queue.length === 0) {
      if (this.screen.interactive) await this.leave(ExitCode.Finished);
      else await this.leaveAfterLoop();
    }
  }

  private async handle(typed: QueuedLine): Promise<void> {
    const line = typed.text.trim();
    if (typed.summary) {
      this.screen.beginAnswer();
      try {
        await this.ask((turn) => this.session.summarise(typed.summary!, turn));
      } finally {
        this.screen.endAnswer();
      }
      return;
    }
    if (!line) return this.screen.prompt();
    if (typed.inboxId !== undefined) this.screen.print(`${pc.bold("you›")} ${line} ${pc.dim("(sent from another terminal)")}`);
    else if (!typed.shown) this.screen.print(`${pc.bold("you›")} ${line}`);
    this.screen.beginAnswer();
    try {
      const inboxId = typed.inboxId;
      if (inboxId !== undefined) await this.ask((turn) => this.session.say(line, { ...turn, inboxId }));
      else if (!(await this.runShortcut(line))) await this.ask((turn) => this.session.say(line, turn));
    } finally {
      this.screen.endAnswer();
    }
  }

  /** Chat commands and plain Looper commands (`stop`, `status`, `add: …`) are answered without the Mediator. */
  private async runShortcut(line: string): Promise<boolean> {
    const { looper } = this.session;
    const [word, ...rest] = line.split(/\s+/);
    const argument = rest.join(" ").trim();
    switch (word?.toLowerCase()) {
      case "/help":
        this.screen.line(HELP);
        return true;
      case "/quit":
      case "/exit":
        void this.leave(ExitCode.Finished);
        return true;
      case "/inspect":
        await inspectCommand(looper.threadId, this.globals).catch((error: unknown) =>
          this.screen.line(pc.red(String((error as Error).message ?? error))),
        );
        return true;
      case "/resume":
        this.screen.line(await looper.resume());
        return true;
      case "/approve":
        this.screen.line(await looper.resume({ decision: "approve" }));
        return true;
      case "/always":
        this.screen.line(await looper.resume({ decision: "always" }));
        return true;
      case "/reject":
        this.screen.line(await looper.resume(argument ? { decision: "reject", reason: argument } : { decision: "reject" }));
        return true;
    }
    const command = parseLooperCommand(line);
    if (!command) {
      if (line.startsWith("/")) this.screen.line(pc.yellow(`unknown command ${word}: try /help`));
      return line.startsWith("/");
    }
    this.screen.line(await dispatchLooperCommand(command, looper));
    return true;
  }

  /** One Mediator turn (`say`, or the summary), streamed; Ctrl-C cancels it. */
  private async ask(run: (turn: TurnOptions) => Promise<RunOutcome>): Promise<void> {
    const turn = new AbortController();
    this.turn = turn;
    let streamed = false;
    let labelled = false;
    const label = (): void => {
      if (!labelled) this.screen.stream(`${pc.cyan("◆")} `);
      labelled = true;
    };
    const onEvent = (event: RunEvent): void => {
      if (this.emit) return this.emit(event);
      if (event.threadId !== this.session.threadId) return;
      switch (event.type) {
        case "message":
          if (event.delta !== undefined) {
            label();
            this.screen.stream(printable(event.delta));
            streamed = true;
          } else if (event.content !== undefined && !streamed) {
            label();
            this.screen.stream(printable(event.content));
          }
          break;
        case "tool_call":
          this.screen.line(pc.dim(printable(`  → ${event.name} ${JSON.stringify(event.args)}`)));
          labelled = false;
          break;
        case "tool_result":
          this.screen.line(pc.dim(printable(`  ↳ ${event.result.split("\n")[0]}`)));
          streamed = false;
          break;
        case "error":
          if (!turn.signal.aborted) this.screen.line(pc.red(`✖ ${printable(event.message)}`));
          break;
        default:
          // The other events (steps, approvals, the run's end) print nothing in a chat's answer.
          break;
      }
    };
    try {
      await run({ signal: turn.signal, onEvent });
      if (turn.signal.aborted) this.screen.line(pc.yellow("(answer cancelled)"));
    } finally {
      this.turn = undefined;
    }
  }

  private interrupt(): void {
    if (this.armed || this.leaving) {
      void this.leave(ExitCode.Interrupted);
      return;
    }
    this.armed = true;
    if (this.turn) {
      this.turn.abort(new CancelledError("the answer was cancelled"));
      return;
    }
    this.screen.print(pc.dim("(Ctrl-C again or Ctrl-D to leave)"));
  }

  private loopSettled(outcome: RunOutcome): void {
    if (this.leaving) return;
    this.printSettled(outcome);
    // A loop that ended (not paused, not interrupted mid-way) is summed up by the Mediator, after the turn in progress if any.
    if (outcome.status !== "paused" && !(outcome.status === "interrupted" && !outcome.ended)) {
      this.queue.push({ text: "", shown: true, summary: outcome });
      void this.drainQueue();
    }
  }

  private printSettled(outcome: RunOutcome): void {
    const thread = outcome.threadId;
    if (this.emit) {
      const request = outcome.pause?.value;
      return this.emit({
        type: "loop_settled",
        threadId: thread,
        status: outcome.status,
        exitCode: outcome.exitCode,
        ...(outcome.error !== undefined && { reason: outcome.error }),
        ...(isApprovalRequest(request) && { approval: request }),
      });
    }
    switch (outcome.status) {
      case "finished":
        this.screen.print(pc.green(`■ the loop has ended (thread ${thread}); /status shows how`));
        break;
      case "paused": {
        const request = outcome.pause?.value;
        this.screen.print(
          isApprovalRequest(request)
            ? pc.yellow(`⏸ the loop waits for your approval: ${chatApprovalLine(request)}`)
            : pc.yellow(`⏸ the loop paused (thread ${thread}): /resume continues it`),
        );
        if (isApprovalRequest(request) && request.diff) this.screen.print(renderDiff(request.diff));
        break;
      }
      case "interrupted":
        this.screen.print(
          pc.yellow(
            outcome.ended
              ? `■ the loop ended: ${outcome.error ?? "stopped"} (thread ${thread})`
              : `■ the loop was interrupted (thread ${thread}): /resume continues it`,
          ),
        );
        break;
      case "limited":
        this.screen.print(pc.yellow(`■ the loop ended by a limit: ${outcome.error ?? "a limit"} (thread ${thread})`));
        break;
      case "failed":
        this.screen.print(pc.red(`✖ the loop failed: ${outcome.error ?? "unknown error"} (/resume retries the failed step)`));
        break;
    }
  }

  /** Piped input ended: the running loop goes on to its end (its `[AUTO]` lines still print), then the chat ends. */
  private async leaveAfterLoop(): Promise<void> {
    // A task sent after a message waited for its answer: it is taken up now, before the chat can end.
    await this.pollInbox();
    if (this.busy || this.queue.length > 0) return void this.drainQueue();
    const outcome = await this.session.looper.wait();
    // The loop's end queued the Mediator's summary: the chat ends once it is given (drainQueue comes back here).
    if (this.busy || this.queue.length > 0) return void this.drainQueue();
    await this.leave(outcome && outcome.status !== "finished" ? outcome.exitCode : ExitCode.Finished);
  }

  private async leave(code: number): Promise<void> {
    if (this.leaving) {
      // A second request while the loop is being stopped: quit now (the step in flight re-runs on resume).
      if (code === ExitCode.Interrupted) this.quitNow(code);
      return;
    }
    this.leaving = true;
    this.turn?.abort(new CancelledError("the chat ended"));
    const { looper } = this.session;
    if (looper.running) {
      this.screen.endAnswer();
      this.screen.print(pc.yellow("Stopping the loop now: its step in flight re-runs on resume (Ctrl-C again to quit at once)…"));
      await looper.drain();
      if (this.quit) return;
      this.screen.print(`The loop's state is saved. ${this.continueWith()}`);
      this.toldHowToContinue = true;
    }
    this.quitNow(code);
  }

  /** Set once the chat is ending now: nothing more is printed. */
  private quit = false;
  /** The chat's end said how to continue the loop (and this chat with it). */
  private toldHowToContinue = false;

  /**
   * Ends the chat now. A run still in progress here (the Mediator's cancelled turn, a loop not yet
   * stopped) is first recorded as interrupted, never left marked running.
   */
  private quitNow(code: number): void {
    if (this.quit) return;
    this.quit = true;
    void interruptActiveRuns("the chat ended before the step in flight did (it re-runs on resume)").then((interrupted) => {
      if (interrupted.includes(this.session.looper.threadId))
        this.screen.print(pc.yellow(`The loop was interrupted. ${this.continueWith()}`));
      else if (!this.toldHowToContinue && !this.emit) this.screen.print(pc.dim(this.continueChat()));
      this.screen.close();
      this.finish(code);
    });
  }

  /** How to come back to this chat: the last one used, or this one by its id. */
  private continueChat(): string {
    const db = dbFlag(this.globals.db);
    return `Continue with: loopgraph chat --continue${db}  (or loopgraph chat --thread ${this.session.threadId}${db})`;
  }

  private continueWith(): string {
    const { threadId, looper } = this.session;
    return `Continue with: loopgraph chat --thread ${threadId}  (or loopgraph resume ${looper.threadId})`;
  }
}

function renderHistoryMessage(message: BaseMessage): string | undefined {
  const text = printable(messageText(message).trim());
  switch (message.getType()) {
    case "human":
      if (message.name !== "looper") return `${pc.bold("you›")} ${text}`;
      // The Looper's own lines only: a request it made of the Mediator (sum up the ended loop) is not the user's to read.
      return autoEntries(text) || undefined;
    case "ai":
      return text ? `${pc.cyan("◆")} ${text}` : undefined;
    default:
      return undefined;
  }
}

/** The `[AUTO]` entries of a text, each with its further lines (indented under the prefix), dimmed; nothing else. */
function autoEntries(text: string): string {
  const continuation = " ".repeat(AUTO_PREFIX.length + 1);
  let inEntry = false;
  const kept = text.split("\n").filter((line) => {
    inEntry = line.startsWith(AUTO_PREFIX) || (inEntry && line.startsWith(continuation));
    return inEntry;
  });
  return kept.length > 0 ? pc.dim(kept.join("\n")) : "";
}

/** Text without the terminal's colour codes (picocolors'), for --json. */
function withoutColours(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;]*m/g, "");
}
