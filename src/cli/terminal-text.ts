/**
 * Text loopgraph did not write itself (model output, tool output, arguments the model chose, a
 * task, file contents) goes through `printable` before it reaches a terminal: control characters
 * (C0 except newline and tab, DEL, C1) and the Unicode bidirectional controls are shown as
 * escapes (`\x1b`, `\u202e`), so the text cannot move the cursor, erase a line, set a title or
 * reorder what the user reads (an approval prompt showing another command than the one asked).
 */
const UNPRINTABLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (char) => {
    const code = char.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** The characters JSON.stringify leaves as they are that a terminal would still act on. */
const UNPRINTABLE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * JSON text (from JSON.stringify, which escapes the C0 controls) with DEL, the C1 controls and the
 * bidirectional controls escaped as `\uXXXX` too: the same JSON value, safe to print.
 */
export function printableJson(json: string): string {
  return json.replace(UNPRINTABLE_IN_JSON, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
