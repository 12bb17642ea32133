import { readFile } from "node:fs/promises";
import { describe, expect, it, vi } from "vitest";
import { makeWorkspace } from "./helpers/tool-workspace.js";

vi.mock("node:fs/promises", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs/promises")>();
  return { ...actual, readFile: vi.fn(actual.readFile) };
});

describe("write_file read-back", () => {
  it("is an error when the file reads back different from what was written", async () => {
    const ws = makeWorkspace();
    vi.mocked(readFile).mockResolvedValueOnce(Buffer.from("something else"));
    const result = await ws.call("write_file", { path: "a.txt", contents: "hello" });
    expect(result).toMatchObject({ ok: false, errorKind: "failed" });
    expect(result.content).toContain("a.txt was written but reading it back gave different contents");
  });

  it("also guards edit_file", async () => {
    const ws = makeWorkspace({ "a.txt": "hello" });
    vi.mocked(readFile)
      .mockImplementationOnce(async () => Buffer.from("hello"))
      .mockResolvedValueOnce(Buffer.from("stale"));
    const result = await ws.call("edit_file", { path: "a.txt", old_string: "hello", new_string: "bye" });
    expect(result).toMatchObject({ ok: false, errorKind: "failed", content: expect.stringContaining("reading it back") });
  });
});
