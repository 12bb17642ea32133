import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { renderJson, renderJUnit, renderMarkdown, renderText } from "../src/cli/eval-report.js";
import { buildReport, taskPasses } from "../src/eval/report.js";
import { evalReportSchema, renderEvalReportJsonSchema } from "../src/eval/report-schema.js";
import { difference, wilson } from "../src/eval/stats.js";
import type { EvalRecord, TrialOutcome, TrialResult } from "../src/eval/types.js";
import { parseXml, type XmlElement } from "./helpers/xml.js";

/** Text a hostile model or repository could make a trial report: terminal escapes, markup, a bidi override, XML's forbidden characters. */
const HOSTILE = 'exit 1: <b>"x" & y</b> ]]> \u001b[2J\u202e|`rm`| \u0000\ufffe';

const TASKS = [
  { id: "fix-add", tags: ["js"] },
  { id: "fix-sub", tags: ["js"] },
  { id: "fix-py", tags: ["python"] },
  { id: "flaky", tags: ["js"] },
  { id: "slow", tags: ["js", "slow"] },
];

const RECORD: EvalRecord = {
  id: "e-0a1b2c3d",
  suiteFile: "/suites/starter.yaml",
  suiteName: "starter",
  suiteHash: "h",
  variants: [
    { label: "A", graph: "coder", graphFile: "/g/coder.yaml", model: "scripted:/s/a.yaml" },
    { label: "B", graph: "coder", graphFile: "/g/coder.yaml", model: "openai:gpt-4o" },
    { label: "C", graph: "evil\u001b]0;pwned\u0007<i>", graphFile: "/g/evil.yaml" },
  ],
  tasks: TASKS,
  repeat: 2,
  concurrency: 2,
  status: "stopped",
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:10:00.000Z",
};

function trial(task: string, variant: string, repetition: number, outcome: TrialOutcome, more: Partial<TrialResult> = {}): TrialResult {
  const ran = outcome !== "skipped";
  return {
    task,
    variant,
    repetition,
    threadId: `t-${variant}-${task}-${repetition}`,
    outcome,
    rounds: ran ? 2 : 0,
    tokens: ran ? { inputTokens: 1000, outputTokens: 100 } : { inputTokens: 0, outputTokens: 0 },
    wallMs: ran ? 1500 : 0,
    finishedAt: "2026-01-01T00:05:00.000Z",
    ...(outcome !== "passed" && { reason: `${outcome} reason` }),
    ...more,
  };
}

/** 3 variants × 5 tasks × 2 repetitions: every outcome, a tie, skipped tasks and pending trials (A's slow#2, most of C's). */
const TRIALS: TrialResult[] = [
  trial("fix-add", "A", 1, "passed", { rounds: 1 }),
  trial("fix-add", "A", 2, "passed", { rounds: 1 }),
  trial("fix-sub", "A", 1, "check-failed", { reason: HOSTILE, checkOutput: `FAIL sub.test.js\n${HOSTILE}` }),
  trial("fix-sub", "A", 2, "passed"),
  trial("fix-py", "A", 1, "skipped", { reason: "python3 is not on PATH" }),
  trial("fix-py", "A", 2, "skipped", { reason: "python3 is not on PATH" }),
  trial("flaky", "A", 1, "run-failed", { reason: "model error: 500" }),
  trial("flaky", "A", 2, "limit", { rounds: 5, reason: "max_rounds 5 reached" }),
  trial("slow", "A", 1, "timeout", { rounds: 3, reason: "took longer than 60 s" }),
  trial("fix-add", "B", 1, "passed"),
  trial("fix-add", "B", 2, "passed"),
  trial("fix-sub", "B", 1, "passed"),
  trial("fix-sub", "B", 2, "passed"),
  trial("fix-py", "B", 1, "skipped", { reason: "python3 is not on PATH" }),
  trial("fix-py", "B", 2, "skipped", { reason: "python3 is not on PATH" }),
  trial("flaky", "B", 1, "passed"),
  trial("flaky", "B", 2, "check-failed"),
  trial("slow", "B", 1, "passed"),
  trial("slow", "B", 2, "passed"),
  trial("fix-add", "C", 1, "check-failed"),
  trial("fix-add", "C", 2, "check-failed"),
  trial("fix-sub", "C", 1, "passed"),
];

