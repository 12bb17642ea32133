import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { alwaysAnswerFor, decideToolCall } from "../src/policy/gate.js";
import type { PolicyCall } from "../src/policy/evaluate.js";
import type { PolicyRule } from "../src/state/rules.js";
import type { ApprovalMode } from "../src/state/thread.js";
import { sharedTempDir } from "./helpers/workspace.js";

const folder = sharedTempDir("loopgraph-gate-");
let workspace: string;
beforeAll(() => {
  workspace = folder.path;
  mkdirSync(join(workspace, "src"));
});

const decide = (call: PolicyCall, rules: PolicyRule[] = [], mode: ApprovalMode = "ask") => decideToolCall(call, { rules, mode, workspace });
const shell = (command: string): PolicyCall => ({ name: "shell", args: { command } });

/** Asks, answers "always", and returns the session rule plus how later calls are decided with it. */
function approveAlways(call: PolicyCall, rules: PolicyRule[] = []) {
  const gate = decide(call, rules);
  if (gate.kind !== "ask") throw new Error(`expected ask, got ${gate.kind}`);
  const { rule, description } = alwaysAnswerFor(call, gate.verdict);
  return { rule, description, later: (next: PolicyCall) => decide(next, [...rules, rule]).kind };
}

describe("decideToolCall", () => {
  it("runs allowed calls, asks with the verdict, and blocks with a tool result", () => {
    expect(decide({ name: "read_file", args: { path: "src/a.ts" } })).toMatchObject({ kind: "run", verdict: { decision: "allow" } });
    expect(decide(shell("ls"))).toMatchObject({ kind: "ask", verdict: { decision: "ask", reason: expect.stringContaining("approval") } });
    const blocked = decide(shell("echo hi && rm -rf ~"), [], "auto");
    expect(blocked).toMatchObject({ kind: "blocked", verdict: { decision: "deny", subject: "rm -rf ~" } });
    if (blocked.kind !== "blocked") throw new Error("unreachable");
    expect(blocked.result).toEqual({
      ok: false,
      errorKind: "blocked",
      content: "Blocked by policy: `rm -rf ~`: deletes the whole file system or your home directory",
    });
  });

  it("blocks a path outside the workspace with the reason the model needs", () => {
    const gate = decide({ name: "read_file", args: { path: "../x" } }, [], "auto");
    expect(gate.kind).toBe("blocked");
    expect(gate.kind === "blocked" && gate.result.content).toMatch(/^Blocked by policy: \.\.\/x is outside the workspace/);
  });
});

