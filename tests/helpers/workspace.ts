/**
 * Temporary workspaces for tests, removed by vitest itself: no `cleanups` array and `afterEach` in
 * the test files.
 *
 *   const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } }); // inside a test
 *   ws.dir  // the workspace: <root>/repo
 *   ws.db   // a store path beside it: <root>/store.db
 *
 * Inside a test, `tempWorkspace` and `onCleanup` register their clean-up with `onTestFinished`
 * (run in reverse order of registration, also when the test fails). A set-up shared by the tests
 * of a describe block calls `sharedWorkspace` in the describe body instead: it creates the
 * workspace in a `beforeAll` and removes it in an `afterAll`.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

/** Creates a workspace now; the caller decides when `remove` runs. */
export function createWorkspace(options: WorkspaceOptions = {}): Workspace & { remove: () => void } {
  const root = mkdtempSync(join(tmpdir(), options.prefix ?? "loopgraph-test-"));
  const dir = join(root, "repo");
  mkdirSync(dir);
  const remove = () => rmSync(root, { recursive: true, force: true });
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

/**
 * One workspace for the tests of the enclosing describe block (or file): call it in the describe
 * body. It is made in a `beforeAll` (registered here, so it runs before the block's own
 * `beforeAll`s that come after this call) and removed in an `afterAll`. Its fields can be read once
 * the `beforeAll` has run.
 */
export function sharedWorkspace(options: WorkspaceOptions = {}): Workspace {
  let current: (Workspace & { remove: () => void }) | undefined;
  beforeAll(() => {
    current = createWorkspace(options);
  });
  afterAll(() => {
    current?.remove();
    current = undefined;
  });
  const get = (): Workspace => {
    if (!current) throw new Error("sharedWorkspace: read before its beforeAll ran (or after its afterAll)");
    return current;
  };
  return {
    get root() {
      return get().root;
    },
    get dir() {
      return get().dir;
    },
    get db() {
      return get().db;
    },
  };
}
