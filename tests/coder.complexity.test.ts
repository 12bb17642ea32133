/** The Coder's task-complexity analysis (rules, no model call), on a table of tasks. */
import { describe, expect, it } from "vitest";
import { analyzeComplexity, strategySection, type ComplexityLevel } from "../src/nodes/coder/complexity.js";

const TASKS: readonly [string, ComplexityLevel][] = [
  ["create a snake game in snake.py", "simple"],
  ["make a calculator", "simple"],
  ["fix typo in README.md", "simple"],
  ["Rename the function getUser to fetchUser in api.ts", "simple"],
  ["write a hello world script", "simple"],
  ["Add a --verbose flag to the CLI", "simple"],
  ["bump the version to 2.1.0 in package.json", "simple"],
  ["创建一个贪吃蛇游戏", "simple"],
  ["修正 README 里的拼写错误", "simple"],
  ["Change the greeting in hello.txt to 'hi'", "simple"],
  ["Fix the off-by-one bug in src/parser.ts", "moderate"],
  ["Implement a /health endpoint that returns the build version and uptime, with a test", "moderate"],
  ["Add support for YAML config files next to the JSON ones, keeping the JSON format working as before", "moderate"],
  ["The login form accepts empty passwords; add validation on the client and the server and show an error message", "moderate"],
  ["Add a feature to export the report as CSV from the dashboard page, with the same columns as the table", "moderate"],
  ["Write tests for the date helpers in src/util/dates.ts and fix what they find", "moderate"],
  ["实现用户登录功能，包括表单和接口", "moderate"],
  ["修复分页时最后一页显示为空的问题", "moderate"],
  ["Integrate the Stripe webhook handler with the orders service so paid orders are marked as paid", "moderate"],
  ["When the cache is cold the first request times out; find out why and make it load lazily instead", "moderate"],
  ["Refactor the auth module", "complex"],
  ["Migrate the database layer from SQLite to PostgreSQL and update all queries", "complex"],
  ["Redesign the plugin architecture so plugins load in isolation", "complex"],
  ["Rewrite the build system in TypeScript", "complex"],
  ["重构整个支付系统", "complex"],
  ["把项目从 webpack 迁移到 vite", "complex"],
  [
    "1. Split server.ts into routes.ts, handlers.ts and db.ts\n2. Move the config into config.ts\n3. Add tests for each\n4. Update the README\n5. Check the build",
    "complex",
  ],
  ["Refactor error handling across the codebase: every module should throw typed errors", "complex"],
  [
    "First read src/a.ts, src/b.ts, src/c.ts, src/d.ts and src/e.ts, then unify their logging, then add a shared logger module, then update the callers, finally run the test suite",
    "complex",
  ],
  ["Overhaul the event system so events are typed and versioned, then migrate the existing listeners", "complex"],
  ["Replace the hand-written parser with a framework-based one and migrate every grammar rule", "complex"],
];

describe("task-complexity analysis", () => {
  it.each(TASKS)("%j is %s", (task, level) => {
    const analysis = analyzeComplexity(task);
    expect(analysis.level, analysis.indicators.join(", ")).toBe(level);
    expect(analysis.confidence).toBeGreaterThanOrEqual(0.5);
    expect(analysis.confidence).toBeLessThanOrEqual(0.95);
  });

  it("has a table of at least 30 tasks, each level among them", () => {
    expect(TASKS.length).toBeGreaterThanOrEqual(30);
    expect(new Set(TASKS.map(([, level]) => level))).toEqual(new Set(["simple", "moderate", "complex"]));
  });

  it("names what it read the level from, and is surer the further the indicators point", () => {
    const snake = analyzeComplexity("create a snake game");
    expect(snake.indicators).toEqual(['"create a" (simple)', '"snake game" (simple)', "short task (4 words)"]);
    const refactor = analyzeComplexity("Refactor the auth module");
    const both = analyzeComplexity("Refactor and migrate the auth system across the codebase, then rewrite its tests");
    expect(both.level).toBe("complex");
    expect(both.confidence).toBeGreaterThan(refactor.confidence);
    expect(analyzeComplexity("Fix the bug in src/a.ts, src/b.ts and src/c.ts").indicators).toContain("3 files named");
  });

  it("gives each level's strategy: none for simple, a short plan for moderate, phases for complex", () => {
    expect(strategySection(analyzeComplexity("make a calculator"))).toMatch(
      /^# Task strategy: simple \(confidence \d+%\)\n.*Do not plan.*1–3 tool calls/s,
    );
    expect(strategySection(analyzeComplexity("Fix the off-by-one bug in src/parser.ts"))).toMatch(/moderate.*short plan of 3–5 items/s);
    expect(strategySection(analyzeComplexity("Refactor the auth module"))).toMatch(/complex.*full plan with todo_write, in phases/s);
  });
});
