import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { recordedStatus } from "./helpers/e2e.js";
import { hasScript, runAtTerminal } from "./helpers/terminal.js";
import { tempWorkspace } from "./helpers/workspace.js";

describe.skipIf(!hasScript)("approvals at a terminal (pseudo-terminal through `script`)", () => {
  it("prompts approve / reject / always; a rejection with a reason reaches the model, an approval runs the call", async () => {
    const { dir: ws, db } = tempWorkspace({ git: "init", files: { "important.txt": "keep me\n" } });
    const { code, screen, answered } = await runAtTerminal(ws, db, [
      { after: "Allow?", send: "n\n" },
      { after: "Reason for the agent", send: "use a temp dir\n" },
      { after: "Allow?", send: "y\n" },
    ]);
    expect(code, screen).toBe(0);
    expect(answered).toBe(3);
    expect(screen).toContain("wants to run");
    expect(screen).toContain("always: exactly `rm -f important.txt`, for the rest of this thread");
    expect(screen).toContain("the user rejected this call: use a temp dir");
    expect(existsSync(join(ws, "approved.txt"))).toBe(false);
    expect(existsSync(join(ws, "important.txt"))).toBe(false);
    expect(screen).toContain("finished");
  });

  it("e opens the editor on the proposed call; the edit is what runs, and the model is told", async () => {
    const { dir: ws, db } = tempWorkspace({ git: "init", files: { "important.txt": "keep me\n" } });
    const editor = { VISUAL: "", EDITOR: "sed -i -e s/approved/edited/g" };
    const { code, screen, answered } = await runAtTerminal(
      ws,
      db,
      [
        { after: "[e]dit", send: "e\n" },
        { after: "Allow?", send: "n\n" },
        { after: "Reason for the agent", send: "\n" },
      ],
      undefined,
      editor,
    );
    expect(code, screen).toBe(0);
    expect(answered).toBe(3);
    expect(existsSync(join(ws, "approved.txt"))).toBe(false);
    expect(readFileSync(join(ws, "edited.txt"), "utf8")).toBe("edited\n");
    expect(screen).toContain("The user edited this call before approving it");
    expect(existsSync(join(ws, "important.txt"))).toBe(true);
  });

  it("in plan mode the plan is shown whole before y lets the Coder act; an edit's approval shows its diff", async () => {
    const script = [
      "responses:",
      "  - { node: coder, tool_calls: [ { name: read_file, args: { path: notes.txt } } ] }",
      '  - { node: coder, tool_calls: [ { name: present_plan, args: { plan: "PLAN-LINE-1: fix the typo\\nPLAN-LINE-2: nothing else" } } ] }',
      '  - { node: coder, tool_calls: [ { name: edit_file, args: { path: notes.txt, old_string: "teh", new_string: "the" } } ] }',
      '  - { node: coder, content: "Fixed." }',
      "",
    ].join("\n");
    const { dir: ws, db } = tempWorkspace({ git: "init", files: { "notes.txt": "teh end\n", "plan.script.yaml": script } });
    const { code, screen, answered } = await runAtTerminal(
      ws,
      db,
      [
        { after: "Allow?", send: "y\n" },
        { after: "Allow?", send: "y\n" },
      ],
      join(ws, "plan.script.yaml"),
      { LOOPGRAPH_MODE: "plan" },
    );
    expect(code, screen).toBe(0);
    expect(answered).toBe(2);
    const plan = screen.indexOf("PLAN-LINE-2: nothing else");
    expect(plan).toBeGreaterThan(0);
    expect(plan).toBeLessThan(screen.indexOf("Allow?"));
    expect(screen).toMatch(/-teh end\r?\n.*\+the end/s);
    expect(readFileSync(join(ws, "notes.txt"), "utf8")).toBe("the end\n");
  });

  it("Ctrl-C at the prompt leaves the run paused at that approval (exit 3), with the commands that answer it", async () => {
    const { dir: ws, db } = tempWorkspace({ git: "init", files: { "important.txt": "keep me\n" } });
    const { code, screen } = await runAtTerminal(ws, db, [{ after: "Allow?", send: "\x03" }]);
    expect(code, screen).toBe(3);
    expect(screen).toContain("waiting for approval");
    expect(screen).toContain("Approve with: loopgraph resume tty");
    expect(await recordedStatus(db, "tty")).toBe("paused");
    expect(existsSync(join(ws, "important.txt"))).toBe(true);
  });

  it("shows a spinner with the elapsed time while the model works, cleared before the next line; piped output has none", async () => {
    // The answer waits for `gate`, beside the script: the test opens it once the spinner has shown a second.
    const slow = 'responses:\n  - node: coder\n    wait_for: gate\n    content: "Done."\n';
    const { dir: ws, db } = tempWorkspace({ git: "init", files: { "slow.script.yaml": slow } });
    const open = () => writeFileSync(join(ws, "gate"), "");
    // Whatever second it first shows (a busy machine may skip the first tick), the gate opens then.
    const { code, screen, answered } = await runAtTerminal(
      ws,
      db,
      [{ after: "coder: thinking ", send: open }],
      join(ws, "slow.script.yaml"),
    );
    expect(code, screen).toBe(0);
    expect(answered).toBe(1);
    // Drawn in place, then erased: the answer's line starts on a cleared line.
    expect(screen).toMatch(/\r\x1b\[2K {2}… coder: thinking \ds/);
    expect(screen).toMatch(/thinking \ds\r\x1b\[2K(\x1b\[[0-9;]*m)* {2}(\x1b\[[0-9;]*m)*Done\./);

    // Piped, nothing can be seen to wait for: the answer takes 3.5 s, long enough for a spinner to draw (it does from 1 s).
    const delayed = 'responses:\n  - node: coder\n    delay_ms: 3500\n    content: "Done."\n';
    const other = tempWorkspace({ git: "init", files: { "slow.script.yaml": delayed } });
    const piped = await runCli(
      [
        "run",
        "coder",
        "--task",
        "t",
        "--thread",
        "pipe",
        "--workspace",
        other.dir,
        "--db",
        other.db,
        "--model",
        `scripted:${join(other.dir, "slow.script.yaml")}`,
      ],
      { cwd: other.dir },
    );
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).not.toContain("thinking");
    expect(piped.stdout).not.toContain("\r");
  });
});
