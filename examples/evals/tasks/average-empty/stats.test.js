import assert from "node:assert/strict";
import { test } from "node:test";
import { average } from "./stats.js";

test("averages numbers", () => {
  assert.equal(average([1, 2, 3]), 2);
  assert.equal(average([10]), 10);
});

test("is 0 for an empty list", () => {
  assert.equal(average([]), 0);
});
