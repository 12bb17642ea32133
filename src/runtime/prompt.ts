import { getPath } from "../format/condition.js";

const PLACEHOLDER = /\{\{\s*([A-Za-z_][\w.-]*)\s*\}\}/g;

/** Fills `{{task}}`, `{{outputs.draft}}`, `{{vars.audience}}` … from the state; unknown paths become "". */
export function renderPrompt(template: string, state: unknown): string {
  return template.replace(PLACEHOLDER, (_, path: string) => stringify(getPath(state, path)));
}

function stringify(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}
