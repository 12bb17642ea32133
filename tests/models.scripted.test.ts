import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, ModelError } from "../src/errors.js";
import { createModel, formatScript, parseScript, responseFromMessage, type ScriptedResponse } from "../src/models/index.js";
import { messageFromRecord, recordedOutput } from "../src/models/recorded.js";
import { estimateInputTokens } from "../src/models/tokens.js";
import { createTempDir } from "./helpers/workspace.js";

// Made now, not in a beforeAll: describe bodies write their scripts here while the tests are collected.
const { path: dir, remove } = createTempDir("loopgraph-scripted-");
afterAll(remove);

function scriptedModel(name: string, yaml: string) {
  writeFileSync(join(dir, name), yaml);
  return createModel(`scripted:${name}`, { cwd: dir, env: {} });
}

const REVIEW_SCRIPT = `
responses:
  - node: coder
    content: "I will create the file."
    tool_calls:
      - { name: write_file, args: { path: hello.js, contents: "console.log('hi')\\n" } }
  - node: judge
    content: '{"decision": "terminate", "reason": "done"}'
  - content: "Anyone may take this one."
  - node: coder
    content: "Done."
`;

const messages = [new HumanMessage("Create hello.js")];

describe("scripted model: choosing responses", () => {
  const model = scriptedModel("review.yaml", REVIEW_SCRIPT);

  it("takes the first unconsumed response for the calling node, in file order", async () => {
    expect((await model.call(messages, { node: "coder" })).scriptedIndex).toBe(0);
    expect((await model.call(messages, { node: "judge" })).scriptedIndex).toBe(1);
    expect((await model.call(messages, { node: "coder", consumed: [0] })).scriptedIndex).toBe(2);
    expect((await model.call(messages, { node: "coder", consumed: [0, 2] })).scriptedIndex).toBe(3);
    expect((await model.call(messages, { node: "judge", consumed: [1] })).scriptedIndex).toBe(2);
  });

  it("fails with a clear error when no response is left for the node", async () => {
    const call = model.call(messages, { node: "coder", consumed: [0, 2, 3] });
    await expect(call).rejects.toThrow(ModelError);
    await expect(call).rejects.toMatchObject({
      kind: "exhausted",
      message: 'scripted model exhausted: no response left for node "coder" in review.yaml (3 of 4 used)',
    });
  });

  it("returns deterministic message and tool-call ids with the scripted args", async () => {
    const first = await model.call(messages, { node: "coder" });
    expect(first.message.id).toBe("scripted-0");
    expect(first.message.content).toBe("I will create the file.");
    expect(first.message.tool_calls).toEqual([
      { id: "call_0_0", name: "write_file", args: { path: "hello.js", contents: "console.log('hi')\n" }, type: "tool_call" },
    ]);
    const again = await model.call(messages, { node: "coder" });
    expect(again.message.id).toBe(first.message.id);
    expect(again.message.tool_calls).toEqual(first.message.tool_calls);
    expect((await model.call(messages, { node: "judge" })).message.tool_calls).toEqual([]);
  });

  it("streams the content in several pieces and estimates its tokens at four characters each", async () => {
    const tokens: string[] = [];
    const longModel = scriptedModel("long.yaml", 'responses:\n  - content: "one two three four five six seven eight nine"\n');

    const result = await longModel.call(messages, { node: "coder", onToken: (t) => tokens.push(t) });

    expect(tokens.length).toBeGreaterThan(1);
    expect(tokens.join("")).toBe("one two three four five six seven eight nine");
    expect(result.usage.inputTokens).toBe(estimateInputTokens(messages));
    // 44 characters: 11 tokens by the estimate (the o200k encoding would count 9).
    expect(result.usage.outputTokens).toBe(11);
    expect(result.message.usage_metadata).toMatchObject({ output_tokens: 11 });
  });

  it("names the absolute script path in its spec", () => {
    expect(model.spec).toBe(`scripted:${join(dir, "review.yaml")}`);
  });
});

