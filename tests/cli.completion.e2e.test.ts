/** `loopgraph completion`: the bash script completes commands, subcommands, options and choices in a real bash; zsh loads it through bashcompinit; fish gets its own. */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, runCli } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

describe("loopgraph completion", () => {
  it("bash: completes what the CLI has, from its own command tree", async () => {
    const script = await runCli(["completion", "bash"], { env: cleanEnv() });
    expect(script.code).toBe(0);
    const file = join(tempWorkspace().root, "loopgraph.bash");
    writeFileSync(file, script.stdout);
    const complete = (line: string): string[] => {
      const words = line.split(" ");
      const program = `source ${file}; COMP_WORDS=(${words.map((word) => `'${word}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _loopgraph; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const result = spawnSync("bash", ["--norc", "-c", program], { encoding: "utf8" });
      expect(result.status, result.stderr).toBe(0);
      return result.stdout.split("\n").filter(Boolean);
    };
    expect(complete("loopgraph th")).toEqual(["threads"]);
    expect(complete("loopgraph threads ")).toEqual(["list", "delete", "prune", "--help"]);
    expect(complete("loopgraph threads prune --older")).toEqual(["--older-than"]);
    expect(complete("loopgraph run coder --approval ")).toEqual(["ask", "auto-edit", "auto", "deny"]);
    expect(complete("loopgraph --db x.db run coder --task hello --wor")).toEqual(["--workspace"]);
    expect(complete("loopgraph re")).toEqual(["resume", "rewind", "replay"]);
  });

  it("zsh wraps the bash script; fish has its own; another shell is a one-line error (exit 2)", async () => {
    const zsh = await runCli(["completion", "zsh"], { env: cleanEnv() });
    expect(zsh.stdout).toMatch(/^#compdef loopgraph\n.*\nautoload -U \+X bashcompinit && bashcompinit\n# bash completion for loopgraph/);
    const fish = await runCli(["completion", "fish"], { env: cleanEnv() });
    expect(fish.stdout).toContain(
      "complete -c loopgraph -n '__fish_seen_subcommand_from threads; and not __fish_seen_subcommand_from list delete prune' -a 'list delete prune'",
    );
    expect(fish.stdout).toContain("complete -c loopgraph -n '__fish_seen_subcommand_from run' -l approval -x -a 'ask auto-edit auto deny'");
    const other = await runCli(["completion", "powershell"], { env: cleanEnv() });
    expect(other.code).toBe(2);
    expect(other.stderr).toBe('loopgraph: no completion for "powershell": use one of bash, zsh, fish\n');
  });
});
