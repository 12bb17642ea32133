/**
 * Temporary folders and workspaces for tests, removed by vitest itself: no `cleanups` array and
 * `afterEach` in the test files. The one place the tests make a temporary folder
 * (tests/tests.hygiene.test.ts holds every other test file to it).
 *
 *   const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } }); // inside a test
 *   ws.dir  // the workspace: <root>/repo
 *   ws.db   // a store path beside it: <root>/store.db
 *   const dir = tempDir("loopgraph-x-");   // inside a test: an empty folder
 *
 * Inside a test, `tempDir`, `tempWorkspace` and `onCleanup` register their clean-up with
 * `onTestFinished` (run in reverse order of registration, also when the test fails). A set-up
 * shared by the tests of a describe block (or file) calls `sharedTempDir` or `sharedWorkspace` in
 * the describe body instead: it is made in a `beforeAll` and removed in an `afterAll`. Where neither
 * fits (a folder for the whole process, a runner outside vitest), `createTempDir` and
 * `createWorkspace` make one now and leave its removal to the caller.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, onTestFinished } from "vitest";

export interface Workspace {
  /** The temporary directory holding the workspace and the store; removed after the test. */
  root: string;
  /** The workspace: `<root>/repo`. */
  dir: string;
  /** Where a test's run store goes: `<root>/store.db`, beside the workspace. */
  db: string;
}

export interface WorkspaceOptions {
  /** Files to write into the workspace (paths relative to it; folders are made). */
  files?: Record<string, string | Buffer>;
  /**
   * `true`: a git repository with `files` in one commit; `"init"`: `git init` only, the files
   * untracked; `false` (the default): no repository.
   */
  git?: boolean | "init";
  /** The temporary directory's name prefix. */
  prefix?: string;
}

/**
 * The repository of a workspace, made by one shell after the files are written: each process a
 * test starts forks the test's own (large) process, three git processes cost three times one.
 */
const GIT_SETUP = {
  init: "git init -q",
  commit: "git init -q && git add . && git -c user.name=t -c user.email=t@t commit -qm init --allow-empty",
};

/** A temporary folder, and its removal. */
export interface TempDir {
  /** The folder's real path (no symbolic link on the way, as a tool or the CLI resolves it). */
  path: string;
  remove: () => void;
}

/**
 * Creates an empty temporary folder now, named `<prefix>XXXXXX` in `parent` (default: the system's
 * temporary folder); the caller decides when `remove` runs.
 */
export function createTempDir(prefix = "loopgraph-test-", parent = tmpdir()): TempDir {
  const path = realpathSync(mkdtempSync(join(parent, prefix)));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** An empty temporary folder for the current test, removed when it finishes. Only inside a test. */
export function tempDir(prefix?: string, parent?: string): string {
  const { path, remove } = createTempDir(prefix, parent);
  onCleanup(remove);
  return path;
}

/**
 * One value for the tests of the enclosing describe block (or file), made by `create` in a
 * `beforeAll` (registered here, so it runs before the block's own `beforeAll`s that come after this
 * call) and removed in an `afterAll`: call it in the describe body. It returns a view of the value's
 * `fields`, readable once the `beforeAll` has run (a method read from it is the current value's).
 */
export function shared<T extends { remove: () => void }, K extends keyof T>(
  name: string,
  create: () => T,
  fields: readonly K[],
): Pick<T, K> {
  let current: T | undefined;
  beforeAll(() => {
    current = create();
  });
  afterAll(() => {
    current?.remove();
    current = undefined;
  });
  const view = {} as Pick<T, K>;
  for (const field of fields) {
    Object.defineProperty(view, field, {
      enumerable: true,
      get: () => {
        if (!current) throw new Error(`${name}: read before its beforeAll ran (or after its afterAll)`);
        return current[field];
      },
    });
  }
  return view;
}

/** An empty temporary folder for the tests of the enclosing describe block (or file): see `shared`. */
export function sharedTempDir(prefix?: string, parent?: string): { readonly path: string } {
  return shared("sharedTempDir", () => createTempDir(prefix, parent), ["path"]);
}

/** Creates a workspace now; the caller decides when `remove` runs. */
export function createWorkspace(options: WorkspaceOptions = {}): Workspace & { remove: () => void } {
  const { path: root, remove } = createTempDir(options.prefix);
  const dir = join(root, "repo");
  mkdirSync(dir);
  try {
    for (const [name, contents] of Object.entries(options.files ?? {})) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), contents);
    }
    if (options.git) execFileSync("sh", ["-c", GIT_SETUP[options.git === true ? "commit" : "init"]], { cwd: dir, stdio: "ignore" });
  } catch (error) {
    remove();
    throw error;
  }
  return { root, dir, db: join(root, "store.db"), remove };
}

/** Runs `cleanup` when the current test finishes, passed or failed. Only inside a test. */
export function onCleanup(cleanup: () => void | Promise<void>): void {
  onTestFinished(async () => {
    await cleanup();
  });
}

/** A fresh workspace for the current test, removed when it finishes. Only inside a test. */
export function tempWorkspace(options: WorkspaceOptions = {}): Workspace {
  const { remove, ...workspace } = createWorkspace(options);
  onCleanup(remove);
  return workspace;
}

/** One workspace for the tests of the enclosing describe block (or file): see `shared`. */
export function sharedWorkspace(options: WorkspaceOptions = {}): Workspace {
  return shared("sharedWorkspace", () => createWorkspace(options), ["root", "dir", "db"]);
}
