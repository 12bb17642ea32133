// Regenerates the committed JSON Schemas (`npm run schema`): schema/graph.schema.json from the
// graph's zod schema, schema/eval-report.schema.json from the eval report's.
import { writeFileSync } from "node:fs";
import { renderEvalReportJsonSchema } from "../src/eval/report-schema.js";
import { renderGraphJsonSchema } from "../src/graph/json-schema.js";

for (const [name, text] of [
  ["graph.schema.json", renderGraphJsonSchema()],
  ["eval-report.schema.json", renderEvalReportJsonSchema()],
] as const) {
  const target = new URL(`../schema/${name}`, import.meta.url);
  writeFileSync(target, text);
  console.log(`wrote ${target.pathname}`);
}
