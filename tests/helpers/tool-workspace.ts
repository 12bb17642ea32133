/**
 * A workspace for the tool tests, with a sibling `outside/` folder (holding `secret.txt`) for
 * escape attempts and the `ToolContext` the tools run with, made and removed by
 * tests/helpers/workspace.ts:
 *
 *   const ws = makeWorkspace({ "a.txt": "x\n" }, { git: true }); // inside a test
 *   await ws.call("read_file", { path: "a.txt" });
 *   const shared = sharedToolWorkspace({ ... }); // in a describe body, for the block's tests
 */
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { executeToolCall } from "../../src/tools/registry.js";
import { NO_SANDBOX, type Sandbox } from "../../src/tools/sandbox.js";
import type { ToolContext, ToolDefinition, ToolResult } from "../../src/tools/types.js";
import { createWorkspace, onCleanup, shared } from "./workspace.js";

/** A temporary workspace with a sibling `outside/` directory (holding `secret.txt`) for escape attempts. */
export interface TestWorkspace {
  /** The workspace (the tools' `ctx.workspace`): `<temporary folder>/repo`, a real path. */
  root: string;
  /** `<temporary folder>/outside`, beside the workspace, with `secret.txt` in it. */
  outside: string;
  ctx: ToolContext;
  write(path: string, contents: string | Buffer): void;
  symlink(path: string, target: string): void;
  call(name: string, args: unknown, tools?: readonly ToolDefinition[]): Promise<ToolResult>;
}

export interface ToolWorkspaceOptions {
  /** `git init` in the workspace (the files untracked). */
  git?: boolean;
  sandbox?: Sandbox;
  secrets?: string[];
}

/** Creates a tool workspace now; the caller decides when `remove` runs. */
function createToolWorkspace(
  files: Record<string, string | Buffer>,
  options: ToolWorkspaceOptions,
): TestWorkspace & { remove: () => void } {
  const { root: base, dir: root, remove } = createWorkspace({ files, git: options.git ? "init" : false, prefix: "loopgraph-tools-" });
  const outside = join(base, "outside");
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), "top secret\n");
  // The tools as loopgraph runs them without an OS sandbox (tests/tools.sandbox.test.ts runs the shell inside one).
  const ctx: ToolContext = {
    workspace: root,
    env: process.env,
    artifactsDir: join(root, ".loopgraph", "artifacts", "thread-1"),
    sandbox: options.sandbox ?? NO_SANDBOX,
    ...(options.secrets ? { secrets: options.secrets } : {}),
  };
  let calls = 0;
  return {
    root,
    outside,
    ctx,
    write: (path, contents) => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), contents);
    },
    symlink: (path, target) => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      symlinkSync(target, join(root, path));
    },
    call: (name, args, tools) => executeToolCall({ id: `call-${++calls}`, name, args }, ctx, tools),
    remove,
  };
}

/** A fresh tool workspace for the current test, removed when it finishes. Only inside a test. */
export function makeWorkspace(files: Record<string, string | Buffer> = {}, options: ToolWorkspaceOptions = {}): TestWorkspace {
  const { remove, ...workspace } = createToolWorkspace(files, options);
  onCleanup(remove);
  return workspace;
}

/**
 * One tool workspace for the tests of the enclosing describe block (or file): call it in the
 * describe body (see `shared` in tests/helpers/workspace.ts). Read it once the `beforeAll` has run.
 */
export function sharedToolWorkspace(files: Record<string, string | Buffer> = {}, options: ToolWorkspaceOptions = {}): TestWorkspace {
  return shared("sharedToolWorkspace", () => createToolWorkspace(files, options), ["root", "outside", "ctx", "write", "symlink", "call"]);
}