const PRICES = { "openai:gpt-4o": { input: 2.5, output: 10 } };
const REPORT = buildReport(RECORD, TRIALS, { tasks: TASKS, prices: PRICES });

describe("the report's figures", () => {
  it("per variant: trials run, passed, the Wilson interval, means over the trials run, cost only where the model has a price", () => {
    const [a, b, c] = REPORT.variants;
    expect(a).toEqual({
      label: "A",
      graph: "coder",
      model: "scripted:/s/a.yaml",
      run: 7,
      passed: 3,
      passRate: { rate: 3 / 7, low: wilson(3, 7).low, high: wilson(3, 7).high },
      rounds: { total: 1 + 1 + 2 + 2 + 2 + 5 + 3, mean: 16 / 7 },
      inputTokens: { total: 7000, mean: 1000 },
      outputTokens: { total: 700, mean: 100 },
      cost: { total: null, unknown: "a scripted model has no price" },
      wallMs: { total: 10_500, mean: 1500 },
      failures: { "check-failed": 1, "run-failed": 1, limit: 1, timeout: 1 },
      skipped: 2,
      pending: 1,
    });
    expect(b).toMatchObject({
      run: 8,
      passed: 7,
      skipped: 2,
      pending: 0,
      failures: { "check-failed": 1, "run-failed": 0, limit: 0, timeout: 0 },
    });
    // 8 trials of 1000 tokens in at 2.5 and 100 out at 10 per million.
    expect(b!.cost).toEqual({ total: expect.closeTo(0.028, 12), mean: expect.closeTo(0.0035, 12) });
    expect(c).toMatchObject({
      model: null,
      run: 3,
      passed: 1,
      pending: 7,
      cost: { total: null, unknown: expect.stringMatching(/graph's own models/) },
    });
    expect(REPORT).toMatchObject({ trials: 30, pending: 8 });
  });

  it("without a price for the variant's model, its cost is unknown and says why, never 0", () => {
    const report = buildReport(RECORD, TRIALS, { tasks: TASKS });
    expect(report.variants[1]!.cost).toEqual({ total: null, unknown: "no price for openai:gpt-4o in the config's prices" });
  });

  it("per task: each repetition's outcome and thread, pending where no trial finished, and the majority rule", () => {
    const slow = REPORT.tasks.find((task) => task.id === "slow")!;
    expect(slow.tags).toEqual(["js", "slow"]);
    expect(slow.variants[0]).toEqual({
      label: "A",
      trials: [
        {
          repetition: 1,
          outcome: "timeout",
          threadId: "t-A-slow-1",
          reason: "took longer than 60 s",
          checkOutput: null,
          rounds: 3,
          inputTokens: 1000,
          outputTokens: 100,
          wallMs: 1500,
        },
        { repetition: 2, outcome: "pending", threadId: null },
      ],
      passes: false,
    });
    const passes = Object.fromEntries(REPORT.tasks.map((task) => [task.id, task.variants.map((variant) => variant.passes)]));
    expect(passes).toEqual({
      "fix-add": [true, true, false],
      // A tie (1 of 2) does not pass.
      "fix-sub": [false, true, true],
      // All skipped, or all pending: no outcome.
      "fix-py": [null, null, null],
      flaky: [false, false, null],
      slow: [false, true, null],
    });
    expect(
      taskPasses([
        {
          repetition: 1,
          outcome: "passed",
          threadId: "t",
          reason: null,
          checkOutput: null,
          rounds: 0,
          inputTokens: 0,
          outputTokens: 0,
          wallMs: 0,
        },
      ]),
    ).toBe(true);
  });

  it("reads the store's trials as they are: a result where there is one, else pending with its thread", () => {
    const finished = new Map(TRIALS.map((trial) => [`${trial.task} ${trial.variant} ${trial.repetition}`, trial]));
    const stored = TASKS.flatMap((task) =>
      RECORD.variants.flatMap(({ label }) =>
        [1, 2].map((repetition) => {
          const result = finished.get(`${task.id} ${label} ${repetition}`);
          return { task: task.id, variant: label, repetition, threadId: `t-${label}-${task.id}-${repetition}`, ...(result && { result }) };
        }),
      ),
    );
    const report = buildReport(RECORD, stored, { tasks: TASKS, prices: PRICES });
    expect(report.tasks[4]!.variants[0]!.trials[1]).toEqual({ repetition: 2, outcome: "pending", threadId: "t-A-slow-2" });
    const withoutThreads = JSON.parse(
      JSON.stringify(report).replace(/"outcome":"pending","threadId":"[^"]+"/g, '"outcome":"pending","threadId":null'),
    );
    expect(withoutThreads).toEqual(REPORT);
  });

  it("compares each later variant with the first: Newcombe's interval and the tasks gained and lost", () => {
    const ab = difference({ passed: 3, n: 7 }, { passed: 7, n: 8 });
    expect(REPORT.comparisons).toEqual([
      { base: "A", variant: "B", delta: ab.delta, low: ab.low, high: ab.high, gained: ["fix-sub", "slow"], lost: [] },
      { base: "A", variant: "C", ...difference({ passed: 3, n: 7 }, { passed: 1, n: 3 }), gained: ["fix-sub"], lost: ["fix-add"] },
    ]);
  });

  it("shows a trial of a task the suite no longer lists after the suite's, and leaves out a variant or repetition the eval does not have", () => {
    const stray = [
      ...TRIALS,
      { ...TRIALS[0]!, task: "gone" },
      { ...TRIALS[0]!, variant: "Z" },
      { ...TRIALS[0]!, task: "slow", repetition: 3 },
    ];
    const report = buildReport(RECORD, stray, { tasks: TASKS, prices: PRICES });
    expect(report.tasks.map((task) => task.id)).toEqual(["fix-add", "fix-sub", "fix-py", "flaky", "slow", "gone"]);
    expect(report.variants.map((variant) => variant.run)).toEqual([8, 8, 3]);
    expect(report.trials).toBe(36);
  });
});

describe("the text format", () => {
  const text = renderText(REPORT, { color: false, width: 120, unicode: true });
  const lines = text.split("\n");

  it("has a line per variant, the comparisons, the matrix and each trial that did not pass, all printable", () => {
    expect(lines[0]).toBe("eval e-0a1b2c3d: starter (stopped)  3 variants × 2 repetitions, 30 trials, 8 pending");
    const a = lines.indexOf("A  coder (scripted:/s/a.yaml)");
    expect(lines[a + 1]).toBe("   3/7 passed 43% [16%–75%]  rounds 2.3  tokens 7.0k in / 700 out  cost unknown  time 10.5 s");
    expect(lines).toContain(
      "   failures: check-failed 1, run-failed 1, limit 1, timeout 1  skipped 2  pending 1  cost unknown: a scripted model has no price",
    );
    const b = lines.indexOf("B  coder (openai:gpt-4o)");
    expect(lines[b + 1]).toBe("   7/8 passed 88% [53%–98%]  rounds 2.0  tokens 8.0k in / 800 out  cost 0.0280  time 12.0 s");
    const c = lines.indexOf("C  evil\\x1b]0;pwned\\x07<i>");
    expect(lines[c + 1]).toBe("   1/3 passed 33% [6%–79%]  rounds 2.0  tokens 3.0k in / 300 out  cost unknown  time 4.5 s");
    const comparison = lines.indexOf("B − A: +45 points [−3 to +74]");
    expect(lines.slice(comparison, comparison + 3)).toEqual(["B − A: +45 points [−3 to +74]", "  gained: fix-sub, slow", "  lost: none"]);
    expect(lines).toContain("C − A: −10 points [−52 to +44]");
    const matrix = lines.indexOf("task     A   B   C");
    expect(lines.slice(matrix + 1, matrix + 7)).toEqual([
      "fix-add  ✓✓  ✓✓  ✗✗",
      "fix-sub  ✗✓  ✓✓  ✓·",
      "fix-py   ss  ss  ··",
      "flaky    !L  ✓✗  ··",
      "slow     T·  ✓✓  ··",
      "✓ passed  ✗ check-failed  ! run-failed  L limit  T timeout  s skipped  · pending",
    ]);
    expect(lines).toContain('A  fix-sub#1  check-failed: exit 1: <b>"x" & y</b> ]]> \\x1b[2J\\u202e|`rm`| \\x00\ufffe');
    expect(lines).toContain("A  slow#1  timeout: took longer than 60 s");
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
  });

  it("is plain ASCII without UTF-8 (but for what a trial wrote), colored only when asked", () => {
    const ascii = renderText(REPORT, { color: false, width: 120 });
    expect(ascii).toContain("3/7 passed 43% [16%-75%]");
    expect(ascii).toContain("B - A: +45 points [-3 to +74]");
    expect(ascii).toContain("fix-sub  x+  ++  +.");
    const [, hostile] = ascii.split("not passed\n");
    expect(ascii.replace(hostile!, "")).toMatch(/^[\n\x20-\x7e]*$/);
    expect(ascii).not.toContain("\u001b[");
    expect(renderText(REPORT, { color: true, width: 120 })).toContain("\u001b[32m✓\u001b[39m");
  });

  it("cuts a reason and a variant's name to the width", () => {
    const narrow = renderText(REPORT, { color: false, width: 60 }).split("\n");
    expect(narrow).toContain('A  fix-sub#1  check-failed: exit 1: <b>"x" & y</b> ]]> \\x...');
    expect(narrow.find((line) => line.startsWith("A  fix-sub#1"))).toHaveLength(60);
    const long = renderText(
      { ...REPORT, variants: [{ ...REPORT.variants[0]!, model: `scripted:/${"very-long-folder/".repeat(5)}a.yaml` }] },
      { color: false, width: 60 },
    );
    expect(long.split("\n")).toContain("A  coder (scripted:/very-long-folder/very-long-folder/ver...");
  });
});

describe("the JSON format", () => {
  it("is the report as its schema describes it, committed as schema/eval-report.schema.json", () => {
    const committed = readFileSync(new URL("../schema/eval-report.schema.json", import.meta.url), "utf8");
    expect(committed).toBe(renderEvalReportJsonSchema());
    const json = renderJson(REPORT);
    const parsed = JSON.parse(json);
    expect(parsed.format).toBe("loopgraph-eval-report/1");
    expect(evalReportSchema.parse(parsed)).toEqual(REPORT);
    // An empty eval: null rates and means, and still valid.
    const empty = JSON.parse(renderJson(buildReport(RECORD, [], { tasks: TASKS })));
    expect(empty.variants[0]).toMatchObject({ run: 0, passRate: { rate: null, low: 0, high: 1 }, rounds: { total: 0, mean: null } });
    expect(empty.comparisons[0]).toMatchObject({ delta: null, low: -1, high: 1 });
    expect(evalReportSchema.safeParse(empty).success).toBe(true);
    // The check can fail: a field the schema does not have.
    expect(evalReportSchema.safeParse({ ...parsed, extra: 1 }).success).toBe(false);
  });

  it("is safe to print: the C1 and bidirectional controls escaped, the value unchanged", () => {
    const json = renderJson(REPORT);
    expect(json).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
    expect(JSON.parse(json).tasks[1].variants[0].trials[0].reason).toBe(HOSTILE);
  });
});

describe("the JUnit format", () => {
  const root = parseXml(renderJUnit(REPORT));
  const count = (element: XmlElement, key: string) => Number(element.attributes[key]);

  it("is well-formed, with a testsuite per variant and the attributes the Surefire schema requires", () => {
    expect(root.name).toBe("testsuites");
    expect(root.children.map((suite) => suite.attributes.name)).toEqual([
      "A: coder (scripted:/s/a.yaml)",
      "B: coder (openai:gpt-4o)",
      "C: evil\\x1b]0;pwned\\x07<i>",
    ]);
    for (const suite of root.children) {
      expect(suite.name).toBe("testsuite");
      expect(Object.keys(suite.attributes).sort()).toEqual(["errors", "failures", "name", "skipped", "tests", "time"]);
      const cases = suite.children;
      expect(count(suite, "tests")).toBe(cases.length);
      const inner = (kind: string) => cases.filter((testcase) => testcase.children.some((child) => child.name === kind)).length;
      expect([count(suite, "failures"), count(suite, "errors"), count(suite, "skipped")]).toEqual([
        inner("failure"),
        inner("error"),
        inner("skipped"),
      ]);
      for (const testcase of cases) {
        expect(testcase.name).toBe("testcase");
        expect(Object.keys(testcase.attributes).sort()).toEqual(["classname", "name", "time"]);
        expect(testcase.attributes.time).toMatch(/^\d+\.\d{3}$/);
      }
    }
    expect(["tests", "failures", "errors", "skipped"].map((key) => count(root, key))).toEqual([22, 6, 1, 4]);
    expect(root.attributes.time).toBe("27.000");
  });

  it("has a testcase per finished trial: a failure with the reason and the check's output, an error for a failed run, skipped; pending ones left out", () => {
    const a = root.children[0]!;
    expect(a.children.map((testcase) => testcase.attributes.name)).toEqual([
      "fix-add#1",
      "fix-add#2",
      "fix-sub#1",
      "fix-sub#2",
      "fix-py#1",
      "fix-py#2",
      "flaky#1",
      "flaky#2",
      "slow#1",
    ]);
    expect(a.children[0]).toEqual({
      name: "testcase",
      attributes: { name: "fix-add#1", classname: "A coder", time: "1.500" },
      children: [],
      text: "",
    });
    const shown = 'exit 1: <b>"x" & y</b> ]]> \\x1b[2J\\u202e|`rm`| \\x00\ufffd';
    expect(a.children[2]!.children).toEqual([
      {
        name: "failure",
        attributes: { type: "check-failed", message: shown },
        children: [],
        text: `${shown}\n\nFAIL sub.test.js\n${shown}`,
      },
    ]);
    expect(a.children[4]!.children).toEqual([
      { name: "skipped", attributes: { message: "python3 is not on PATH" }, children: [], text: "" },
    ]);
    expect(a.children[6]!.children[0]).toMatchObject({ name: "error", attributes: { type: "run-failed", message: "model error: 500" } });
    expect(a.children[7]!.children[0]).toMatchObject({ name: "failure", attributes: { type: "limit" } });
    expect(a.children[8]!.children[0]).toMatchObject({ name: "failure", attributes: { type: "timeout" } });
  });

  it("keeps a line break of a message as a reference, so it is read back as it was", () => {
    const report = buildReport(RECORD, [{ ...TRIALS[2]!, reason: "line 1\nline 2\ttab" }], { tasks: TASKS });
    const failure = parseXml(renderJUnit(report)).children[0]!.children[0]!.children[0]!;
    expect(failure.attributes.message).toBe("line 1\nline 2\ttab");
  });
});

describe("the Markdown format", () => {
  const markdown = renderMarkdown(REPORT);
  const lines = markdown.split("\n");

  it("has a summary row per variant, the comparisons with the tasks that changed, the matrix folded", () => {
    expect(lines).toContain(
      "| A | coder | scripted:/s/a.yaml | 3/7 | 43% [16%–75%] | 2.3 | 7.0k / 700 | unknown: a scripted model has no price | 10.5 s | check-failed 1, run-failed 1, limit 1, timeout 1 | 2 |",
    );
    expect(lines).toContain(
      "| B | coder | openai:gpt-4o | 7/8 | 88% [53%–98%] | 2.0 | 8.0k / 800 | 0.0280 | 12.0 s | check-failed 1 | 2 |",
    );
    expect(lines).toContain("**B − A: +45 points \\[−3 to +74\\]**");
    expect(lines).toContain("- gained: fix-sub, slow");
    expect(lines).toContain("- lost: fix-add");
    const details = lines.findIndex((line) => line.startsWith("<details>"));
    expect(lines.slice(details + 2, details + 5)).toEqual(["| task | A | B | C |", "|---|---|---|---|", "| fix-add | ✓✓ | ✓✓ | ✗✗ |"]);
    expect(lines).toContain("</details>");
  });

  it("escapes what a trial or the suite wrote: table pipes, backticks, HTML, control characters", () => {
    expect(lines).toContain(
      "| C | evil\\\\x1b\\]0;pwned\\\\x07&lt;i&gt; | (the graph's) | 1/3 | 33% [6%–79%] | 2.0 | 3.0k / 300 | unknown: the graph's own models: prices apply to a model given with --model | 4.5 s | check-failed 2 | 0 |",
    );
    const hostile = renderMarkdown(buildReport(RECORD, [{ ...TRIALS[0]!, task: "a|b`c`<script>" }], { tasks: [] }));
    expect(hostile).toContain("| a\\|b\\`c\\`&lt;script&gt; | ✓· | ·· | ·· |");
    expect(markdown).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
  });
});
