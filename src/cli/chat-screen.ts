import { Writable } from "node:stream";
import { clearScreenDown, cursorTo, createInterface, moveCursor, type Interface } from "node:readline";

/**
 * The chat's terminal: a prompt line the user types in, and output that arrives at any time (the
 * Mediator's streamed answer, the Looper's `[AUTO]` messages). Output never garbles the line
 * being typed: in a terminal, a line printed while the user types goes above the prompt, which is
 * then redrawn with the typed text and cursor intact; keys typed while an answer streams are not
 * echoed until it ends (they are kept, not lost). Without a terminal (a pipe) lines are printed
 * as they come.
 *
 * The prompt and the typed line may take several rows (a long line wraps at the terminal's width):
 * to print above it, every row it occupies is cleared first (counted by readline from
 * `columns` and the text's display width, from the cursor's row up), then it is drawn again below.
 * On a resize the terminal re-wraps the rows (tmux, VTE, iTerm2, kitty, Windows Terminal do): the
 * prompt is redrawn from the cursor's row at the new width.
 */
export class ChatScreen {
  readonly rl: Interface;
  readonly interactive: boolean;
  private readonly echo: MutableOutput;
  private answeringNow = false;
  private streaming = false;
  private held: string[] = [];
  /** The prompt (and the typed line) is on the screen, the cursor within it. */
  private drawn = false;
  private closed = false;

  constructor(
    input: NodeJS.ReadStream = process.stdin,
    private readonly out: NodeJS.WriteStream = process.stdout,
    promptText = "you› ",
    /** `chat --json`: lines read from the input as they come, and each printed line as a `chat_output` event (see ChatController). */
    private readonly json?: (text: string) => void,
  ) {
    this.interactive = !json && Boolean(input.isTTY && out.isTTY);
    this.echo = new MutableOutput(out);
    this.rl = createInterface({ input, output: this.echo, terminal: this.interactive, prompt: promptText, historySize: 200 });
    // Enter ends the typed line with a newline: the prompt is no longer on the screen.
    this.rl.on("line", () => (this.drawn = false));
    this.rl.on("close", () => (this.closed = true));
    if (this.interactive) out.on("resize", () => this.resized());
  }

  /** Whether an answer is in progress (typing is not echoed meanwhile). */
  get answering(): boolean {
    return this.answeringNow;
  }

  /** Shows the prompt (in a terminal), keeping what was typed so far. */
  prompt(): void {
    if (!this.interactive || this.answeringNow || this.closed) return;
    // Drawn anew on the cursor's row: readline is not to move up from where its last drawing left the cursor.
    if (!this.drawn) this.setPromptRow(0);
    this.rl.prompt(true);
    this.drawn = true;
  }

  /** Prints whole lines now, above the prompt; while an answer streams they wait for its end. */
  print(text: string): void {
    if (this.json) return this.json(text);
    if (this.answeringNow) {
      this.held.push(text);
      return;
    }
    if (!this.interactive) {
      this.out.write(`${text}\n`);
      return;
    }
    this.takeDownPrompt();
    this.out.write(`${text}\n`);
    this.prompt();
  }

  /** An answer (or a command's output) begins: the prompt is taken down and typing is not echoed until {@link endAnswer}. */
  beginAnswer(): void {
    if (this.answeringNow) return;
    if (this.interactive) this.takeDownPrompt();
    this.answeringNow = true;
    this.echo.muted = true;
  }

  /** Streamed text of the answer (with --json the events carry it). */
  stream(text: string): void {
    if (this.json) return;
    this.out.write(text);
    this.streaming = !text.endsWith("\n");
  }

  /** A whole line within the answer (a tool call, a status block). */
  line(text: string): void {
    if (this.json) return this.json(text);
    this.endStream();
    this.out.write(`${text}\n`);
  }

  endStream(): void {
    if (this.json) return;
    if (this.streaming) this.out.write("\n");
    this.streaming = false;
  }

  /** The answer is over: lines that arrived meanwhile are printed, then the prompt with any typed-ahead text. */
  endAnswer(): void {
    if (!this.answeringNow) return;
    this.finishAnswer();
    this.prompt();
  }

  /** Leaves: what is pending is printed, and no prompt comes back. */
  close(): void {
    if (this.answeringNow) this.finishAnswer();
    if (this.interactive && this.drawn) {
      // The prompt stays, and its line ends: what runs next in the terminal (the shell's prompt) starts on a fresh line.
      this.takeDownPrompt();
      this.out.write(`${this.rl.getPrompt()}${this.rl.line}\n`);
    }
    this.rl.close();
  }

  /** Clears every row the prompt and the typed line take, leaving the cursor at the start of the first. */
  private takeDownPrompt(): void {
    if (!this.drawn) return;
    const { rows } = this.rl.getCursorPos();
    if (rows > 0) moveCursor(this.out, 0, -rows);
    cursorTo(this.out, 0);
    clearScreenDown(this.out);
    this.drawn = false;
  }

  /**
   * The terminal's width changed and it re-wrapped the rows: the cursor is now on the row it takes
   * at the new width (readline counts rows with the new `columns`), and the prompt is drawn again from there.
   */
  private resized(): void {
    if (!this.drawn || this.answeringNow || this.closed) return;
    this.setPromptRow(this.rl.getCursorPos().rows);
    this.rl.prompt(true);
  }

  /**
   * Tells readline on which row of the prompt the cursor is: it moves up that many rows to redraw.
   * (`prevRows` is readline's own record of it, kept from its last drawing; Node has no setter.)
   */
  private setPromptRow(rows: number): void {
    (this.rl as unknown as { prevRows?: number }).prevRows = rows;
  }

  private finishAnswer(): void {
    this.endStream();
    this.answeringNow = false;
    this.echo.muted = false;
    const held = this.held;
    this.held = [];
    for (const text of held) this.out.write(`${text}\n`);
  }
}

/** readline's echo of the typed line; muted while an answer streams, so keys typed meanwhile do not cut into it. */
class MutableOutput extends Writable {
  muted = false;

  // Not forwarding the terminal's "resize": readline would redraw from a row counted at the old width (ChatScreen redraws).
  constructor(private readonly target: NodeJS.WriteStream) {
    super();
  }

  // readline reads these to lay out the line.
  get columns(): number {
    return this.target.columns;
  }

  get rows(): number {
    return this.target.rows;
  }

  get isTTY(): boolean {
    return Boolean(this.target.isTTY);
  }

  override _write(chunk: Buffer | string, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    // Written through at once, so the echo and the screen's own writes keep their order.
    if (!this.muted) this.target.write(chunk, encoding);
    callback();
  }
}
