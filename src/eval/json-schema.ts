import { fileJsonSchema, renderJsonSchema } from "../graph/json-schema.js";
import { suiteFileSchema } from "./suite.js";

/** The committed `schema/eval-suite.schema.json`, byte for byte. */
export function renderSuiteJsonSchema(): string {
  return renderJsonSchema(
    fileJsonSchema(suiteFileSchema, "loopgraph eval suite", "A suite of tasks for `loopgraph eval` (format version 1)"),
  );
}
