// The `function` nodes of examples/parallel-checks.yaml: two checks of the task run together, each
// appending its finding to vars.findings (a field with `reducer: append`), then one report.
interface ChecksState {
  task: string;
  vars: { findings?: string[] };
}

export function countWords(state: ChecksState) {
  const words = state.task.split(/\s+/).filter(Boolean).length;
  return { output: words, vars: { findings: [`${words} words`] } };
}

export function countLines(state: ChecksState) {
  const lines = state.task.split("\n").length;
  return { output: lines, vars: { findings: [`${lines} lines`] } };
}

export function report(state: ChecksState) {
  return { output: `the task has ${(state.vars.findings ?? []).join(" and ")}` };
}
