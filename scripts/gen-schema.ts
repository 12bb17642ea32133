// Regenerates schema/graph.schema.json from the zod schema (`npm run schema`).
import { writeFileSync } from "node:fs";
import { renderGraphJsonSchema } from "../src/graph/json-schema.js";

const target = new URL("../schema/graph.schema.json", import.meta.url);
writeFileSync(target, renderGraphJsonSchema());
console.log(`wrote ${target.pathname}`);
