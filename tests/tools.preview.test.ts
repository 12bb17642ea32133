/** The diff the user is shown before approving a file edit (previewChange), computed without changing anything. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { renderDiff } from "../src/cli/approval-prompt.js";
import { previewChange } from "../src/tools/registry.js";
import { makeWorkspace } from "./helpers/tool-workspace.js";

const call = (name: string, args: unknown) => ({ id: "c1", name, args });

describe("previewChange", () => {
  it("shows an edit as a unified diff of the file, and writes nothing", async () => {
    const ws = makeWorkspace({ "src/app.js": "const a = 1;\nconst b = 2;\nconsole.log(a + b);\n" });
    const diff = await previewChange(
      call("edit_file", { path: "src/app.js", old_string: "const b = 2;", new_string: "const b = 40;" }),
      ws.ctx,
    );
    expect(diff).toBe(
      [
        "--- a/src/app.js",
        "+++ b/src/app.js",
        "@@ -1,3 +1,3 @@",
        " const a = 1;",
        "-const b = 2;",
        "+const b = 40;",
        " console.log(a + b);",
      ].join("\n"),
    );
    expect(readFileSync(join(ws.root, "src/app.js"), "utf8")).toContain("const b = 2;");
  });

  it("shows a new file against /dev/null, and an overwrite against the old contents", async () => {
    const ws = makeWorkspace({ "old.txt": "one\n" });
    expect(await previewChange(call("write_file", { path: "new.txt", contents: "hello\n" }), ws.ctx)).toBe(
      ["--- /dev/null", "+++ b/new.txt", "@@ -0,0 +1,1 @@", "+hello"].join("\n"),
    );
    expect(await previewChange(call("write_file", { path: "old.txt", contents: "two\n" }), ws.ctx)).toContain("-one\n+two");
  });

  it("redacts the run's secrets, cuts a long diff, and has none for a call that would fail or another tool", async () => {
    const secret = "ghp_preview_canary_123456";
    const ws = makeWorkspace({ "a.txt": "x\n" }, { secrets: [secret] });
    expect(await previewChange(call("write_file", { path: "a.txt", contents: `token ${secret}\n` }), ws.ctx)).toContain(
      "+token [redacted]",
    );
    ws.write("big.txt", "old\n".repeat(1000));
    const long = await previewChange(call("write_file", { path: "big.txt", contents: "line\n".repeat(1000) }), ws.ctx);
    expect(long!.split("\n")).toHaveLength(401);
    expect(long).toMatch(/\[\.\.\. \d+ more lines of the diff\]$/);
    // A new file: its head, 60 lines under the header.
    const head = (await previewChange(call("write_file", { path: "new-big.txt", contents: "line\n".repeat(1000) }), ws.ctx))!.split("\n");
    expect(head).toHaveLength(64);
    expect(head.at(-1)).toBe("[... 941 more lines of the new file]");
    expect(await previewChange(call("edit_file", { path: "a.txt", old_string: "nope", new_string: "y" }), ws.ctx)).toBeUndefined();
    expect(
      await previewChange(call("edit_file", { path: "../outside/secret.txt", old_string: "top", new_string: "y" }), ws.ctx),
    ).toBeUndefined();
    expect(await previewChange(call("shell", { command: "ls" }), ws.ctx)).toBeUndefined();
    expect(await previewChange(call("write_file", { path: "huge.txt", contents: "x\n".repeat(1_500_000) }), ws.ctx)).toBe(
      "[no diff shown: huge.txt would go from 0 to 3000000 characters]",
    );
  });

  it("is shown as text: a control character in a diff line cannot redraw the terminal", () => {
    const shown = renderDiff("+ok\n+\x1b[2K\rspoof");
    expect(shown).not.toContain("\x1b[2K");
    expect(shown).toContain("\\x1b[2K\\x0dspoof");
  });
});
