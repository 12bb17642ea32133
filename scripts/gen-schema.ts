// Regenerates the committed JSON Schemas (`npm run schema`) from their zod schemas: graph files,
// eval suites and the eval report's JSON.
import { writeFileSync } from "node:fs";
import { renderEvalReportJsonSchema } from "../src/eval/report-schema.js";
import { renderGraphJsonSchema } from "../src/graph/json-schema.js";
import { renderSuiteJsonSchema } from "../src/eval/json-schema.js";

for (const [name, text] of [
  ["graph.schema.json", renderGraphJsonSchema()],
  ["eval-report.schema.json", renderEvalReportJsonSchema()],
  ["eval-suite.schema.json", renderSuiteJsonSchema()],
] as const) {
  const target = new URL(`../schema/${name}`, import.meta.url);
  writeFileSync(target, text);
  console.log(`wrote ${target.pathname}`);
}
