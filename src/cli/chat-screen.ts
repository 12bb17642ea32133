import { Writable } from "node:stream";
import { clearLine, cursorTo, createInterface, type Interface } from "node:readline";

/**
 * The chat's terminal: a prompt line the user types in, and output that arrives at any time (the
 * Mediator's streamed answer, the Looper's `[AUTO]` messages). Output never garbles the line
 * being typed: in a terminal, a line printed while the user types goes above the prompt, which is
 * then redrawn with the typed text and cursor intact; keys typed while an answer streams are not
 * echoed until it ends (they are kept, not lost). Without a terminal (a pipe) lines are printed
 * as they come.
 */
export class ChatScreen {
  readonly rl: Interface;
  readonly interactive: boolean;
  private readonly echo: MutableOutput;
  private answeringNow = false;
  private streaming = false;
  private held: string[] = [];

  constructor(
    input: NodeJS.ReadStream = process.stdin,
    private readonly out: NodeJS.WriteStream = process.stdout,
    promptText = "you› ",
  ) {
    this.interactive = Boolean(input.isTTY && out.isTTY);
    this.echo = new MutableOutput(out);
    this.rl = createInterface({ input, output: this.echo, terminal: this.interactive, prompt: promptText, historySize: 200 });
  }

  /** Whether an answer is in progress (typing is not echoed meanwhile). */
  get answering(): boolean {
    return this.answeringNow;
  }

  /** Shows the prompt (in a terminal), keeping what was typed so far. */
  prompt(): void {
    if (this.interactive && !this.answeringNow) this.rl.prompt(true);
  }

  /** Prints whole lines now, above the prompt; while an answer streams they wait for its end. */
  print(text: string): void {
    if (this.answeringNow) {
      this.held.push(text);
      return;
    }
    if (!this.interactive) {
      this.out.write(`${text}\n`);
      return;
    }
    cursorTo(this.out, 0);
    clearLine(this.out, 0);
    this.out.write(`${text}\n`);
    this.rl.prompt(true);
  }

  /** An answer (or a command's output) begins: the prompt is taken down and typing is not echoed until {@link endAnswer}. */
  beginAnswer(): void {
    if (this.answeringNow) return;
    if (this.interactive) {
      cursorTo(this.out, 0);
      clearLine(this.out, 0);
    }
    this.answeringNow = true;
    this.echo.muted = true;
  }

  /** Streamed text of the answer. */
  stream(text: string): void {
    this.out.write(text);
    this.streaming = !text.endsWith("\n");
  }

  /** A whole line within the answer (a tool call, a status block). */
  line(text: string): void {
    this.endStream();
    this.out.write(`${text}\n`);
  }

  endStream(): void {
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
    this.rl.close();
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

  constructor(private readonly target: NodeJS.WriteStream) {
    super();
    target.on("resize", () => this.emit("resize"));
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
