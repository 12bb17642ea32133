import { lstatSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { ConfigError } from "../errors.js";
import { trustFiles } from "../trust/trust.js";
import { packageRoot } from "../package.js";
import { PROJECT_CONFIG, STATE_DIR } from "../project.js";
import { ensureStateDir } from "../runs/state-dir.js";

const PROJECT_CONFIG_TEXT = `# loopgraph's settings for this project (\`loopgraph config\` shows what applies and why).
# Flags and LOOPGRAPH_* variables come first, then this file, then your own
# ~/.config/loopgraph/config.yaml, then a graph's own model:.
#
# model: openai:gpt-4o-mini        # for nodes that name no model (new threads)
# approval: ask                    # ask or deny here; the auto modes only in your own config
# model_timeout: 120               # seconds without data before a model request is retried
# store: .loopgraph/loopgraph.db   # a SQLite file (from this folder) or a postgres:// URL
`;

const STARTER_GRAPH = `# yaml-language-server: $schema=../${STATE_DIR}/graph.schema.json
# A starter graph: the Coder does the task in this project, then a reviewer checks its work.
#   loopgraph run starter --task "…"
# Graph format: node kinds coder, review, judge, looper, mediator, agent and function; edges
# with branches on the state; limits. \`loopgraph graphs validate graphs/starter.yaml\` checks it.
version: 1
name: starter
description: The Coder does the task, then a reviewer checks the work against it.
nodes:
  coder: { kind: coder }
  reviewer:
    kind: agent
    prompt: prompts/reviewer.md
edges:
  - { from: START, to: coder }
  - { from: coder, to: reviewer }
  - { from: reviewer, to: END }
`;

const STARTER_PROMPT = `You review a coding agent's work on this task:

{{task}}

The agent's report:

{{outputs.coder}}

Say in a few sentences whether the task is done, and what is missing or wrong if it is not.
`;

/** What `init` did with one path. */
interface Step {
  path: string;
  did: "created" | "kept" | "updated";
}

/**
 * `loopgraph init`: makes the current directory a loopgraph project: `loopgraph.yaml`, a starter
 * graph and its prompt in `graphs/`, and `.loopgraph/` (ignored by git) with the graph format's
 * JSON schema that the graph's `$schema` line points at. Files that exist are kept as they are;
 * the schema is brought up to date with this loopgraph. Says what it did.
 */
export async function initCommand(options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<number> {
  const dir = options.cwd ?? process.cwd();
  const steps: Step[] = [];
  const create = (path: string, text: string) => {
    realDirectory(dirname(path), dir);
    try {
      writeFileSync(path, text, { flag: "wx" });
      steps.push({ path, did: "created" });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      steps.push({ path, did: "kept" });
    }
  };
  create(join(dir, PROJECT_CONFIG), PROJECT_CONFIG_TEXT);
  create(join(dir, "graphs", "starter.yaml"), STARTER_GRAPH);
  create(join(dir, "graphs", "prompts", "reviewer.md"), STARTER_PROMPT);
  const state = join(dir, STATE_DIR);
  const hadState = lstatSync(state, { throwIfNoEntry: false }) !== undefined;
  realDirectory(state, dir);
  ensureStateDir(state);
  steps.push({ path: state, did: hadState ? "kept" : "created" });
  const schema = readFileSync(join(packageRoot() ?? ".", "schema", "graph.schema.json"), "utf8");
  const schemaPath = join(state, "graph.schema.json");
  const before = lstatSync(schemaPath, { throwIfNoEntry: false });
  if (before && !before.isFile()) throw new ConfigError(`${schemaPath} is not a file: remove it and run loopgraph init again`);
  const same = before !== undefined && readFileSync(schemaPath, "utf8") === schema;
  if (!same) writeFileSync(schemaPath, schema);
  steps.push({ path: schemaPath, did: before === undefined ? "created" : same ? "kept" : "updated" });

  // What init wrote is the user's own doing: trusted (src/trust/), so that `run starter` uses it. Files that were there stay as trusted, or not, as they were.
  trustFiles(
    dir,
    steps.filter((step) => step.did === "created" && step.path.endsWith(".yaml")).map((step) => step.path),
    options.env ?? process.env,
  );
  for (const step of steps)
    process.stdout.write(
      `${step.did.padEnd(8)} ${relative(dir, step.path) || "."}${step.path === state ? `/  (git ignores what loopgraph keeps there)` : ""}\n`,
    );
  process.stdout.write(
    [
      "",
      `A loopgraph project in ${dir}. Next:`,
      "  loopgraph config                     the settings that apply here",
      '  loopgraph run starter --task "…"     the starter graph, with a model set (--model, LOOPGRAPH_MODEL or loopgraph.yaml)',
      "  loopgraph demo                       the offline demo, no API key needed",
      "",
    ].join("\n"),
  );
  return 0;
}

/** Makes `path` (inside `project`) a directory, folder by folder: a link or a file in the way is refused, so init writes only inside the project. */
function realDirectory(path: string, project: string): void {
  const inside = relative(project, path);
  let at = project;
  for (const part of ["", ...(inside ? inside.split(sep) : [])]) {
    at = join(at, part);
    const found = lstatSync(at, { throwIfNoEntry: false });
    if (!found) mkdirSync(at);
    else if (!found.isDirectory())
      throw new ConfigError(`${at} is not a directory (a link?): loopgraph init writes only into real folders of ${project}`);
  }
}
