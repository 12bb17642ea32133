/** Editing a proposed call before approving it: in the user's editor, and as an answer's `args`/`set`. */
import { describe, expect, it } from "vitest";
import { editInEditor } from "../src/cli/approval-prompt.js";
import { editedArgs, isApprovalAnswer, type ApprovalRequest } from "../src/runtime/approval.js";
import { describeEdit } from "../src/runtime/tool-call.js";

const request = (tool: string, args: Record<string, unknown>): ApprovalRequest => ({
  kind: "approval",
  node: "coder",
  tool,
  args,
  reason: "asks",
});

describe("editing a call in the editor", () => {
  it("opens a write_file's contents as text, any other call's arguments as JSON, and reads back the edit", () => {
    const env = { ...process.env, VISUAL: "", EDITOR: "sed -i -e s/model/user/" };
    expect(editInEditor(request("write_file", { path: "src/a.ts", contents: "const model = 1;\n" }), env)).toEqual({
      path: "src/a.ts",
      contents: "const user = 1;\n",
    });
    expect(editInEditor(request("shell", { command: "echo model" }), env)).toEqual({ command: "echo user" });
  });

  it("says why an edit cannot be used: the editor failed, or the JSON does not parse", () => {
    expect(editInEditor(request("shell", { command: "ls" }), { ...process.env, VISUAL: "false" })).toBe(
      "the editor (false) exited with 1: nothing was changed",
    );
    const broken = editInEditor(request("shell", { command: "ls" }), { ...process.env, VISUAL: "printf '{oops' >" });
    expect(broken).toMatch(/^the edited arguments are not JSON \(.*\): nothing was changed$/);
    expect(editInEditor(request("shell", { command: "ls" }), { ...process.env, VISUAL: "printf '[1]' >" })).toBe(
      "the edited arguments must be one JSON object: nothing was changed",
    );
  });
});

describe("an approval answer's edit", () => {
  it("replaces the arguments, or changes them one by one (dotted paths), only with approve", () => {
    const args = { command: "npm test", options: { depth: 1 } };
    expect(editedArgs({ decision: "approve" }, args)).toBe(args);
    expect(editedArgs({ decision: "approve", args: { command: "ls" } }, args)).toEqual({ command: "ls" });
    expect(
      editedArgs(
        {
          decision: "approve",
          set: [
            { path: "options.depth", value: 3 },
            { path: "cwd", value: "src" },
          ],
        },
        args,
      ),
    ).toEqual({ command: "npm test", options: { depth: 3 }, cwd: "src" });
    expect(args).toEqual({ command: "npm test", options: { depth: 1 } });
    expect(editedArgs({ decision: "reject", args: { command: "ls" } }, args)).toBe(args);
    expect(isApprovalAnswer({ decision: "approve", args: [1] })).toBe(false);
    expect(isApprovalAnswer({ decision: "approve", set: [{ path: "" }] })).toBe(false);
  });

  it("tells the model what changed: a value as before → after, a text as a diff", () => {
    expect(describeEdit({ command: "rm -rf build", timeout_ms: 5 }, { command: "rm -rf build/tmp" })).toBe(
      'The user edited this call before approving it; it ran with their arguments, not yours. Changed:\ncommand: "rm -rf build" → "rm -rf build/tmp"\ntimeout_ms: 5 → (none)',
    );
    expect(describeEdit({ contents: "a\nb\nc\n" }, { contents: "a\nB\nc\n" })).toMatch(
      /Changed:\ncontents:\n@@ -1,3 \+1,3 @@\n a\n-b\n\+B\n c$/,
    );
  });
});
