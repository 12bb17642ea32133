import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { BUILTIN_TOOLS, executeToolCall, toolSpecs } from "../src/tools/registry.js";
import { fitToBudget } from "../src/tools/truncate.js";
import { TOOL_NAMES, ToolError, type ToolDefinition } from "../src/tools/types.js";
import { makeWorkspace } from "./helpers/tool-workspace.js";

function fakeTool(run: () => Promise<string>): ToolDefinition {
  return {
    name: "fake",
    description: "test tool",
    effect: "read",
    schema: z.strictObject({}),
    run: async () => ({ content: await run() }),
  };
}

describe("toolSpecs", () => {
  it("describes every built-in tool with a JSON Schema of its arguments", () => {
    const specs = toolSpecs(BUILTIN_TOOLS);
    expect(specs.map((spec) => spec.name)).toEqual([...TOOL_NAMES]);
    for (const spec of specs) {
      expect(spec.description.length).toBeGreaterThan(40);
      expect(spec.parameters).toMatchObject({ type: "object", additionalProperties: false });
      expect(spec.parameters).not.toHaveProperty("$schema");
    }
    expect(specs.find((spec) => spec.name === "read_file")!.parameters).toMatchObject({
      required: ["path"],
      properties: { path: { type: "string" }, offset: { type: "integer", minimum: 1 }, limit: { type: "integer" } },
    });
    expect(specs.find((spec) => spec.name === "todo_write")!.parameters).toMatchObject({
      properties: { items: { type: "array", items: { properties: { status: { enum: ["pending", "in_progress", "completed"] } } } } },
    });
  });
});

