import { readFileSync, statSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LINE_STEP, LineIndexes } from "../src/tools/line-index.js";
import { createReadFileTool } from "../src/tools/read-file.js";
import { executeToolCall } from "../src/tools/registry.js";
import { makeWorkspace } from "./helpers/tool-workspace.js";

describe("read_file", () => {
  it("numbers lines like cat -n and reads a window with offset and limit", async () => {
    const ws = makeWorkspace({ "a.txt": "one\ntwo\nthree\nfour\n" });
    expect(await ws.call("read_file", { path: "a.txt" })).toEqual({
      ok: true,
      content: "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour",
      fileStamps: { "a.txt": expect.stringMatching(/^\d+:[\d.]+:\d+$/) },
    });
    const window = await ws.call("read_file", { path: "a.txt", offset: 2, limit: 2 });
    expect(window.content).toBe("     2\ttwo\n     3\tthree\n(lines 2-3 of 4; read on with offset 4)");
    expect((await ws.call("read_file", { path: "a.txt", offset: 4 })).content).toBe("     4\tfour\n(lines 4-4 of 4)");
  });

  it("shows CRLF lines without the CR, the last line without a newline, and says when a file is empty", async () => {
    const ws = makeWorkspace({ "crlf.txt": "a\r\nb", "empty.txt": "" });
    expect((await ws.call("read_file", { path: "crlf.txt" })).content).toBe("     1\ta\n     2\tb");
    expect((await ws.call("read_file", { path: "empty.txt" })).content).toBe("(empty.txt is empty)");
  });

  it("rejects an offset past the end", async () => {
    const ws = makeWorkspace({ "a.txt": "one\n" });
    const result = await ws.call("read_file", { path: "a.txt", offset: 5 });
    expect(result).toMatchObject({ ok: false, errorKind: "invalid_arguments" });
    expect(result.content).toContain("past the end of a.txt (1 lines)");
  });

  it("requires offset/limit above 1 MiB and then streams only the window", async () => {
    const line = "x".repeat(99) + "\n";
    const ws = makeWorkspace({ "big.log": line.repeat(11_000) }); // 1.1 MB
    const whole = await ws.call("read_file", { path: "big.log" });
    expect(whole).toMatchObject({ ok: false, errorKind: "invalid_arguments" });
    expect(whole.content).toMatch(/big\.log is 1\.0 MiB; files over 1 MiB must be read in parts: pass offset and limit/);
    const part = await ws.call("read_file", { path: "big.log", offset: 10_000, limit: 2 });
    expect(part.content).toBe(
      ` 10000\t${"x".repeat(99)}\n 10001\t${"x".repeat(99)}\n(lines 10000-10001; the file continues: read on with offset 10002)`,
    );
    const end = await ws.call("read_file", { path: "big.log", offset: 10_999, limit: 5 });
    expect(end.content).toMatch(/\(lines 10999-11000 of 11000\)$/);
  });

  it("refuses binary files and directories, and reports missing files", async () => {
    const ws = makeWorkspace({ "img.png": Buffer.from([0x89, 0x50, 0x00, 0x01]), "dir/x.txt": "x" });
    expect(await ws.call("read_file", { path: "img.png" })).toMatchObject({
      ok: false,
      errorKind: "failed",
      content: expect.stringContaining("binary file"),
    });
    expect(await ws.call("read_file", { path: "dir" })).toMatchObject({
      ok: false,
      errorKind: "invalid_arguments",
      content: expect.stringContaining("is a directory"),
    });
    expect(await ws.call("read_file", { path: "nope.txt" })).toMatchObject({
      ok: false,
      errorKind: "file_not_found",
      content: "nope.txt does not exist in the workspace",
    });
  });

  it("cuts very long lines for display", async () => {
    const ws = makeWorkspace({ "min.js": "y".repeat(5000) });
    const result = await ws.call("read_file", { path: "min.js" });
    expect(result.content).toBe(`     1\t${"y".repeat(2000)}... [line cut at 2000 characters]`);
  });

  it("reads a window far into a large file from the indexed line before it, never from a stale index", async () => {
    // A clock a minute ahead: the file counts as settled, so its index is kept.
    const indexes = new LineIndexes({ now: () => Date.now() + 60_000 });
    const tools = [createReadFileTool({ lineIndexes: indexes })];
    const text = (tag: string, lines: number, width: number) =>
      Array.from({ length: lines }, (_, i) => `${tag} ${i + 1} `.padEnd(width, "x")).join("\n") + "\n";
    const ws = makeWorkspace({ "big.log": text("old", 12_000, 99) }); // 1.2 MB: read in windows
    const window = (lines: string) => `${lines}\n(lines 10000-10001; the file continues: read on with offset 10002)`;
    const read = () => ws.call("read_file", { path: "big.log", offset: 10_000, limit: 2 }, tools);
    expect((await read()).content).toBe(window(` 10000\t${"old 10000 ".padEnd(99, "x")}\n 10001\t${"old 10001 ".padEnd(99, "x")}`));
    const stats = statSync(join(ws.root, "big.log"));
    expect(indexes.nearest(stats, 10_000)).toEqual({ line: 9 * LINE_STEP + 1, byte: 9 * LINE_STEP * 100 });
    expect((await read()).content).toBe(window(` 10000\t${"old 10000 ".padEnd(99, "x")}\n 10001\t${"old 10001 ".padEnd(99, "x")}`));

    // The same size and modification time, other lines (a line still starts at each indexed offset): read anew.
    ws.write("big.log", text("new", 24_000, 49));
    utimesSync(join(ws.root, "big.log"), stats.atime, stats.mtime);
    expect(statSync(join(ws.root, "big.log")).size).toBe(stats.size);
    expect((await read()).content).toBe(window(` 10000\t${"new 10000 ".padEnd(49, "x")}\n 10001\t${"new 10001 ".padEnd(49, "x")}`));

    // With the real clock, a file changed just now is not indexed (its stamps may not change with its next write).
    const fresh = new LineIndexes();
    await ws.call("read_file", { path: "big.log", offset: 10_000, limit: 2 }, [createReadFileTool({ lineIndexes: fresh })]);
    expect(fresh.nearest(statSync(join(ws.root, "big.log")), 10_000)).toEqual({ line: 1, byte: 0 });
  });

  it("reads artifacts saved under .loopgraph/artifacts", async () => {
    const ws = makeWorkspace({ ".loopgraph/artifacts/thread-1/shell-x.txt": "saved\n" });
    expect((await ws.call("read_file", { path: ".loopgraph/artifacts/thread-1/shell-x.txt" })).content).toBe("     1\tsaved");
  });
});

