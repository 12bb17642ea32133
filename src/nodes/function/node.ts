import { pathToFileURL } from "node:url";
import { ConfigError } from "../../errors.js";
import { importAtRunTime } from "../../package.js";
import { untrustedReason } from "../../trust/trust.js";
import type { RunContext } from "../../runtime/context.js";
import { performFallibleEffect } from "../../runtime/effects.js";
import { combinedWrite, type GraphStateValue } from "../../state/graph-state.js";
import type { GraphDefinition, VarReducer } from "../../format/types.js";
import type { NodeFunction } from "../../runtime/node-function.js";
import type { FunctionNodeDefinition } from "./definition.js";

/** What a `function` node's export receives besides the state. */
export interface FunctionNodeContext {
  node: string;
  threadId: string;
  workspace: string;
}

/** What a `function` node's export returns: its output and/or updates to declared vars. */
export interface FunctionNodeResult {
  output?: unknown;
  vars?: Record<string, unknown>;
}

export type UserFunction = (
  state: GraphStateValue,
  context: FunctionNodeContext,
) => FunctionNodeResult | void | Promise<FunctionNodeResult | void>;

/**
 * The export a `function` node runs, loaded into loopgraph's own process: only from loopgraph's
 * package or a project the user trusts as it is (src/trust/), so that a module the agent wrote or
 * changed never runs with the user's rights.
 */
export async function loadUserFunction(def: FunctionNodeDefinition, env: NodeJS.ProcessEnv): Promise<UserFunction> {
  const untrusted = untrustedReason(def.module, env);
  if (untrusted)
    throw new ConfigError(
      `node "${def.id}": ${def.module} is not run: ${untrusted}: review it, then run \`loopgraph trust\` (the project) or \`loopgraph trust <graph file>\``,
    );
  let module: Record<string, unknown>;
  try {
    module = /\.(c|m)?ts$/.test(def.module)
      ? ((await ((await importAtRunTime("tsx/esm/api")) as typeof import("tsx/esm/api")).tsImport(def.module, import.meta.url)) as Record<
          string,
          unknown
        >)
      : ((await importAtRunTime(pathToFileURL(def.module).href)) as Record<string, unknown>);
  } catch (error) {
    throw new ConfigError(`node "${def.id}": cannot load ${def.module}: ${(error as Error).message.split("\n")[0]}`);
  }
  const fn = module[def.exportName];
  if (typeof fn !== "function") {
    throw new ConfigError(`node "${def.id}": ${def.module} has no exported function "${def.exportName}"`);
  }
  return fn as UserFunction;
}

/**
 * A function may touch the workspace, so its call is an effect: its result (or error) is recorded,
 * and a recorded replay takes it from the record instead of calling the function.
 */
export function createFunctionNode(def: FunctionNodeDefinition, fn: UserFunction, ctx: RunContext, graph: GraphDefinition): NodeFunction {
  return async (state) => {
    const request = { kind: "function" as const, node: def.id, name: def.exportName, args: {} };
    const result = await performFallibleEffect(
      ctx,
      request,
      async (): Promise<FunctionNodeResult | undefined> =>
        (await fn(state, { node: def.id, threadId: ctx.threadId, workspace: ctx.workspace })) ?? undefined,
      (message) => new Error(message),
    );
    if (result === undefined) return {};
    if (typeof result !== "object" || result === null || Object.keys(result).some((k) => k !== "output" && k !== "vars")) {
      throw new Error(`the function must return { output?, vars? } or nothing`);
    }
    return {
      ...(result.output !== undefined ? { outputs: { [def.id]: result.output } } : {}),
      ...(result.vars ? { vars: varsUpdate(def, graph, result.vars) } : {}),
    };
  };
}

/**
 * The returned `vars` as the state's update: only the fields of the node's `writes:` (when it has
 * one), and the fields with a reducer as the items to append or the keys to merge.
 */
function varsUpdate(def: FunctionNodeDefinition, graph: GraphDefinition, vars: Record<string, unknown>): Record<string, unknown> {
  const outside = def.writes ? Object.keys(vars).filter((field) => !def.writes?.includes(field)) : [];
  if (outside.length > 0) {
    const fields = outside.map((field) => `vars.${field}`).join(", ");
    throw new Error(
      `the function returned ${fields}, which the node's writes: [${def.writes?.join(", ")}] leaves out: add the field to writes in ${graph.file}, or do not return it`,
    );
  }
  return Object.fromEntries(Object.entries(vars).map(([field, value]) => [field, combined(field, value, graph.state[field]?.reducer)]));
}

function combined(field: string, value: unknown, reducer: VarReducer | undefined): unknown {
  if (reducer === "append") {
    if (!Array.isArray(value)) throw new Error(`vars.${field} has reducer append: return a list of the items to append`);
    return combinedWrite("append", value);
  }
  if (reducer === "merge") {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new Error(`vars.${field} has reducer merge: return an object of the keys to set`);
    }
    return combinedWrite("merge", value);
  }
  return value;
}