describe("alwaysAnswerFor: what an 'always' approval allows from then on", () => {
  it("a file edit asked by the mode allows that tool everywhere in the workspace, at priority 0", () => {
    const { rule, description, later } = approveAlways({ name: "write_file", args: { path: "src/a.ts", contents: "" } });
    expect(rule).toEqual({
      tool: "write_file",
      decision: "allow",
      priority: 0,
      source: "session",
      reason: 'approved with "always" in this session',
    });
    expect(description).toBe("write_file anywhere in the workspace, for the rest of this thread");
    expect(later({ name: "write_file", args: { path: "lib/b.ts", contents: "" } })).toBe("run");
    expect(later({ name: "edit_file", args: { path: "lib/b.ts", old_string: "a", new_string: "b" } })).toBe("ask");
    expect(later({ name: "write_file", args: { path: ".env", contents: "" } })).toBe("ask");
    expect(later({ name: "write_file", args: { path: "../escape.ts", contents: "" } })).toBe("blocked");
  });

  it("a sensitive file allows exactly that path, one above the rule that asked", () => {
    const { rule, description, later } = approveAlways({ name: "read_file", args: { path: "config/.env" } });
    expect(rule).toMatchObject({ tool: "read_file", pattern: String.raw`^config/\.env$`, priority: 101 });
    expect(description).toBe("read_file of exactly config/.env, for the rest of this thread");
    expect(later({ name: "read_file", args: { path: "config/.env" } })).toBe("run");
    expect(later({ name: "read_file", args: { path: ".env" } })).toBe("ask");
  });

  it("a read-only shell command allows its program (and subcommand) with read-only options", () => {
    const git = approveAlways(shell("git status --short"));
    expect(git.rule).toEqual({
      tool: "shell",
      decision: "allow",
      priority: 0,
      source: "session",
      reason: 'approved with "always" in this session',
      commands: [{ name: "git", subcommand: "status", readOnly: true }],
    });
    expect(git.description).toBe("`git status` with read-only options, for the rest of this thread");
    expect(git.later(shell("git status"))).toBe("run");
    expect(git.later(shell("git status -sb -- src"))).toBe("run");
    expect(git.later(shell("git push"))).toBe("ask");
    expect(git.later(shell("git log"))).toBe("ask");
    expect(git.later(shell("git status && rm -rf build"))).toBe("ask");

    const ls = approveAlways(shell("ls -la src"));
    expect(ls.later(shell("ls"))).toBe("run");
    expect(ls.later(shell("ls -R docs 2>/dev/null"))).toBe("run");
    expect(ls.later(shell("lsof"))).toBe("ask");
  });

  it("covers every part that asked, and only those; commands that run project scripts stay exact", () => {
    const allowEcho: PolicyRule = { tool: "shell", pattern: "^echo ", decision: "allow", priority: 0, source: "user" };
    const { rule, description, later } = approveAlways(shell("echo start && npm test && make lint && git diff --stat"), [allowEcho]);
    expect(rule).toMatchObject({ pattern: "^(?:npm test$|make lint$)", commands: [{ name: "git", subcommand: "diff", readOnly: true }] });
    expect(description).toBe(
      "`git diff` with read-only options, and exactly `npm test`, and exactly `make lint`, for the rest of this thread",
    );
    expect(later(shell("npm test; make lint; git diff HEAD~1"))).toBe("run");
    // `npm test` runs whatever package.json says: other arguments are another command.
    expect(later(shell("npm test -- --watch=false"))).toBe("ask");
    expect(later(shell("make install"))).toBe("ask");
  });

  it("commands that delete, download or run inline code stay exact", () => {
    const rm = approveAlways(shell("rm -rf build"));
    expect(rm.rule.pattern).toBe("^rm -rf build$");
    expect(rm.description).toBe("exactly `rm -rf build`, for the rest of this thread");
    expect(rm.later(shell("rm -rf build"))).toBe("run");
    expect(rm.later(shell("rm -rf src"))).toBe("ask");
    expect(approveAlways(shell("python3 -c 'print(1)'")).rule.pattern).toBe("^python3 -c 'print\\(1\\)'$");
  });

  it("a command a rule asked about allows exactly that command, one above the rule", () => {
    const { rule, description, later } = approveAlways(shell("git push --force origin feature"));
    expect(rule).toMatchObject({ pattern: "^git push --force origin feature$", priority: 101 });
    expect(description).toBe("exactly `git push --force origin feature`, for the rest of this thread");
    expect(later(shell("git push --force origin feature"))).toBe("run");
    expect(later(shell("git push --force origin main"))).toBe("ask");
  });

  it("never lifts a deny, even one written by the user below the asking rule", () => {
    const denyMain: PolicyRule = { tool: "shell", pattern: "origin main", decision: "deny", priority: 500, source: "user" };
    const { later } = approveAlways(shell("git push --force origin feature"), [denyMain]);
    expect(later(shell("git push --force origin main"))).toBe("blocked");
    expect(decide(shell("rm -rf /"), [{ tool: "shell", decision: "allow", priority: 0, source: "session" }], "ask").kind).toBe("blocked");
  });

  it("another tool allows any arguments, and says so", () => {
    const { rule, description, later } = approveAlways({ name: "deploy", args: { target: "staging" } });
    expect(rule).toEqual({
      tool: "deploy",
      decision: "allow",
      priority: 0,
      source: "session",
      reason: 'approved with "always" in this session',
    });
    expect(description).toBe("deploy with any arguments, for the rest of this thread");
    expect(later({ name: "deploy", args: { target: "prod" } })).toBe("run");
  });
});

