import { statSync } from "node:fs";
import { readRegularText } from "../diagnostics/regular-file.js";
import path from "node:path";
import { LineCounter, parseDocument, visit, type Document } from "yaml";
import { ConfigError, GraphValidationError } from "../errors.js";
import { packageGraphsDir, packagePrompt } from "../package.js";
import { projectRoot } from "../project.js";
import { nodeKinds } from "../nodes/registry.js";
import type { NodeFiles } from "../runtime/node-kind.js";
import { toPolicyRules } from "../policy/rule-file.js";
import { checkMcpServers } from "../tools/mcp-servers.js";
import { SourceLocator, type DataPath, type PathIssue } from "../diagnostics/positions.js";
import {
  COMPARISON_OPERATORS,
  GRAPH_MCP_SOURCE,
  namesOf,
  type GraphFile,
  type RawCondition,
  type RawEdge,
  type RawNode,
  type StateFieldType,
} from "./schema.js";
import {
  END_NODE,
  type Branch,
  type Condition,
  type EdgeDefinition,
  type GraphDefinition,
  type NodeDefinition,
  type StateFieldDefinition,
} from "../format/types.js";
import { checkPlaceholders, type PlaceholderNames } from "./placeholders.js";
import { runningBesideTheirKind } from "./parallel.js";
import { checkSemantics } from "./semantics.js";
import { checkShape } from "./shape.js";
import { untrustedReason } from "../trust/trust.js";

type PositionedIssue = GraphValidationError["issues"][number];

/**
 * A file and how messages name it: as the caller wrote it, and files it refers to as joined onto
 * that, so errors read like the command line that caused them.
 */
interface FileRef {
  absolute: string;
  shown: string;
}

/**
 * Reads, validates and resolves a graph file (subgraphs included). Throws GraphValidationError
 * listing every problem as `file:line:col: message`, or ConfigError if the file cannot be read.
 */
export async function loadGraph(file: string): Promise<GraphDefinition> {
  return loadGraphFile({ absolute: path.resolve(file), shown: file }, [], { nodeIds: [], fields: [] });
}

/**
 * `includedBy`: the files whose subgraphs led here, outermost first (to detect include cycles).
 * `outer`: the node ids and state fields of those files, which this file's prompts may name too.
 */
async function loadGraphFile(file: FileRef, includedBy: string[], outer: PlaceholderNames): Promise<GraphDefinition> {
  const parsed = parseGraphYaml(file.shown, await readGraphSource(file));
  if ("issues" in parsed) throw new GraphValidationError(parsed.issues);
  const locator = new SourceLocator(parsed.doc, parsed.lineCounter);
  const fail = (issues: PathIssue[], nested: PositionedIssue[] = []): never => {
    const own = issues.map((issue) => ({ file: file.shown, ...locator.locate(issue.path, issue.at), message: issue.message }));
    throw new GraphValidationError([...sortByPosition(own), ...nested]);
  };

  const shape = checkShape(parsed.data);
  if (!shape.ok) return fail(shape.issues);
  const names: PlaceholderNames = {
    nodeIds: [...outer.nodeIds, ...Object.keys(shape.graph.nodes)],
    // A map's item is read at vars.<as> by its instances' prompts.
    fields: [...outer.fields, ...Object.keys(shape.graph.state), ...shape.graph.edges.flatMap((edge) => (edge.map ? [edge.map.as] : []))],
  };
  const resolver = new NodeResolver(file, [...includedBy, file.absolute], names);
  const nodes = await resolver.resolveAll(shape.graph.nodes);
  const issues = [...checkSemantics(shape.graph), ...resolver.issues];
  if (issues.length > 0 || resolver.nestedIssues.length > 0) return fail(issues, resolver.nestedIssues);
  const placeholders = checkPlaceholders(nodes, names, (absolute) => shownPath(file, absolute));
  if (placeholders.length > 0) return fail([], placeholders);
  return buildDefinition(file.absolute, shape.graph, withConcurrencyDefaults(shape.graph, nodes));
}

