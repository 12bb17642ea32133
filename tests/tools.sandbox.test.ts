/**
 * The shell tool inside bubblewrap: the workspace is writable but for .git/ and .loopgraph/, the
 * rest of the file system is read-only, /tmp and home are private and empty, there is no network,
 * no credential in the environment, and nothing the command started outlives the step.
 * Skipped where bubblewrap cannot start, except under LOOPGRAPH_REQUIRE_SANDBOX=1 (CI).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { availableSandbox, BUBBLEWRAP, bubblewrap } from "../src/tools/sandbox.js";
import { makeWorkspace } from "./helpers/tool-workspace.js";
import { ROOT } from "./helpers/cli.js";
import { lacks } from "./helpers/requirements.js";
import { onCleanup, tempDir } from "./helpers/workspace.js";

const noBubblewrap = lacks("sandbox", "the shell tool's bubblewrap tests");
const sandboxed = (files: Record<string, string> = {}) => makeWorkspace(files, { git: true, sandbox: BUBBLEWRAP });

describe.skipIf(noBubblewrap)("the shell tool in bubblewrap", () => {
  it("writes in the workspace, not in .git/, .loopgraph/, loopgraph.yaml or anywhere outside it", async () => {
    const ws = sandboxed();
    ws.write(".loopgraph/policy.yaml", "rules: []\n");
    ws.write("loopgraph.yaml", "approval: ask\n");
    const outside = join(ws.outside, "escape.txt");
    const result = await ws.call("shell", {
      command: [
        "echo inside > made.txt",
        `echo x > ${outside} 2>/dev/null || echo blocked-outside`,
        "echo '[core] fsmonitor = evil' >> .git/config 2>/dev/null || echo blocked-git",
        "echo 'rules: [{tool: shell, decision: allow, priority: 999}]' > .loopgraph/policy.yaml 2>/dev/null || echo blocked-loopgraph",
        "echo 'store: postgres://evil.example/db' > loopgraph.yaml 2>/dev/null || echo blocked-project-config",
        `touch ${join(homedir(), ".loopgraph-sandbox-test")} && ls -a ~ | wc -l`,
      ].join("; "),
    });
    expect(result.content).toContain("blocked-outside");
    expect(result.content).toContain("blocked-git");
    expect(result.content).toContain("blocked-loopgraph");
    expect(result.content).toContain("blocked-project-config");
    expect(readFileSync(join(ws.root, "loopgraph.yaml"), "utf8")).toBe("approval: ask\n");
    expect(readFileSync(join(ws.root, "made.txt"), "utf8")).toBe("inside\n");
    expect(existsSync(outside)).toBe(false);
    expect(readFileSync(join(ws.root, ".git/config"), "utf8")).not.toContain("fsmonitor");
    expect(readFileSync(join(ws.root, ".loopgraph/policy.yaml"), "utf8")).toBe("rules: []\n");
    // The home directory the command saw was a private, empty one.
    expect(existsSync(join(homedir(), ".loopgraph-sandbox-test"))).toBe(false);
  });

  it("keeps every .git, .loopgraph/, loopgraph.yaml and bare repository read-only at any depth, and shows no host folder a planted link names", async () => {
    const ws = sandboxed();
    execFileSync("git", ["init", "-q", join(ws.root, "vendor/lib")]);
    execFileSync("git", ["init", "-q", "--bare", join(ws.root, "remotes/origin.git")]);
    ws.write("pkg/.loopgraph/policy.yaml", "rules: []\n");
    ws.write("pkg/loopgraph.yaml", "approval: ask\n");
    // A link named .git to a host folder: binding its target read-only would show that folder to the command.
    writeFileSync(join(ws.outside, "private.txt"), "host-only\n");
    ws.symlink("linked/.git", ws.outside);
    const result = await ws.call("shell", {
      command: [
        "git -C vendor/lib config core.fsmonitor 'touch pwned' 2>/dev/null || echo blocked-nested-git",
        "git --git-dir=remotes/origin.git config core.pager 'touch pwned' 2>/dev/null || echo blocked-bare",
        "echo 'rules: [{tool: shell, decision: allow, priority: 999}]' > pkg/.loopgraph/policy.yaml 2>/dev/null || echo blocked-nested-state",
        "echo 'hooks: {}' > pkg/loopgraph.yaml 2>/dev/null || echo blocked-nested-config",
        "cat linked/.git/private.txt 2>/dev/null || echo hidden-link-target",
      ].join("; "),
    });
    for (const word of ["blocked-nested-git", "blocked-bare", "blocked-nested-state", "blocked-nested-config", "hidden-link-target"])
      expect(result.content).toContain(word);
    expect(readFileSync(join(ws.root, "vendor/lib/.git/config"), "utf8")).not.toContain("fsmonitor");
    expect(readFileSync(join(ws.root, "remotes/origin.git/config"), "utf8")).not.toContain("pager");
    expect(readFileSync(join(ws.root, "pkg/.loopgraph/policy.yaml"), "utf8")).toBe("rules: []\n");
    expect(readFileSync(join(ws.root, "pkg/loopgraph.yaml"), "utf8")).toBe("approval: ask\n");
  });

  it("sees only the system's folders besides the workspace: no other project, no /run or /var/run, no /etc secrets, no host socket", async () => {
    // A project beside this one (the checkout the tests run from), with a socket a host process listens on.
    const other = tempDir(".tmp-sandbox-other-", ROOT);
    writeFileSync(join(other, "secret.txt"), "other project's secret\n");
    const socket = join(other, "host.sock");
    const listener = createServer((connection) => {
      connection.end("host socket reached\n");
    }).listen(socket);
    onCleanup(() => void listener.close());
    const ws = sandboxed();
    const probe = `require("net").connect(${JSON.stringify(socket)}).on("data", (d) => console.log(String(d))).on("error", () => console.log("socket-unreachable"))`;
    const result = await ws.call("shell", {
      command: [
        `cat ${other}/secret.txt 2>/dev/null || echo no-other-project`,
        "test -e /run || echo no-run",
        "test -e /var/run || echo no-var-run",
        "test -e /srv || echo no-srv",
        "test -s /etc/shadow && echo shadow-readable || true",
        "cat /etc/hostname >/dev/null && echo can-read-etc",
        `node -e '${probe}'`,
        "git --version >/dev/null && echo git-runs",
      ].join("; "),
    });
    for (const seen of ["no-other-project", "no-run", "no-var-run", "no-srv", "can-read-etc", "socket-unreachable", "git-runs"])
      expect(result.content).toContain(seen);
    expect(result.content).not.toContain("other project's secret");
    expect(result.content).not.toContain("shadow-readable");
    expect(result.content).not.toContain("host socket reached");
  });

  it("opens the folders the user's policy names: read ones read-only, write ones writable", async () => {
    const opened = tempDir(".tmp-sandbox-open-", ROOT);
    mkdirSync(join(opened, "toolchain"));
    mkdirSync(join(opened, "cache"));
    writeFileSync(join(opened, "toolchain", "version.txt"), "toolchain 1.2\n");
    const ws = makeWorkspace(
      {},
      { git: true, sandbox: bubblewrap("bwrap", { readable: [join(opened, "toolchain")], writable: [join(opened, "cache")] }) },
    );
    const result = await ws.call("shell", {
      command: `cat ${opened}/toolchain/version.txt; touch ${opened}/toolchain/x 2>/dev/null || echo toolchain-read-only; echo hit > ${opened}/cache/entry && echo cache-written`,
    });
    expect(result.content).toContain("toolchain 1.2");
    expect(result.content).toContain("toolchain-read-only");
    expect(result.content).toContain("cache-written");
    expect(readFileSync(join(opened, "cache", "entry"), "utf8")).toBe("hit\n");
    expect(existsSync(join(opened, "toolchain", "x"))).toBe(false);
  });

  it("sees neither /tmp's files nor the home directory's, and reads the rest only", async () => {
    const canary = join(tmpdir(), `loopgraph-canary-${process.pid}`);
    writeFileSync(canary, "tmp secret\n");
    onCleanup(() => rmSync(canary, { force: true }));
    const ws = sandboxed();
    const result = await ws.call("shell", { command: `cat ${canary} 2>&1; cat /etc/hostname >/dev/null && echo can-read-etc` });
    expect(result.content).not.toContain("tmp secret");
    expect(result.content).toContain("can-read-etc");
  });

  it("hides every home directory, not only the user's own", () => {
    const ws = sandboxed();
    const wrapped = BUBBLEWRAP.wrap(
      ["bash", "-c", "ls -A /root /home 2>/dev/null | grep -v '^/' | grep -c . || true"],
      ws.root,
      { PATH: process.env.PATH, HOME: "/nonexistent-home" },
      [],
    );
    const listed = spawnSync(wrapped.file, wrapped.args, { env: wrapped.env, encoding: "utf8" });
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout.trim()).toBe("0");
  });

  it("has no network: a listener on the host's loopback is unreachable", async () => {
    const server = createServer((socket) => socket.end("leaked\n"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    onCleanup(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as { port: number }).port;
    const ws = sandboxed();
    const result = await ws.call("shell", { command: `(exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3) 2>&1 || echo no-network` });
    expect(result.content).not.toContain("leaked");
    expect(result.content).toContain("no-network");
  });

  it("reaches the network only where the user's policy allows it", async () => {
    const server = createServer((socket) => socket.end("reached\n"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    onCleanup(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as { port: number }).port;
    const ws = makeWorkspace({}, { git: true, sandbox: availableSandbox({}, { network: true }) });
    const result = await ws.call("shell", { command: `(exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3) 2>&1 || echo no-network` });
    expect(result.content).toContain("reached");
    expect(BUBBLEWRAP.wrap(["true"], ws.root, {}, []).args).not.toContain("--share-net");
  });

  it("kills everything the command started when it ends or times out", async () => {
    const ws = sandboxed();
    mkdirSync(join(ws.root, "marks"));
    const ended = await ws.call("shell", { command: "(sleep 2; echo late > marks/late) & echo started" });
    expect(ended.content).toContain("started");
    const timedOut = await ws.call("shell", { command: "(sleep 2; echo late > marks/late2) & sleep 30", timeout_ms: 500 });
    expect(timedOut.errorKind).toBe("timeout");
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(existsSync(join(ws.root, "marks/late"))).toBe(false);
    expect(existsSync(join(ws.root, "marks/late2"))).toBe(false);
  });

  it("gets no credential from loopgraph's environment", async () => {
    const saved = process.env.GITHUB_TOKEN;
    process.env.GITHUB_TOKEN = "ghp_sandbox_canary_0123456789";
    onCleanup(() => {
      if (saved === undefined) delete process.env.GITHUB_TOKEN;
      else process.env.GITHUB_TOKEN = saved;
    });
    const ws = sandboxed();
    const result = await ws.call("shell", { command: "env; cat /proc/1/environ /proc/self/environ 2>/dev/null | tr '\\0' '\\n'" });
    expect(result.content).not.toContain("ghp_sandbox_canary");
  });
});

describe("sandbox selection", () => {
  it("LOOPGRAPH_SANDBOX=off runs commands without one", () => {
    expect(availableSandbox({ LOOPGRAPH_SANDBOX: "off" }).name).toBe("off");
    expect(availableSandbox({}, { noSandbox: true }).name).toBe("off");
    expect(availableSandbox({ LOOPGRAPH_BWRAP: "/nonexistent/bwrap" }).name).toBe("none");
  });
});
