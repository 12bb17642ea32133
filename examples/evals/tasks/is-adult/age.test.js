import assert from "node:assert/strict";
import { test } from "node:test";
import { isAdult } from "./age.js";

test("18 and older are adults", () => {
  assert.equal(isAdult(18), true);
  assert.equal(isAdult(40), true);
});

test("under 18 are not", () => {
  assert.equal(isAdult(17), false);
  assert.equal(isAdult(0), false);
});
