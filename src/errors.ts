/** Exit codes of the CLI (docs/exit-codes.md). */
export const ExitCode = {
  Finished: 0,
  Failed: 1,
  BadInput: 2,
  Paused: 3,
  /** Ended by a limit (round limit, `max_visits`, a step limit) before the work was judged done. */
  Limit: 4,
  Interrupted: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * An error meant for the user: a one-line message that says what to fix, and the exit code.
 * The CLI prints `message` alone, never a stack trace.
 */
export class LoopgraphError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = ExitCode.Failed,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "LoopgraphError";
  }
}

/** Bad input or configuration (exit code 2). */
export class ConfigError extends LoopgraphError {
  constructor(message: string) {
    super(message, ExitCode.BadInput);
    this.name = "ConfigError";
  }
}

/**
 * A limit ended the work before it was judged done (a Coder's `max_steps`, the graph's step
 * limit): the run ends `limited`, exit code 4, with which limit in the message.
 */
export class LimitError extends LoopgraphError {
  constructor(message: string) {
    super(message, ExitCode.Limit);
    this.name = "LimitError";
  }
}

/** A graph file problem, reported as `file:line:col: message`. */
/** The most lines a graph's problems print as: a file that is not a graph at all must not flood the terminal. */
export const MAX_PROBLEM_LINES = 5;

export class GraphValidationError extends ConfigError {
  /** `issues` holds every problem; the message shows the first ones, then `… and N more problems`. */
  constructor(readonly issues: { file: string; line: number; col: number; message: string }[]) {
    const lines = issues.map((i) => `${i.file}:${i.line}:${i.col}: ${i.message}`);
    const shown =
      lines.length > MAX_PROBLEM_LINES
        ? [...lines.slice(0, MAX_PROBLEM_LINES - 1), `… and ${lines.length - MAX_PROBLEM_LINES + 1} more problems`]
        : lines;
    super(shown.join("\n"));
    this.name = "GraphValidationError";
  }
}

/** Model failures: auth errors stop at once; others surface after retries. */
export class ModelError extends LoopgraphError {
  constructor(
    message: string,
    readonly kind: "auth" | "rate_limit" | "timeout" | "server" | "bad_request" | "exhausted" | "network",
  ) {
    super(message, ExitCode.Failed);
    this.name = "ModelError";
  }
}

/**
 * The user stopped the run (Ctrl-C, SIGTERM): the reason a run's signal is aborted with. The
 * step in flight ends without a result and re-runs on resume; the run's outcome is `interrupted`.
 */
export class CancelledError extends LoopgraphError {
  constructor(message = "interrupted by the user") {
    super(message, ExitCode.Interrupted);
    this.name = "CancelledError";
  }
}

/** Whether `signal` was aborted by the user (Ctrl-C): its reason is a CancelledError. */
export function cancelledByUser(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && signal.reason instanceof CancelledError;
}