describe("write_file", () => {
  it("creates parent directories, writes, and reports the change", async () => {
    const ws = makeWorkspace();
    const result = await ws.call("write_file", { path: "src/deep/new.ts", contents: "export {};\n" });
    expect(result).toEqual({
      ok: true,
      content: "Created src/deep/new.ts (1 lines, 11 bytes)",
      filesChanged: ["src/deep/new.ts"],
      fileStamps: { "src/deep/new.ts": expect.any(String) },
    });
    expect(readFileSync(join(ws.root, "src/deep/new.ts"), "utf8")).toBe("export {};\n");
    const again = await ws.call("write_file", { path: "src/deep/new.ts", contents: "é" });
    expect(again.content).toBe("Overwrote src/deep/new.ts (1 lines, 2 bytes)");
  });

  it("refuses to overwrite a directory", async () => {
    const ws = makeWorkspace({ "dir/a": "" });
    expect(await ws.call("write_file", { path: "dir", contents: "x" })).toMatchObject({ ok: false, errorKind: "invalid_arguments" });
  });
});

describe("edit_file", () => {
  it("in a Coder turn, needs the file read first and unchanged since: refused with not_read otherwise", async () => {
    const ws = makeWorkspace({ "a.ts": "const a = 1;\n", "b.ts": "const b = 1;\n" });
    const turn: Record<string, string> = {};
    const call = async (name: string, args: unknown) => {
      const result = await executeToolCall({ id: `c${Object.keys(turn).length}`, name, args }, { ...ws.ctx, fileStamps: { ...turn } });
      Object.assign(turn, result.fileStamps);
      return result;
    };
    const edit = (path: string) => call("edit_file", { path, old_string: "= 1", new_string: "= 2" });
    expect(await edit("a.ts")).toEqual({
      ok: false,
      errorKind: "not_read",
      content: "a.ts was not read in this turn: read it with read_file first, then edit it",
    });
    expect((await call("read_file", { path: "a.ts", limit: 1 })).ok).toBe(true);
    expect((await edit("a.ts")).ok).toBe(true);
    // Its own edit keeps it known: a second edit needs no new read.
    expect((await call("edit_file", { path: "a.ts", old_string: "= 2", new_string: "= 3" })).ok).toBe(true);
    await call("read_file", { path: "b.ts" });
    // Changed on disk since (by a command, by the user): read it again first.
    await new Promise((resolve) => setTimeout(resolve, 5));
    ws.write("b.ts", "const b = 10;\n");
    expect(await edit("b.ts")).toMatchObject({
      ok: false,
      errorKind: "not_read",
      content: "b.ts changed on disk since you read it: read it again with read_file, then edit the text as it is now",
    });
    await call("read_file", { path: "b.ts" });
    expect((await edit("b.ts")).ok).toBe(true);
    expect(readFileSync(join(ws.root, "b.ts"), "utf8")).toBe("const b = 20;\n");
    // A file written in the turn is known too.
    await call("write_file", { path: "c.ts", contents: "const c = 1;\n" });
    expect((await edit("c.ts")).ok).toBe(true);
  });

  it("replaces one exact occurrence and shows the edited lines", async () => {
    const ws = makeWorkspace({ "a.ts": "const a = 1;\nconst b = 2;\nconst c = 3;\n" });
    const result = await ws.call("edit_file", { path: "a.ts", old_string: "const b = 2;", new_string: "const b = 20;\nconst bb = 21;" });
    expect(result.ok).toBe(true);
    expect(result.filesChanged).toEqual(["a.ts"]);
    expect(result.content).toBe(
      "Edited a.ts: replaced 1 occurrence.\nLines 1-4 now read:\n     1\tconst a = 1;\n     2\tconst b = 20;\n     3\tconst bb = 21;\n     4\tconst c = 3;",
    );
    expect(readFileSync(join(ws.root, "a.ts"), "utf8")).toBe("const a = 1;\nconst b = 20;\nconst bb = 21;\nconst c = 3;\n");
  });

  it("takes `$` patterns in new_string literally", async () => {
    const ws = makeWorkspace({ "a.txt": "price: X\n" });
    await ws.call("edit_file", { path: "a.txt", old_string: "X", new_string: "$& $1 $$" });
    expect(readFileSync(join(ws.root, "a.txt"), "utf8")).toBe("price: $& $1 $$\n");
  });

  it("says how often old_string occurs when it is not unique, and replace_all replaces them all", async () => {
    const ws = makeWorkspace({ "a.txt": "foo\nbar\nfoo\nfoo\n" });
    const result = await ws.call("edit_file", { path: "a.txt", old_string: "foo", new_string: "baz" });
    expect(result).toMatchObject({ ok: false, errorKind: "not_unique" });
    expect(result.content).toContain("occurs 3 times in a.txt (at lines 1, 3, 4)");
    const all = await ws.call("edit_file", { path: "a.txt", old_string: "foo", new_string: "baz", replace_all: true });
    expect(all.content).toBe("Edited a.txt: replaced 3 occurrences.");
    expect(readFileSync(join(ws.root, "a.txt"), "utf8")).toBe("baz\nbar\nbaz\nbaz\n");
  });

  it("reports not_found with a whitespace hint or a line-number hint", async () => {
    const ws = makeWorkspace({ "a.py": "def f():\n    return 1\n" });
    const spaces = await ws.call("edit_file", { path: "a.py", old_string: "def f():\n  return 1", new_string: "x" });
    expect(spaces).toMatchObject({ ok: false, errorKind: "not_found" });
    expect(spaces.content).toContain("differs in whitespace");
    const numbered = await ws.call("edit_file", { path: "a.py", old_string: "     2\t    return 1", new_string: "x" });
    expect(numbered.content).toContain("line-number prefixes");
    const absent = await ws.call("edit_file", { path: "a.py", old_string: "nothing like this", new_string: "x" });
    expect(absent.content).toContain("old_string was not found in a.py: read the file again");
  });

  it("keeps a CRLF file's line endings when old_string uses LF", async () => {
    const ws = makeWorkspace({ "win.txt": "one\r\ntwo\r\nthree\r\n" });
    const result = await ws.call("edit_file", { path: "win.txt", old_string: "one\ntwo", new_string: "1\n2" });
    expect(result.content).toContain("the file's CRLF line endings were kept");
    expect(readFileSync(join(ws.root, "win.txt"), "utf8")).toBe("1\r\n2\r\nthree\r\n");
    await ws.call("edit_file", { path: "win.txt", old_string: "three\r\n", new_string: "3\r\n" });
    expect(readFileSync(join(ws.root, "win.txt"), "utf8")).toBe("1\r\n2\r\n3\r\n");
  });

  it("rejects identical strings, empty old_string, missing files, binary and non-UTF-8 files", async () => {
    const ws = makeWorkspace({ "a.txt": "a", bin: Buffer.from([0, 1, 2]), "latin1.txt": Buffer.from([0x63, 0x61, 0x66, 0xe9]) });
    expect(await ws.call("edit_file", { path: "a.txt", old_string: "a", new_string: "a" })).toMatchObject({
      errorKind: "invalid_arguments",
    });
    const empty = await ws.call("edit_file", { path: "a.txt", old_string: "", new_string: "b" });
    expect(empty).toMatchObject({ errorKind: "invalid_arguments", content: expect.stringContaining("old_string must not be empty") });
    expect(await ws.call("edit_file", { path: "missing.txt", old_string: "a", new_string: "b" })).toMatchObject({
      errorKind: "file_not_found",
    });
    expect(await ws.call("edit_file", { path: "bin", old_string: "a", new_string: "b" })).toMatchObject({ errorKind: "failed" });
    const latin1 = await ws.call("edit_file", { path: "latin1.txt", old_string: "caf", new_string: "CAF" });
    expect(latin1).toMatchObject({ errorKind: "failed", content: expect.stringContaining("not valid UTF-8") });
    expect(readFileSync(join(ws.root, "latin1.txt"))).toEqual(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
  });
});