/** Each node that may run beside another of its kind, as its kind defines it then (`runningBesideItsKind`). */
function withConcurrencyDefaults(graph: GraphFile, nodes: Record<string, NodeDefinition>): Record<string, NodeDefinition> {
  const beside = runningBesideTheirKind(graph);
  return Object.fromEntries(
    Object.entries(nodes).map(([id, node]) => {
      const adjust = nodeKinds.of(node).runningBesideItsKind;
      return [id, beside.has(id) && adjust ? adjust(node as never, graph.nodes[id] as never) : node];
    }),
  );
}

/**
 * Positions in a graph file by data path (e.g. `["edges", 2, "branches", 0]`), for reports that
 * point at a part of a graph loaded with `loadGraph` (its edges keep the file's order).
 */
export async function graphSourceLocator(file: string): Promise<SourceLocator> {
  const parsed = parseGraphYaml(file, await readGraphSource({ absolute: path.resolve(file), shown: file }));
  if ("issues" in parsed) throw new GraphValidationError(parsed.issues);
  return new SourceLocator(parsed.doc, parsed.lineCounter);
}

async function readGraphSource(file: FileRef): Promise<string> {
  try {
    return readRegularText(file.absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : (error as Error).message;
    throw new ConfigError(`cannot read graph file ${file.shown}: ${reason}`);
  }
}

type ParsedYaml = { doc: Document; lineCounter: LineCounter; data: unknown } | { issues: PositionedIssue[] };

function parseGraphYaml(shownFile: string, source: string): ParsedYaml {
  const lineCounter = new LineCounter();
  // `merge`: `<<: *defaults` lets nodes share settings through an anchor.
  const doc = parseDocument(source, { lineCounter, prettyErrors: false, merge: true });
  const at = (offset: number, message: string): PositionedIssue => ({
    file: shownFile,
    ...lineCounter.linePos(offset),
    message,
  });
  const issues = doc.errors.map((error) => at(error.pos[0], `YAML syntax error: ${error.message}`));
  visit(doc, {
    Alias(_, alias) {
      if (!alias.resolve(doc)) {
        issues.push(at(alias.range?.[0] ?? 0, `unknown alias *${alias.source}: define the anchor &${alias.source} before using it`));
      }
    },
  });
  if (issues.length > 0) return { issues: sortByPosition(issues) };
  if (doc.contents === null) {
    return { issues: [at(0, "the graph file is empty: it needs version, name, nodes and edges")] };
  }
  try {
    return { doc, lineCounter, data: doc.toJS() };
  } catch (error) {
    return { issues: [at(doc.contents.range?.[0] ?? 0, `YAML error: ${(error as Error).message}`)] };
  }
}

/** A file the graph refers to, named as joined onto the graph file's name as shown (like `existingFile`). */
function shownPath(graph: FileRef, absolute: string): string {
  return path.join(path.dirname(graph.shown), path.relative(path.dirname(graph.absolute), absolute));
}

function sortByPosition(issues: PositionedIssue[]): PositionedIssue[] {
  return [...issues].sort((a, b) => a.line - b.line || a.col - b.col);
}

function isFile(file: string): boolean {
  return statSync(file, { throwIfNoEntry: false })?.isFile() ?? false;
}

// ---------------------------------------------------------------------------------------------
// Nodes: resolving each kind's file references

class NodeResolver {
  readonly issues: PathIssue[] = [];
  /** Problems inside subgraph files, already positioned in those files. */
  readonly nestedIssues: PositionedIssue[] = [];

  /** `includeChain`: this file and the files that included it, outermost first (absolute paths). */
  constructor(
    private readonly file: FileRef,
    private readonly includeChain: string[],
    private readonly names: PlaceholderNames,
  ) {}

  async resolveAll(nodes: Record<string, RawNode>): Promise<Record<string, NodeDefinition>> {
    const resolved: Record<string, NodeDefinition> = {};
    for (const [id, raw] of Object.entries(nodes)) {
      const node = await this.resolve(id, raw);
      if (node) resolved[id] = node;
    }
    return resolved;
  }

  /** The node's definition, from its kind's resolver (src/nodes/<kind>/kind.ts). */
  private async resolve(id: string, raw: RawNode): Promise<NodeDefinition | undefined> {
    const common = {
      id,
      description: raw.description,
      model: raw.model,
      maxVisits: raw.max_visits,
      onLimit: raw.max_visits === undefined ? undefined : (raw.on_limit ?? END_NODE),
    };
    const at = (key: string): DataPath => ["nodes", id, key];
    const files: NodeFiles = {
      file: (relative, key, what) => this.existingFile(relative, at(key), what)?.absolute,
      prompt: (relative, key, defaultName) =>
        relative === undefined ? packagePrompt(defaultName) : this.existingFile(relative, at(key), "prompt file")?.absolute,
      graph: (relative, key, what) => this.loadSubgraph(relative, at(key), what),
      issue: (key, message) => void this.issues.push({ path: at(key), message }),
    };
    // The shape check let only registered kinds through.
    const kind = nodeKinds.get(raw.kind);
    if (!kind) throw new Error(`internal: node "${id}" of unregistered kind "${raw.kind}" passed the shape check`);
    return kind.resolve(raw, common, files);
  }

  /** `relative` (to the graph file) if it is an existing file; else an issue. */
  private existingFile(relative: string, at: DataPath, what: string): FileRef | undefined {
    const file = {
      absolute: path.resolve(path.dirname(this.file.absolute), relative),
      shown: path.join(path.dirname(this.file.shown), relative),
    };
    if (isFile(file.absolute)) return file;
    this.issues.push({ path: at, message: `${what} not found: ${relative} (looked for ${file.shown})` });
    return undefined;
  }

  private async loadSubgraph(relative: string, at: DataPath, what: string): Promise<GraphDefinition | undefined> {
    const file = this.existingFile(relative, at, what);
    if (!file) return undefined;
    const cycleStart = this.includeChain.indexOf(file.absolute);
    if (cycleStart >= 0) {
      const base = path.dirname(file.absolute);
      const cycle = [...this.includeChain.slice(cycleStart), file.absolute].map((f) => path.relative(base, f)).join(" → ");
      this.issues.push({ path: at, message: `subgraph include cycle: ${cycle}` });
      return undefined;
    }
    try {
      return await loadGraphFile(file, this.includeChain, this.names);
    } catch (error) {
      if (error instanceof GraphValidationError) this.nestedIssues.push(...error.issues);
      else if (error instanceof ConfigError) this.issues.push({ path: at, message: error.message });
      else throw error;
      return undefined;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The resolved definition (camelCase, absolute paths, defaults filled in)

const DEFAULT_VALUES: Record<StateFieldType, () => unknown> = {
  string: () => "",
  number: () => 0,
  boolean: () => false,
  object: () => ({}),
  array: () => [],
};

function buildDefinition(file: string, graph: GraphFile, nodes: Record<string, NodeDefinition>): GraphDefinition {
  const state: Record<string, StateFieldDefinition> = {};
  for (const [name, field] of Object.entries(graph.state)) {
    state[name] = { ...field, default: field.default ?? DEFAULT_VALUES[field.type]() };
  }
  return {
    version: graph.version,
    name: graph.name,
    description: graph.description,
    file,
    model: graph.model,
    state,
    nodes,
    edges: graph.edges.map(toEdgeDefinition),
    breakpoints: graph.breakpoints,
    limits: {
      maxSteps: graph.limits.max_steps,
      ...(graph.limits.max_concurrency !== undefined && { maxConcurrency: graph.limits.max_concurrency }),
    },
    policy: graph.policy ? toPolicyRules(graph.policy, "graph", file) : [],
    ...(graph.mcp_servers && { mcpServers: checkMcpServers(graph.mcp_servers, { ...GRAPH_MCP_SOURCE, origin: file }, []).servers }),
  };
}

function toEdgeDefinition(edge: RawEdge): EdgeDefinition {
  if (edge.map !== undefined && !Array.isArray(edge.from)) {
    const { over, to: target, as, max_concurrency } = edge.map;
    return {
      kind: "map",
      from: edge.from,
      to: [target],
      over,
      as,
      ...(max_concurrency !== undefined && { maxConcurrency: max_concurrency }),
    };
  }
  const to = namesOf(edge.to);
  if (Array.isArray(edge.from)) return { kind: "join", from: edge.from, to };
  if (edge.to !== undefined) return { kind: "static", from: edge.from, to };
  const branches = (edge.branches ?? []).map((branch): Branch => {
    const when = branch.when ? { when: toCondition(branch.when) } : {};
    if (branch.map === undefined) return { ...when, to: namesOf(branch.to) };
    const { over, to: target, as, max_concurrency } = branch.map;
    return { ...when, to: [target], map: { over, as, ...(max_concurrency !== undefined && { maxConcurrency: max_concurrency }) } };
  });
  return { kind: "conditional", from: edge.from, branches };
}

function toCondition(raw: RawCondition): Condition {
  if (raw.all) return { all: raw.all.map(toCondition) };
  if (raw.any) return { any: raw.any.map(toCondition) };
  if (raw.not) return { not: toCondition(raw.not) };
  const op = COMPARISON_OPERATORS.find((operator) => operator in raw);
  if (op === undefined || raw.path === undefined) throw new Error("internal: condition passed validation without path or operator");
  return { path: raw.path, op, value: raw[op] };
}

// ---------------------------------------------------------------------------------------------
// Finding graph files by name

const GRAPH_EXTENSIONS = [".yaml", ".yml"];

/** For a graph that is about to run: whose trust applies (the environment names the user's config folder), and where to say what was not used. */
export interface RunTrust {
  env: NodeJS.ProcessEnv;
  notes: string[];
}

/**
 * A graph given as a path (with or without .yaml/.yml, from `cwd`) or as a name: the project's
 * `graphs/<name>.yaml` (at the project root, see projectRoot),
 * then the package's shipped `graphs/`. A bare name (no folder, no extension) is only a name:
 * a file `coder` or `coder.yaml` that appears beside you (an agent can write one) never stands in
 * for the graph `coder`. For a run (`forRun`), a project graph found by name is used only when
 * the user trusts it as it is (src/trust/): otherwise the package's graph of that name runs, and a
 * note says why. Throws ConfigError listing the places tried.
 */
export function resolveGraphPath(nameOrPath: string, cwd: string, packageGraphs = packageGraphsDir(), forRun?: RunTrust): string {
  const asPath = path.resolve(cwd, nameOrPath);
  const isName = !/[\\/]/.test(nameOrPath);
  const bareName = isName && !/\.ya?ml$/.test(nameOrPath);
  const candidates = bareName ? [] : [asPath, ...GRAPH_EXTENSIONS.map((extension) => asPath + extension)];
  if (isName) {
    const name = nameOrPath.replace(/\.ya?ml$/, "");
    const inProject = GRAPH_EXTENSIONS.map((extension) => path.join(projectRoot(cwd), "graphs", name + extension));
    const shipped = packageGraphs ? GRAPH_EXTENSIONS.map((extension) => path.join(packageGraphs, name + extension)) : [];
    const projectGraph = inProject.find(isFile);
    const untrusted = projectGraph && forRun ? untrustedReason(projectGraph, forRun.env) : undefined;
    if (projectGraph && untrusted) {
      const builtIn = shipped.find(isFile);
      const advice = `review it, then run \`loopgraph trust\` to use it`;
      if (!builtIn) throw new ConfigError(`graph "${name}" is the project's ${projectGraph}, which is not used: ${untrusted}: ${advice}`);
      forRun!.notes.push(
        `the project's ${projectGraph} is not used (${untrusted}): loopgraph's own graph "${name}" runs instead; ${advice}`,
      );
      return builtIn;
    }
    candidates.push(...inProject, ...shipped);
  }
  const found = candidates.find(isFile);
  if (found) return found;
  const tried = [...new Set(candidates)].join(", ");
  throw new ConfigError(`graph "${nameOrPath}" not found (tried ${tried}): run "loopgraph graphs list" to see the available graphs`);
}
