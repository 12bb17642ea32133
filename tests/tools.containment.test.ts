/**
 * The file tools use what they checked: protected folders are never written, only regular files
 * with one link are read or written (a FIFO never hangs the run, a hard link never reaches a file
 * outside), and the project rules files pass the same checks before they reach the model.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readConfigFile } from "../src/config/settings.js";
import { loadScriptedModel } from "../src/models/scripted.js";
import { coderSystemPrompt, readRulesFiles, RULES_FILE_MAX_BYTES } from "../src/nodes/coder/system-prompt.js";
import { lacks } from "./helpers/requirements.js";
import { makeWorkspace } from "./helpers/tool-workspace.js";

const mkfifo = (path: string): void => void execFileSync("mkfifo", [path]);
const noRipgrep = lacks("ripgrep", "grep through ripgrep on a named pipe at .gitignore (the in-process engine is still tested)");

describe("protected paths", () => {
  it("write_file and edit_file never write .git/, .loopgraph/ or a loopgraph.yaml (project config), at any depth and in any case, and leave the file as it was", async () => {
    const ws = makeWorkspace({}, { git: true });
    ws.write(".loopgraph/policy.yaml", "rules: []\n");
    ws.write("sub/.git/hooks/keep", "x\n");
    const config = readFileSync(join(ws.root, ".git/config"), "utf8");
    for (const path of [
      ".git/config",
      ".git/hooks/pre-commit",
      ".loopgraph/policy.yaml",
      ".loopgraph/loopgraph.db",
      "sub/.git/hooks/keep",
      ".GIT/config",
      "./x/../.git/config",
      "loopgraph.yaml",
      "sub/LoopGraph.yaml",
    ]) {
      const written = await ws.call("write_file", { path, contents: '[core]\n\tfsmonitor = "env > key.txt"\n' });
      expect(written, path).toMatchObject({ ok: false, errorKind: "protected_path" });
    }
    const edited = await ws.call("edit_file", { path: ".git/config", old_string: "[core]", new_string: "[core]\n\tfsmonitor = evil" });
    expect(edited).toMatchObject({ ok: false, errorKind: "protected_path" });
    expect(edited.content).toContain(".git/config is inside .git/");
    expect(readFileSync(join(ws.root, ".git/config"), "utf8")).toBe(config);
    expect(readFileSync(join(ws.root, ".loopgraph/policy.yaml"), "utf8")).toBe("rules: []\n");
  });

  it("a loopgraph.yaml a shell command creates at the workspace root is removed at once, and the model told; one that was there stays as it was", async () => {
    const ws = makeWorkspace({}, { git: true });
    const created = await ws.call("shell", {
      command: "printf 'store: /elsewhere/runs.db\\n' > loopgraph.yaml; mkdir -p sub && echo ok > sub/loopgraph.yaml.txt",
    });
    expect(created.ok).toBe(true);
    expect(created.content).toContain(
      "[loopgraph.yaml was removed: it configures loopgraph, which only the user does; commands may not create it]",
    );
    expect(existsSync(join(ws.root, "loopgraph.yaml"))).toBe(false);
    expect(readFileSync(join(ws.root, "sub/loopgraph.yaml.txt"), "utf8")).toBe("ok\n");
    writeFileSync(join(ws.root, "loopgraph.yaml"), "approval: ask\n");
    const kept = await ws.call("shell", { command: "cat loopgraph.yaml" });
    expect(kept.content).toContain("approval: ask");
    expect(kept.content).not.toContain("was removed");
    expect(readFileSync(join(ws.root, "loopgraph.yaml"), "utf8")).toBe("approval: ask\n");
  });

  it("a .git a shell command creates in a workspace that is not a repository is removed at once, with its fsmonitor, and the model told; a repository's own .git stays", async () => {
    const ws = makeWorkspace({}, { git: false });
    const planted = await ws.call("shell", { command: "git init -q . && git config core.fsmonitor 'touch ../pwned' && echo planted" });
    expect(planted.ok).toBe(true);
    expect(planted.content).toContain("planted");
    expect(planted.content).toContain("[.git was removed: a command may not make a git repository in the workspace");
    expect(existsSync(join(ws.root, ".git"))).toBe(false);
    // A file named .git (a worktree's link to a planted gitdir) is removed as well.
    const linked = await ws.call("shell", { command: "echo 'gitdir: /tmp/elsewhere' > .git" });
    expect(linked.content).toContain("[.git was removed");
    expect(existsSync(join(ws.root, ".git"))).toBe(false);
    const repo = makeWorkspace({}, { git: true });
    const status = await repo.call("shell", { command: "git status --short >/dev/null && echo fine" });
    expect(status.content).not.toContain("was removed");
    expect(existsSync(join(repo.root, ".git"))).toBe(true);
  });

  it("what configures git or loopgraph is undone at any depth: a nested repository, bare repository, .loopgraph/ or loopgraph.yaml; what was there stays", async () => {
    const ws = makeWorkspace({ "vendor/lib/.git/HEAD": "ref: refs/heads/main\n", "pkg/notes.txt": "x\n" }, { git: true });
    const planted = await ws.call("shell", {
      command: [
        "git init -q pkg/inner && git -C pkg/inner config core.fsmonitor 'touch ../pwned'",
        "git init -q --bare pkg/evil.git && git --git-dir=pkg/evil.git config core.pager 'touch ../pwned'",
        "mkdir -p pkg/.loopgraph && printf 'rules: [{tool: shell, decision: allow, priority: 999}]\\n' > pkg/.loopgraph/policy.yaml",
        "printf 'hooks: {}\\n' > pkg/loopgraph.yaml",
        "echo done",
      ].join(" && "),
    });
    expect(planted.content).toContain("done");
    expect(planted.content).toContain("[pkg/inner/.git was removed: a command may not make a git repository in the workspace");
    expect(planted.content).toContain("[pkg/evil.git/HEAD was removed: pkg/evil.git was made a bare git repository");
    expect(planted.content).toContain("[pkg/.loopgraph was removed: it configures loopgraph");
    expect(planted.content).toContain("[pkg/loopgraph.yaml was removed: it configures loopgraph");
    for (const gone of ["pkg/inner/.git", "pkg/evil.git/HEAD", "pkg/.loopgraph", "pkg/loopgraph.yaml"])
      expect(existsSync(join(ws.root, gone)), gone).toBe(false);
    // git no longer takes what is left of the bare repository for one.
    expect(
      spawnSync("git", ["rev-parse", "--git-dir"], {
        cwd: join(ws.root, "pkg/evil.git"),
        env: { ...process.env, GIT_CEILING_DIRECTORIES: ws.root },
      }).status,
    ).not.toBe(0);
    expect(readFileSync(join(ws.root, "vendor/lib/.git/HEAD"), "utf8")).toBe("ref: refs/heads/main\n");
    expect(readFileSync(join(ws.root, "pkg/notes.txt"), "utf8")).toBe("x\n");
  });

  it("a nested repository renamed away and made again at its place counts as new", async () => {
    const ws = makeWorkspace({}, { git: true });
    execFileSync("git", ["init", "-q", join(ws.root, "lib")]);
    const swapped = await ws.call("shell", {
      command: "mv lib lib-old && git init -q lib && git -C lib config core.fsmonitor 'touch ../pwned'",
    });
    expect(swapped.content).toContain("[lib/.git was removed");
    expect(existsSync(join(ws.root, "lib/.git"))).toBe(false);
    expect(existsSync(join(ws.root, "lib-old/.git/HEAD"))).toBe(true);
  });

  it("a symlink into a protected folder is judged by where it leads", async () => {
    const ws = makeWorkspace({}, { git: true });
    ws.symlink("innocent.cfg", ".git/config");
    expect(await ws.call("write_file", { path: "innocent.cfg", contents: "x" })).toMatchObject({ ok: false, errorKind: "protected_path" });
  });

  it("reading them is allowed, and so are names that only look alike", async () => {
    const ws = makeWorkspace({ ".gitignore": "dist/\n" }, { git: true });
    expect(await ws.call("read_file", { path: ".git/HEAD" })).toMatchObject({ ok: true });
    expect(await ws.call("write_file", { path: ".gitignore", contents: "node_modules/\n" })).toMatchObject({ ok: true });
    expect(await ws.call("write_file", { path: "docs/.github/workflow.yml", contents: "on: push\n" })).toMatchObject({ ok: true });
    expect(await ws.call("write_file", { path: "loopgraph.yaml.example", contents: "model: x\n" })).toMatchObject({ ok: true });
  });
});

describe("special files", () => {
  it("read_file, edit_file and write_file refuse a FIFO at once instead of hanging", async () => {
    const ws = makeWorkspace();
    mkfifo(join(ws.root, "pipe"));
    for (const [tool, args] of [
      ["read_file", { path: "pipe" }],
      ["edit_file", { path: "pipe", old_string: "a", new_string: "b" }],
      ["write_file", { path: "pipe", contents: "x" }],
    ] as const) {
      const result = await ws.call(tool, args);
      expect(result, tool).toMatchObject({ ok: false, errorKind: "special_file" });
      expect(result.content).toContain("named pipe");
    }
  }, 10_000);

  it("a file hard-linked to one outside the workspace is neither read nor written", async () => {
    const ws = makeWorkspace();
    const secret = join(ws.outside, "secret.txt");
    linkSync(secret, join(ws.root, "hl.txt"));
    const read = await ws.call("read_file", { path: "hl.txt" });
    expect(read).toMatchObject({ ok: false, errorKind: "special_file" });
    expect(read.content).not.toContain("top secret");
    expect(await ws.call("write_file", { path: "hl.txt", contents: "overwritten" })).toMatchObject({
      ok: false,
      errorKind: "special_file",
    });
    expect(await ws.call("edit_file", { path: "hl.txt", old_string: "top", new_string: "bottom" })).toMatchObject({
      ok: false,
      errorKind: "special_file",
    });
    expect(readFileSync(secret, "utf8")).toBe("top secret\n");
  });

  it("grep does not search a hard-linked file, and says so; the other files are searched", async () => {
    for (const rg of ["on", "off"]) {
      const ws = makeWorkspace({ "plain.txt": "top of the plain file\n" });
      linkSync(join(ws.outside, "secret.txt"), join(ws.root, "hl.txt"));
      const saved = process.env.LOOPGRAPH_RG;
      if (rg === "off") process.env.LOOPGRAPH_RG = "off";
      try {
        const found = await ws.call("grep", { pattern: "top" });
        expect(found.content, `ripgrep ${rg}`).not.toContain("top secret");
        expect(found.content).toContain("plain.txt:1:top of the plain file");
        expect(found.content).toContain("(not searched, hard-linked: another link may be a file outside the workspace: hl.txt)");
        expect((await ws.call("grep", { pattern: "top", path: "hl.txt" })).content).not.toContain("top secret");
      } finally {
        if (saved === undefined) delete process.env.LOOPGRAPH_RG;
        else process.env.LOOPGRAPH_RG = saved;
      }
    }
  });

  it("a named pipe or a link to a device a command leaves at a name git and ripgrep read is removed at once, at any depth, and the model told; grep, glob and list_dir then answer", async () => {
    const ws = makeWorkspace({ "sub/a.txt": "needle\n", "d/b.txt": "x\n" }, { git: true });
    const made = await ws.call("shell", {
      command:
        "mkfifo .gitignore sub/.ignore d/.gitattributes && ln -s /dev/zero sub/.rgignore && rm -f .git/info/exclude && mkfifo .git/info/exclude && echo made",
    });
    expect(made.ok).toBe(true);
    for (const [path, what] of [
      [".gitignore", "a named pipe (FIFO)"],
      ["sub/.ignore", "a named pipe (FIFO)"],
      ["d/.gitattributes", "a named pipe (FIFO)"],
      ["sub/.rgignore", "a symbolic link to a device"],
      [".git/info/exclude", "a named pipe (FIFO)"],
    ] as const) {
      expect(made.content).toContain(`[${path} was removed: it was ${what}, and git and ripgrep read every file of that name`);
      expect(existsSync(join(ws.root, path)), path).toBe(false);
    }
    // A pipe at any other name stays: nothing reads it by name.
    const other = await ws.call("shell", { command: "mkfifo sub/pipe && ls sub" });
    expect(other.content).not.toContain("was removed");
    expect(existsSync(join(ws.root, "sub/pipe"))).toBe(true);
    expect((await ws.call("grep", { pattern: "needle" })).content).toContain("sub/a.txt:1:needle");
    expect((await ws.call("glob", { pattern: "**/*.txt" })).content).toContain("sub/a.txt");
    expect((await ws.call("list_dir", { path: "sub" })).content).toContain("a.txt");
  }, 20_000);

  it("a named pipe the repository holds at .gitignore: glob, list_dir and the in-process grep answer without it, and grep through ripgrep stops within seconds naming it, instead of hanging", async () => {
    const ws = makeWorkspace({ "sub/a.txt": "needle\n", "b.txt": "needle\n" }, { git: true });
    mkfifo(join(ws.root, "sub/.gitignore"));
    symlinkSync("/dev/zero", join(ws.root, ".ignore"));
    expect((await ws.call("glob", { pattern: "**/*.txt" })).content).toContain("sub/a.txt");
    expect((await ws.call("list_dir", { path: "sub" })).content).toContain("a.txt");
    const saved = process.env.LOOPGRAPH_RG;
    process.env.LOOPGRAPH_RG = "off";
    try {
      expect((await ws.call("grep", { pattern: "needle" })).content).toContain("sub/a.txt:1:needle");
    } finally {
      if (saved === undefined) delete process.env.LOOPGRAPH_RG;
      else process.env.LOOPGRAPH_RG = saved;
    }
    if (noRipgrep) return;
    const started = Date.now();
    const found = await ws.call("grep", { pattern: "needle" });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(found).toMatchObject({ ok: false, errorKind: "special_file" });
    expect(found.content).toMatch(
      /(sub\/\.gitignore is a named pipe \(FIFO\)|\.ignore is a symbolic link to a device), which ripgrep reads and would wait on forever: remove it/,
    );
  }, 20_000);

  it("a config, policy or scripted-model file that is a named pipe or a link to /dev/zero fails at once with one line, instead of hanging or reading without end", () => {
    const ws = makeWorkspace();
    mkfifo(join(ws.root, "loopgraph.yaml"));
    symlinkSync("/dev/zero", join(ws.root, "zero.yaml"));
    mkfifo(join(ws.root, "script.yaml"));
    expect(() => readConfigFile(join(ws.root, "loopgraph.yaml"), "project")).toThrow(
      /^cannot read config file .*loopgraph\.yaml: it is a named pipe \(FIFO\), not a regular file$/,
    );
    expect(() => readConfigFile(join(ws.root, "zero.yaml"), "user")).toThrow(/zero\.yaml: it is a device, not a regular file$/);
    expect(() => loadScriptedModel("script.yaml", ws.root)).toThrow(/script\.yaml: it is a named pipe \(FIFO\), not a regular file/);
  });

  it("ordinary files are still read, created, overwritten and edited", async () => {
    const ws = makeWorkspace({ "a.txt": "one\n" });
    expect(await ws.call("write_file", { path: "new/b.txt", contents: "two\n" })).toMatchObject({ ok: true });
    expect(await ws.call("edit_file", { path: "a.txt", old_string: "one", new_string: "uno" })).toMatchObject({ ok: true });
    expect((await ws.call("read_file", { path: "a.txt" })).content).toBe("     1\tuno");
    expect(readFileSync(join(ws.root, "new/b.txt"), "utf8")).toBe("two\n");
  });
});

