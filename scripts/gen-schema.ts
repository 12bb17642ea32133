// Regenerates schema/graph.schema.json and schema/eval-suite.schema.json from the zod schemas (`npm run schema`).
import { writeFileSync } from "node:fs";
import { renderGraphJsonSchema } from "../src/graph/json-schema.js";
import { renderSuiteJsonSchema } from "../src/eval/json-schema.js";

for (const [name, text] of [
  ["graph.schema.json", renderGraphJsonSchema()],
  ["eval-suite.schema.json", renderSuiteJsonSchema()],
] as const) {
  const target = new URL(`../schema/${name}`, import.meta.url);
  writeFileSync(target, text);
  console.log(`wrote ${target.pathname}`);
}
