/** What a step of a thread did, in a few words, as `inspect` and the web inspector show it. */
import type { CheckpointSummary } from "./inspect.js";
import { describeComplexity, type ComplexityAnalysis } from "../nodes/coder/complexity.js";

/** Channels of the engine's own bookkeeping: left out of `inspect --diff` unless `--internal`, and of a step's description. */
export const INTERNAL_CHANNELS = ["scripted", "readResults"];

/**
 * The first line of a message's text (plain JSON of a message, as `inspect` stores it): a tool's
 * result after the tool's name; a model's answer of only tool calls, the calls.
 */
function messageLine(message: unknown): string | undefined {
  const {
    content,
    type,
    name,
    tool_calls: calls,
  } = (message ?? {}) as { content?: unknown; type?: string; name?: string; tool_calls?: { name?: string; args?: unknown }[] };
  const text =
    typeof content === "string"
      ? content
      : Array.isArray(content)
        ? content.map((part) => (part as { text?: string }).text ?? "").join("")
        : "";
  const line = text.trim().split("\n")[0]?.trim();
  if (!line && calls?.length) return calls.map((call) => `→ ${call.name} ${JSON.stringify(call.args ?? {})}`).join(", ");
  if (line && type === "tool" && name) return `${name}: ${line}`;
  return line || undefined;
}

/** The nodes whose outputs a change wrote: `outputs.<node>…`, or each node of the channel's first value (every node of a step that ran first). */
function outputsWritten(change: CheckpointSummary["changes"][number]): string[] {
  if (change.path.startsWith("outputs.")) return [change.path.split(".")[1]!];
  if (change.path === "outputs" && change.kind === "added" && typeof change.value === "object" && change.value !== null) {
    return Object.keys(change.value);
  }
  return [];
}

/**
 * What a step did, in a few words: the first line of each message it added (the Coder's
 * summary, an [AUTO] log line, the review's rating), else the outputs it wrote.
 */
export function describeStep(checkpoint: CheckpointSummary): string {
  if (checkpoint.nodes[0] === "input") return "the run's input";
  const instances = Object.entries(checkpoint.instances ?? {}).map(([node, count]) => `${node}[0]…${node}[${count - 1}]`);
  // A Coder's own step that classified its task says so first: its model's answer may be long, and the line is cut.
  const classified = checkpoint.changes.find((change) => change.path === "complexity" && change.kind !== "removed");
  const notes = planningNotes(checkpoint);
  const did = (classified ? [...notes, describeChanges(checkpoint)] : [describeChanges(checkpoint), ...notes]).join(" · ");
  return instances.length > 0 ? `ran ${instances.join(", ")} together: ${did}` : did;
}

/** What a step tells of a Coder's planning: its task's complexity when it was classified, the findings its result holds. */
function planningNotes(checkpoint: CheckpointSummary): string[] {
  type Planned = { complexity?: Partial<ComplexityAnalysis>; findings?: unknown } | null | undefined;
  const noted = (planned: Planned): string[] => {
    const { complexity, findings } = planned ?? {};
    const notes =
      typeof complexity?.level === "string" && typeof complexity.confidence === "number"
        ? [describeComplexity({ level: complexity.level, confidence: complexity.confidence })]
        : [];
    if (Array.isArray(findings) && findings.length > 0) notes.push(`${findings.length} finding${findings.length === 1 ? "" : "s"} kept`);
    return notes;
  };
  return checkpoint.changes.flatMap((change) => {
    if (change.kind === "removed") return [];
    // A Coder's own step that classified its task; a node's result, or the first results of a step (`outputs` added whole).
    if (change.path === "complexity") return noted({ complexity: change.value as Partial<ComplexityAnalysis> });
    if (/^outputs\.[^.]+$/.test(change.path)) return noted(change.value as Planned);
    if (change.path === "outputs" && typeof change.value === "object" && change.value !== null)
      return Object.values(change.value).flatMap((value) => noted(value as Planned));
    return [];
  });
}

function describeChanges(checkpoint: CheckpointSummary): string {
  const added = checkpoint.changes.flatMap((change) => {
    if (change.kind !== "added") return [];
    if (/^messages\.\d+$/.test(change.path)) return [messageLine(change.value)];
    if (change.path === "messages" && Array.isArray(change.value)) return change.value.map(messageLine);
    return [];
  });
  const lines = added.filter((line): line is string => line !== undefined);
  if (lines.length > 0) return lines.join(" · ");
  const outputs = [...new Set(checkpoint.changes.flatMap(outputsWritten))];
  if (outputs.length > 0) return `wrote outputs.${outputs.join(", outputs.")}`;
  const channels = [
    ...new Set(
      checkpoint.changes
        .map((change) => change.path.split(".")[0]!)
        .filter((channel) => !INTERNAL_CHANNELS.includes(channel) && channel !== "visits"),
    ),
  ];
  return channels.length > 0 ? `set ${channels.join(", ")}` : "-";
}