describe("'always' for a shell command: only options that neither write nor execute", () => {
  /** After "always" on `approved`, how each of `later` is decided. */
  const after = (approved: string, later: string[]) => {
    const always = approveAlways(shell(approved));
    return Object.fromEntries(later.map((command) => [command, always.later(shell(command))]));
  };

  it("echo: no expansion that can run code, no write", () => {
    expect(
      after("echo hi", [
        "echo hello world",
        "echo -n hi 2>&1 >/dev/null",
        'echo "${v=`cat /secret`}${v@P}"',
        "echo ${v@P}",
        "echo $((a[$(id)]))",
        "echo $HOME",
        "echo hi > out.txt",
        "echo hi >> ~/.bashrc",
        "echo hi | sh",
        "X=1 echo hi",
        "/tmp/bin/echo hi",
        "command echo hi",
        "echo <<< x",
      ]),
    ).toEqual({
      "echo hello world": "run",
      "echo -n hi 2>&1 >/dev/null": "run",
      'echo "${v=`cat /secret`}${v@P}"': "ask",
      "echo ${v@P}": "ask",
      "echo $((a[$(id)]))": "ask",
      "echo $HOME": "ask",
      "echo hi > out.txt": "ask",
      "echo hi >> ~/.bashrc": "blocked",
      "echo hi | sh": "ask",
      "X=1 echo hi": "ask",
      "/tmp/bin/echo hi": "ask",
      "command echo hi": "ask",
      "echo <<< x": "ask",
    });
  });

  it("sed: only printing lines by number; its scripts can write and execute", () => {
    expect(
      after("sed -n '1,20p' a.txt", [
        "sed -n '5,9p' b.txt",
        "sed -n -e 3p a.txt",
        "sed -n '1p;w x' a.txt",
        "sed -n 1p -i a.txt",
        "sed 's/a/b/e' a.txt",
        "sed -f s.sed a.txt",
      ]),
    ).toEqual({
      "sed -n '5,9p' b.txt": "run",
      "sed -n -e 3p a.txt": "run",
      "sed -n '1p;w x' a.txt": "ask",
      "sed -n 1p -i a.txt": "ask",
      "sed 's/a/b/e' a.txt": "ask",
      "sed -f s.sed a.txt": "ask",
    });
    const substitute = approveAlways(shell("sed 's/a/b/' f.txt"));
    expect(substitute.rule.pattern).toBe("^sed 's/a/b/' f\\.txt$");
    expect(substitute.description).toBe("exactly `sed 's/a/b/' f.txt`, for the rest of this thread");
  });

  it("awk, python, node: exactly as approved", () => {
    expect(after("awk '{print $1}' f.txt", ["awk '{print $1}' f.txt", "awk '{print $2}' f.txt", "awk 'BEGIN{system(\"id\")}'"])).toEqual({
      "awk '{print $1}' f.txt": "run",
      "awk '{print $2}' f.txt": "ask",
      "awk 'BEGIN{system(\"id\")}'": "ask",
    });
    expect(after("node --version", ["node --version", "node -e 'process.exit()'"])).toEqual({
      "node --version": "run",
      "node -e 'process.exit()'": "ask",
    });
  });

  it("find: no action that deletes, runs or writes a file", () => {
    expect(
      after("find . -name '*.ts'", [
        "find src -type f -maxdepth 2 -print0",
        "find . \\( -name a -o -name b \\) -not -path './x/*'",
        "find . -mtime -7 -size +1M",
        "find . -delete",
        "find . -exec rm {} \\;",
        "find . -execdir ls \\;",
        "find . -ok rm {} \\;",
        "find . -fprint out.txt",
        "find . -fprintf out.txt %p",
        "find . -fls out.txt",
      ]),
    ).toEqual({
      "find src -type f -maxdepth 2 -print0": "run",
      "find . \\( -name a -o -name b \\) -not -path './x/*'": "run",
      "find . -mtime -7 -size +1M": "run",
      "find . -delete": "ask",
      "find . -exec rm {} \\;": "ask",
      "find . -execdir ls \\;": "ask",
      "find . -ok rm {} \\;": "ask",
      "find . -fprint out.txt": "ask",
      "find . -fprintf out.txt %p": "ask",
      "find . -fls out.txt": "ask",
    });
  });

  it("rg and grep: no preprocessor", () => {
    expect(
      after("rg foo", [
        "rg -n -i bar src",
        "rg -g '*.ts' -e x",
        "rg --pre ./x foo",
        "rg --pre=./x foo",
        "rg -z foo",
        "rg --hostname-bin ./x foo",
      ]),
    ).toEqual({
      "rg -n -i bar src": "run",
      "rg -g '*.ts' -e x": "run",
      "rg --pre ./x foo": "ask",
      "rg --pre=./x foo": "ask",
      "rg -z foo": "ask",
      "rg --hostname-bin ./x foo": "ask",
    });
    expect(after("grep -rn foo src", ["grep -e x -A 3 --include='*.ts' -r .", "grep -5 x f", "grep x f > out"])).toEqual({
      "grep -e x -A 3 --include='*.ts' -r .": "run",
      "grep -5 x f": "run",
      "grep x f > out": "ask",
    });
  });

  it("tar: listing only", () => {
    expect(
      after("tar -tf a.tar", [
        "tar -tvzf b.tgz",
        "tar --list --file=b.tar",
        "tar -xf a.tar",
        "tar -cf out.tar src",
        "tar -tf a.tar --to-command=sh",
        "tar -t -I ./x -f a.tar",
        "tar -tf host:a.tar",
        "tar tf a.tar",
      ]),
    ).toEqual({
      "tar -tvzf b.tgz": "run",
      "tar --list --file=b.tar": "run",
      "tar -xf a.tar": "ask",
      "tar -cf out.tar src": "ask",
      "tar -tf a.tar --to-command=sh": "ask",
      "tar -t -I ./x -f a.tar": "ask",
      "tar -tf host:a.tar": "ask",
      "tar tf a.tar": "ask",
    });
    expect(approveAlways(shell("tar -xf a.tar")).rule.pattern).toBe("^tar -xf a\\.tar$");
  });

  it("git: read-only subcommands, without output files, external diff, textconv or global options", () => {
    expect(
      after("git log --oneline", [
        "git log -n 3 --stat",
        "git log -5 --format=%H main..HEAD -- src",
        "git --no-pager log -p",
        "git log --output=x",
        "git log --ext-diff",
        "git log --textconv",
        "git log --show-signature",
        "git -c core.pager=sh log",
        "git -C .. log",
        "git --exec-path=. log",
        "GIT_EXTERNAL_DIFF=./x git log -p",
      ]),
    ).toEqual({
      "git log -n 3 --stat": "run",
      "git log -5 --format=%H main..HEAD -- src": "run",
      "git --no-pager log -p": "run",
      "git log --output=x": "ask",
      "git log --ext-diff": "ask",
      "git log --textconv": "ask",
      "git log --show-signature": "ask",
      "git -c core.pager=sh log": "ask",
      "git -C .. log": "ask",
      "git --exec-path=. log": "ask",
      "GIT_EXTERNAL_DIFF=./x git log -p": "ask",
    });
    expect(
      after("git diff", ["git diff --cached --stat", "git diff --output=x", "git diff --ext-diff", "git show --output=x HEAD"]),
    ).toEqual({
      "git diff --cached --stat": "run",
      "git diff --output=x": "ask",
      "git diff --ext-diff": "ask",
      "git show --output=x HEAD": "ask",
    });
    expect(
      after("git branch --list", [
        "git branch -a -v",
        "git branch --list 'feat*'",
        "git branch new",
        "git branch -D old",
        "git branch -m a b",
      ]),
    ).toEqual({
      "git branch -a -v": "run",
      "git branch --list 'feat*'": "run",
      "git branch new": "ask",
      "git branch -D old": "ask",
      "git branch -m a b": "ask",
    });
  });

  it("sort and uniq: no output file", () => {
    expect(
      after("sort a.txt", [
        "sort -rn -k 2 a.txt",
        "sort -o out.txt a.txt",
        "sort -oout.txt a.txt",
        "sort --output=out a",
        "sort -T /tmp a",
        "sort --compress-program=sh a",
      ]),
    ).toEqual({
      "sort -rn -k 2 a.txt": "run",
      "sort -o out.txt a.txt": "ask",
      "sort -oout.txt a.txt": "ask",
      "sort --output=out a": "ask",
      "sort -T /tmp a": "ask",
      "sort --compress-program=sh a": "ask",
    });
    expect(after("uniq -c a.txt", ["uniq a.txt", "uniq a.txt b.txt"])).toEqual({ "uniq a.txt": "run", "uniq a.txt b.txt": "ask" });
  });

  it("the redirections a covered command may have: reading a file, discarding output", () => {
    expect(
      after("cat a.txt", [
        "cat < in.txt",
        "cat a 2>/dev/null",
        "cat a &>/dev/null",
        "cat a 2>&1",
        "cat a > b",
        "cat a >> b",
        "cat a 2> err",
        "cat < /dev/tcp/example.com/80",
        "cat <> a",
        "cat <(curl x)",
      ]),
    ).toEqual({
      "cat < in.txt": "run",
      "cat a 2>/dev/null": "run",
      "cat a &>/dev/null": "run",
      "cat a 2>&1": "run",
      "cat a > b": "ask",
      "cat a >> b": "ask",
      "cat a 2> err": "ask",
      "cat < /dev/tcp/example.com/80": "ask",
      "cat <> a": "ask",
      "cat <(curl x)": "ask",
    });
  });

  it("never covers what the built-in rules ask about or deny", () => {
    expect(after("cat README.md", ["cat .env", "cat .en?", "cat ~/.ssh/id_rsa"])).toEqual({
      "cat .env": "ask",
      "cat .en?": "ask",
      "cat ~/.ssh/id_rsa": "blocked",
    });
  });

  it("covers the plain command approved, not one nested in a subshell, a substitution or another shell", () => {
    const plain = ["ls -la", "ls && ls -a"];
    const nested = ["(ls)", "ls || (ls -a)", "echo $(ls)", "bash -c ls"];
    const expected = Object.fromEntries([...plain.map((command) => [command, "run"]), ...nested.map((command) => [command, "ask"])]);
    expect(after("ls", [...plain, ...nested])).toEqual(expected);
  });

  it("a command approved nested is covered nested too, and says so", () => {
    const { rule, description, later } = approveAlways(shell("(ls -la)"));
    expect(rule.commands).toEqual([{ name: "ls", readOnly: true, nested: true }]);
    expect(description).toBe("`ls` with read-only options, also nested (in a subshell or a substitution), for the rest of this thread");
    expect(later(shell("(ls)"))).toBe("run");
    expect(later(shell("ls -R"))).toBe("run");
    expect(later(shell("(ls > out.txt)"))).toBe("ask");
  });
});
