import assert from "node:assert/strict";
import { test } from "node:test";
import { slugify } from "./slug.js";

test("joins words with dashes", () => {
  assert.equal(slugify("Hello World"), "hello-world");
  assert.equal(slugify("Graphs of Agents"), "graphs-of-agents");
});

test("collapses runs of spaces", () => {
  assert.equal(slugify("  Durable   runs "), "durable-runs");
});