describe("executeToolCall", () => {
  it("answers an unknown tool with tool_not_found and the available tools", async () => {
    const ws = makeWorkspace();
    expect(await ws.call("delete_everything", {})).toEqual({
      ok: false,
      errorKind: "tool_not_found",
      content: `unknown tool "delete_everything"; available tools: ${TOOL_NAMES.join(", ")}`,
    });
  });

  it("answers bad arguments with one readable line", async () => {
    const ws = makeWorkspace();
    const result = await ws.call("read_file", { path: 3, offest: 2 });
    expect(result).toEqual({
      ok: false,
      errorKind: "invalid_arguments",
      content: 'invalid arguments for read_file: path: Invalid input: expected string, received number; Unrecognized key: "offest"',
    });
    expect((await ws.call("shell", undefined)).content).toBe(
      "invalid arguments for shell: Invalid input: expected object, received undefined",
    );
  });

  it("passes a ToolError's kind through and turns any other exception into one line of `failed`", async () => {
    const ws = makeWorkspace();
    const typed = fakeTool(async () => {
      throw new ToolError("not_unique", "twice");
    });
    expect(await ws.call("fake", {}, [typed])).toEqual({ ok: false, errorKind: "not_unique", content: "twice" });
    const crashing = fakeTool(async () => {
      throw new TypeError("cannot read x\n    at somewhere (file.js:1:1)");
    });
    expect(await ws.call("fake", {}, [crashing])).toEqual({ ok: false, errorKind: "failed", content: "fake failed: cannot read x" });
    const weird = fakeTool(async () => {
      throw "a string";
    });
    expect(await ws.call("fake", {}, [weird])).toEqual({ ok: false, errorKind: "failed", content: "fake failed: a string" });
  });

  it("does not start a call that is already cancelled", async () => {
    const ws = makeWorkspace();
    const controller = new AbortController();
    controller.abort();
    const result = await executeToolCall(
      { id: "1", name: "shell", args: { command: "touch ran" } },
      { ...ws.ctx, signal: controller.signal },
    );
    expect(result).toEqual({ ok: false, errorKind: "failed", content: "cancelled before it started" });
  });

  it("cuts a long result to the context's budget and saves the full text where read_file can read it", async () => {
    const ws = makeWorkspace();
    const full = Array.from({ length: 5_000 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
    const result = await executeToolCall({ id: "1", name: "fake", args: {} }, { ...ws.ctx, resultBudgetChars: 1_000 }, [
      fakeTool(async () => full),
    ]);
    expect(result.ok).toBe(true);
    expect(result.content.length).toBeLessThan(1_300);
    expect(readFileSync(result.artifact!, "utf8")).toBe(full);
    const relative = result.artifact!.slice(ws.root.length + 1);
    expect(relative).toMatch(/^\.loopgraph\/artifacts\/thread-1\/fake-\d{8}T\d{6}-[0-9a-f]{8}\.txt$/);
    const read = await ws.call("read_file", { path: relative, offset: 4_999 });
    expect(read.content).toBe("  4999\tline 4999\n  5000\tline 5000\n(lines 4999-5000 of 5000)");
  });

  it("cuts long error messages too", async () => {
    const ws = makeWorkspace();
    const noisy = fakeTool(async () => {
      throw new ToolError("timeout", "x\n".repeat(40_000));
    });
    const result = await ws.call("fake", {}, [noisy]);
    expect(result).toMatchObject({ ok: false, errorKind: "timeout" });
    expect(result.content.length).toBeLessThan(31_000);
    expect(result.artifact).toBeDefined();
  });

  it("returns filesChanged and todos", async () => {
    const ws = makeWorkspace();
    const todos = [
      { content: "write the parser", status: "completed" },
      { content: "test it", status: "in_progress" },
      { content: "document it", status: "pending" },
    ];
    expect(await ws.call("todo_write", { items: todos })).toEqual({
      ok: true,
      content: "Todo list updated (1/3 completed):\n[x] write the parser\n[>] test it\n[ ] document it",
      todos,
    });
    expect(await ws.call("todo_write", { items: [{ content: "x", status: "done" }] })).toMatchObject({ errorKind: "invalid_arguments" });
    expect((await ws.call("write_file", { path: "a.txt", contents: "" })).filesChanged).toEqual(["a.txt"]);
  });

  it("returns a finding (save_finding), trimmed, at most 600 characters", async () => {
    const ws = makeWorkspace();
    expect(await ws.call("save_finding", { finding: "  the parser is in src/parse.ts  " })).toEqual({
      ok: true,
      content: "Finding saved.",
      finding: "the parser is in src/parse.ts",
    });
    expect(await ws.call("save_finding", { finding: "x".repeat(601) })).toMatchObject({ errorKind: "invalid_arguments" });
    expect(await ws.call("save_finding", { finding: " " })).toMatchObject({ errorKind: "invalid_arguments" });
  });
});

describe("fitToBudget", () => {
  const ctx = () => ({ ...makeWorkspace().ctx, resultBudgetChars: 100 });

  it("leaves a text within the budget alone", async () => {
    expect(await fitToBudget("short", ctx(), "t")).toEqual({ content: "short" });
  });

  it("cuts at line boundaries and names exactly the lines cut", async () => {
    const text = Array.from({ length: 100 }, (_, i) => `l${i + 1}`).join("\n") + "\n";
    const { content, artifact } = await fitToBudget(text, ctx(), "t");
    const [head, tail] = content.split(/\n\[\.\.\. .*\.\.\.\]\n/);
    const marker = /lines (\d+)-(\d+) of 100/.exec(content)!;
    const headLines = head!.split("\n");
    const tailLines = tail!.split("\n").filter(Boolean);
    expect(headLines.at(-1)).toBe(`l${Number(marker[1]) - 1}`);
    expect(tailLines[0]).toBe(`l${Number(marker[2]) + 1}`);
    expect(tailLines.at(-1)).toBe("l100");
    const cutBytes = Number(/(\d+) bytes cut/.exec(content)![1]);
    expect(cutBytes).toBe(Buffer.byteLength(text) - Buffer.byteLength(`${head}\n`) - Buffer.byteLength(tail!));
    expect(readFileSync(artifact!, "utf8")).toBe(text);
  });

  it("points to a file that already holds the full output instead of writing one", async () => {
    const context = ctx();
    const full = join(context.artifactsDir, "full.txt");
    mkdirSync(context.artifactsDir, { recursive: true });
    writeFileSync(full, "a\nb\nc\n");
    expect(await fitToBudget("a\n[...]\nc\n", context, "t", { file: full })).toEqual({
      content: "a\n[...]\nc\n[full output (6 bytes) saved in .loopgraph/artifacts/thread-1/full.txt]",
      artifact: full,
    });
    expect(readdirSync(context.artifactsDir)).toEqual(["full.txt"]);
  });

  it("cuts inside a single huge line and counts it as cut", async () => {
    const { content } = await fitToBudget("z".repeat(1_000), ctx(), "t");
    expect(content).toMatch(
      /^z{50}\n\[\.\.\. 900 bytes cut here \(lines 1-1 of 1\); the full output is saved in \.loopgraph\/artifacts\/thread-1\/t-.*\.txt: read it with read_file, e\.g\. offset 1 \.\.\.\]\nz{50}$/,
    );
  });
});