describe("scripted model: delay_ms", () => {
  const model = scriptedModel("slow.yaml", "responses:\n  - node: coder\n    delay_ms: 300\n    content: Done.\n");

  it("takes delay_ms to answer", async () => {
    const started = Date.now();
    const result = await model.call(messages, { node: "coder" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(result.message.content).toBe("Done.");
  });

  it("stops waiting when aborted, with the abort reason", async () => {
    const slower = scriptedModel("slower.yaml", "responses:\n  - node: coder\n    delay_ms: 30000\n    content: Done.\n");
    const controller = new AbortController();
    const reason = new Error("stop requested");
    setTimeout(() => controller.abort(reason), 30);
    const started = Date.now();

    await expect(slower.call(messages, { node: "coder", signal: controller.signal })).rejects.toBe(reason);
    // Well before the 30 s delay, with room for a busy machine.
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe("scripted model: wait_for", () => {
  it("answers only once the file exists (relative to the script's folder); an abort ends the wait", async () => {
    const model = scriptedModel("gated.yaml", "responses:\n  - node: coder\n    wait_for: gate-coder\n    content: Done.\n");
    const gate = join(dir, "gate-coder");
    let answered = false;
    const call = model.call(messages, { node: "coder" }).then((result) => ((answered = true), result));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(answered).toBe(false);
    writeFileSync(gate, "");
    expect((await call).message.content).toBe("Done.");
    rmSync(gate);

    const controller = new AbortController();
    const reason = new Error("stop requested");
    setTimeout(() => controller.abort(reason), 30);
    await expect(model.call(messages, { node: "coder", signal: controller.signal })).rejects.toBe(reason);
  });
});

describe("scripted model: invalid files", () => {
  const cases: [string, string, string][] = [
    [
      "missing tool name",
      "responses:\n  - content: a\n  - content: b\n    tool_calls:\n      - args: { path: x }\n",
      "bad.yaml:5:9: responses[1].tool_calls[0]: name is required",
    ],
    [
      "unknown key",
      "responses:\n  - node: coder\n    contnet: hi\n",
      'bad.yaml:3:5: responses[0]: unknown key "contnet" (allowed: node, task, delay_ms, wait_for, content, tool_calls)',
    ],
    ["wrong type", "responses:\n  - content: 42\n", "bad.yaml:2:14: responses[0]: content must be a string (got number)"],
    [
      "args not a mapping",
      "responses:\n  - tool_calls: [{ name: t, args: [1] }]\n",
      "bad.yaml:2:35: responses[0].tool_calls[0]: args must be a mapping or a string (got a list)",
    ],
    ["fractional delay", "responses:\n  - delay_ms: 1.5\n", "bad.yaml:2:15: responses[0]: delay_ms must be a whole number (got number)"],
    ["negative delay", "responses:\n  - delay_ms: -1\n", "bad.yaml:2:15: responses[0]: delay_ms must be at least 0"],
    ["empty node", 'responses:\n  - node: ""\n', "bad.yaml:2:11: responses[0]: node must not be empty"],
    [
      "task not a regular expression",
      'responses:\n  - node: coder\n    task: "fix("\n',
      "bad.yaml:3:11: responses[0]: task: invalid regular expression /fix(/: Unterminated group",
    ],
    ["no responses key", "response: []\n", 'bad.yaml:1:1: unknown key "response" (allowed: responses) (and 1 more problem)'],
    ["empty file", "", 'bad.yaml: expected a mapping with a "responses" list'],
    ["responses not a list", "responses: 3\n", "bad.yaml:1:12: responses must be a list (got number)"],
    ["list item not a mapping", "responses:\n  - just text\n", "bad.yaml:2:5: responses[0] must be a mapping (got string)"],
    ["yaml syntax", "responses:\n  - content: [unclosed\n", "bad.yaml:3:1:"],
  ];

  it.each(cases)("%s", (_name, yaml, expected) => {
    const load = () => scriptedModel("bad.yaml", yaml);
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(expected);
  });

  it("a script in JSON reads as its YAML form, and its problems are reported with their position as in YAML", () => {
    const responses = [
      { node: "coder", content: "a" },
      { node: "judge", delay_ms: 5, tool_calls: [{ name: "write_file", args: { path: "x", contents: "y" } }] },
    ];
    expect(parseScript(JSON.stringify({ responses }), "x.json")).toEqual(parseScript(formatScript(responses), "x.yaml"));
    expect(() => parseScript('{"responses": [{"node": "coder", "contnet": "hi"}]}', "bad.json")).toThrow(
      'bad.json:1:34: responses[0]: unknown key "contnet" (allowed: node, task, delay_ms, wait_for, content, tool_calls)',
    );
    expect(() => parseScript('{"responses": [{"content": "a"}', "bad.json")).toThrow(/^bad\.json:1:\d+: /);
  });

  it("reports a missing file with the path it looked for", () => {
    expect(() => createModel("scripted:nope.yaml", { cwd: dir, env: {} })).toThrow(
      `cannot read scripted model file nope.yaml: no such file (looked for ${join(dir, "nope.yaml")})`,
    );
  });

  it("puts every problem on one line", () => {
    expect(() => scriptedModel("bad.yaml", "responses:\n  - content: [unclosed\n")).toThrow(/^[^\n]+$/);
  });
});

describe("formatScript", () => {
  const responses: ScriptedResponse[] = [
    {
      node: "coder",
      content: "Line one\nline two: with 'quotes' and \"double\" # not a comment\n",
      tool_calls: [
        { name: "write_file", args: { path: "hello.js", contents: "console.log('hi')\n", mode: 420 } },
        { name: "run", args: { argv: ["npm", "test"], env: { CI: "true" }, dry: false, nothing: null } },
      ],
    },
    { node: "judge", task: "^Fix (sum|count)\\b", content: '{"decision": "terminate", "reason": "done"}' },
    { delay_ms: 2000, content: "  leading spaces, trailing spaces  " },
    { node: "coder", content: "", tool_calls: [{ name: "list_files", args: {} }] },
    { content: "123" },
    { content: "ünïcödé — 中文 — emoji 🚀\ttab" },
  ];

  it("round-trips through parseScript", () => {
    expect(parseScript(formatScript(responses), "x.yaml")).toEqual(responses);
  });

  it("writes a file the scripted model plays back", async () => {
    const model = scriptedModel("exported.yaml", formatScript(responses));
    const result = await model.call(messages, { node: "coder" });
    expect(result.message.content).toBe(responses[0]!.content);
    expect(result.message.tool_calls?.map((c) => c.args)).toEqual(responses[0]!.tool_calls!.map((c) => c.args));
  });

  it("records model answers as responses", () => {
    const answer = new AIMessage({
      content: "Calling a tool.",
      tool_calls: [{ id: "call_xyz", name: "read_file", args: { path: "a.txt" }, type: "tool_call" }],
    });
    const recorded = [responseFromMessage("coder", answer), responseFromMessage("judge", new AIMessage("ok"))];

    expect(recorded).toEqual([
      { node: "coder", content: "Calling a tool.", tool_calls: [{ name: "read_file", args: { path: "a.txt" } }] },
      { node: "judge", content: "ok" },
    ]);
    expect(parseScript(formatScript(recorded), "x.yaml")).toEqual(recorded);
  });

  it("keeps a call whose arguments are not one JSON object as the same invalid call, through the record and an exported script", async () => {
    const model = scriptedModel(
      "invalid-args.yaml",
      `responses:
  - tool_calls:
      - { name: write_file, args: '{"path":"a.txt","contents":"hello wor' }
      - { name: read_file, args: '{"path":"a.txt"}' }
      - { name: grep, args: '["x"]' }
`,
    );
    const { message } = await model.call([new HumanMessage("go")], { node: "coder" });
    expect(message.tool_calls).toMatchObject([{ id: "call_0_1", name: "read_file", args: { path: "a.txt" } }]);
    expect(message.invalid_tool_calls).toMatchObject([
      { id: "call_0_0", name: "write_file", args: '{"path":"a.txt","contents":"hello wor', error: expect.any(String) },
      { id: "call_0_2", name: "grep", args: '["x"]', error: "they are an array, not an object" },
    ]);

    // A recorded replay answers with the same calls; --export-script writes a script that makes them again.
    const replayed = messageFromRecord(JSON.parse(JSON.stringify(recordedOutput(message, { inputTokens: 1, outputTokens: 1 }))));
    expect(replayed.tool_calls).toEqual(message.tool_calls);
    expect(replayed.invalid_tool_calls).toEqual(message.invalid_tool_calls);
    const exported = scriptedModel("invalid-args-exported.yaml", formatScript([responseFromMessage("coder", replayed)]));
    const again = (await exported.call([new HumanMessage("go")], { node: "coder" })).message;
    expect(again.tool_calls?.map(({ name, args }) => ({ name, args }))).toEqual([{ name: "read_file", args: { path: "a.txt" } }]);
    expect(again.invalid_tool_calls?.map(({ name, args, error }) => ({ name, args, error }))).toEqual(
      message.invalid_tool_calls!.map(({ name, args, error }) => ({ name, args, error })),
    );
  });
});
