import { getPath } from "../format/condition.js";

const PLACEHOLDER = /\{\{\s*([A-Za-z_][\w.-]*)\s*\}\}/g;

/** Fills `{{task}}`, `{{outputs.draft}}`, `{{vars.audience}}` … from the state; unknown paths become "". */
export function renderPrompt(template: string, state: unknown): string {
  return template.replace(PLACEHOLDER, (_, path: string) => stringify(getPath(state, path)));
}

/** A `{{ path }}` of a template: its state path and where it starts (a string index). */
export interface Placeholder {
  path: string;
  offset: number;
}

/** The placeholders `renderPrompt` fills, in order (the graph loader checks their paths). */
export function placeholdersIn(template: string): Placeholder[] {
  return [...template.matchAll(PLACEHOLDER)].map((match) => ({ path: match[1]!, offset: match.index }));
}

function stringify(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}
