import type { z } from "zod";

/** Why `pattern` is not a JavaScript regular expression, in one line; undefined when it is one. */
export function regexProblem(pattern: string): string | undefined {
  try {
    new RegExp(pattern);
    return undefined;
  } catch (error) {
    // V8 repeats the pattern: "Invalid regular expression: /fix(/: Unterminated group".
    const reason = (error as Error).message.replace(/^Invalid regular expression: \/[\s\S]*\/[a-z]*: /, "");
    return `invalid regular expression /${pattern}/: ${reason}`;
  }
}

/** A zod refinement of a string that must be a JavaScript regular expression. */
export function mustCompile(pattern: string, ctx: z.RefinementCtx): void {
  const problem = regexProblem(pattern);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
}