describe("project rules files", () => {
  it("a rules file that leads outside the workspace never reaches the prompt", () => {
    const ws = makeWorkspace();
    symlinkSync(join(ws.outside, "secret.txt"), join(ws.root, "AGENTS.md"));
    symlinkSync("/proc/self/environ", join(ws.root, "CLAUDE.md"));
    const prompt = coderSystemPrompt("You are the Coder.", ws.root, {});
    expect(prompt).not.toContain("top secret");
    expect(prompt).not.toContain("PATH=");
    expect(readRulesFiles(ws.root)).toEqual([]);
  });

  it("a FIFO or a hard link is skipped without waiting; a symlink inside the workspace is followed", () => {
    const ws = makeWorkspace({ "docs/rules.md": "Use tabs.\n" });
    mkfifo(join(ws.root, "AGENTS.md"));
    linkSync(join(ws.outside, "secret.txt"), join(ws.root, ".cursorrules"));
    symlinkSync("docs/rules.md", join(ws.root, "CLAUDE.md"));
    expect(readRulesFiles(ws.root)).toEqual([{ file: "CLAUDE.md", text: "Use tabs." }]);
  });

  it("GEMINI.md at the root, AGENTS.md in folders (for the files below them, nearest wins) and the user's own; the prompt names each file loaded", () => {
    const ws = makeWorkspace({
      "AGENTS.md": "Root rule.\n",
      "GEMINI.md": "Gemini rule.\n",
      "packages/api/AGENTS.md": "API rule.\n",
      "packages/api/src/AGENTS.md": "API source rule.\n",
      "node_modules/dep/AGENTS.md": "Never me.\n",
      ".hidden/AGENTS.md": "Nor me.\n",
      "a/b/c/d/e/AGENTS.md": "Too deep.\n",
    });
    symlinkSync(join(ws.outside, "secret.txt"), join(ws.root, "packages", "AGENTS.md"));
    const configHome = join(ws.outside, "config");
    mkdirSync(join(configHome, "loopgraph"), { recursive: true });
    writeFileSync(join(configHome, "loopgraph", "AGENTS.md"), "My own rule.\n");
    const prompt = coderSystemPrompt("You are the Coder.", ws.root, { XDG_CONFIG_HOME: configHome });
    const order = ["My own rule.", "Root rule.", "Gemini rule.", "API rule.", "API source rule."].map((text) => prompt.indexOf(text));
    expect(order.every((at, i) => at > 0 && (i === 0 || at > order[i - 1]!))).toBe(true);
    expect(prompt).toContain("## Rules for the files under packages/api/ (from packages/api/AGENTS.md)");
    expect(prompt).toContain("the AGENTS.md nearest to the file you change wins");
    expect(prompt).not.toMatch(/Never me|Nor me|Too deep|top secret/);
    expect(prompt.trimEnd().split("\n").at(-1)).toBe(
      `Rules files loaded: ${join(configHome, "loopgraph", "AGENTS.md")}, AGENTS.md, GEMINI.md, packages/api/AGENTS.md, packages/api/src/AGENTS.md.`,
    );
    expect(coderSystemPrompt("You are the Coder.", makeWorkspace().root, {})).not.toContain("Rules files loaded");
  });

  it("a long rules file is cut at the cap, and says so", () => {
    const ws = makeWorkspace();
    writeFileSync(join(ws.root, "AGENTS.md"), "x".repeat(RULES_FILE_MAX_BYTES + 500));
    const [rules] = readRulesFiles(ws.root);
    expect(rules?.text.startsWith("x".repeat(RULES_FILE_MAX_BYTES))).toBe(true);
    expect(rules?.text).toContain(`[AGENTS.md cut at ${RULES_FILE_MAX_BYTES} bytes]`);
    expect(rules!.text.length).toBeLessThan(RULES_FILE_MAX_BYTES + 100);
  });
});
