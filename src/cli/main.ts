import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { settingsOf, type Settings } from "../config/environment-settings.js";
import { ConfigError, ExitCode, GraphValidationError, LoopgraphError } from "../errors.js";
import { MODEL_TIMEOUT_EXPECTED, parseModelTimeoutSeconds } from "../models/timeout.js";
import { packageVersion } from "../package.js";
import { configFiles } from "../project.js";
import { isConnectionLost, lostReason } from "../store/postgres/outage.js";
import { printUsageErrorsBriefly } from "./usage-errors.js";

// Command modules load LangGraph and the model SDKs: import them only when a command runs, so
// `--help` and bad-argument errors answer at once.
const commands = {
  run: () => import("./run-commands.js"),
  inspect: () => import("./inspect-command.js"),
  graphs: () => import("./graphs-command.js"),
  thread: () => import("./thread-commands.js"),
  status: () => import("./status-command.js"),
  chat: () => import("./chat-command.js"),
  rewind: () => import("./rewind-command.js"),
  replay: () => import("./replay-command.js"),
  queue: () => import("./queue-commands.js"),
  config: () => import("./config-command.js"),
  mcp: () => import("./mcp-command.js"),
  init: () => import("./init-command.js"),
  demo: () => import("./demo-command.js"),
  doctor: () => import("./doctor-command.js"),
  trust: () => import("./trust-command.js"),
  ui: () => import("./ui-command.js"),
  serve: () => import("./serve-command.js"),
  eval: () => import("./eval-command.js"),
};

/** A repeatable option's values, in the order given. */
const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

function parsePositiveInt(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError("expected a whole number of at least 1");
  return parsed;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new InvalidArgumentError("expected a port number from 1 to 65535");
  return port;
}

/** `--model-timeout <seconds>`, as milliseconds. */
function parseModelTimeout(value: string): number {
  const ms = parseModelTimeoutSeconds(value);
  if (ms === undefined) throw new InvalidArgumentError(`expected ${MODEL_TIMEOUT_EXPECTED}`);
  return ms;
}

const modelTimeoutOption = () =>
  new Option(
    "--model-timeout <seconds>",
    "abandon and retry a model request that receives no data for this long (default: $LOOPGRAPH_MODEL_TIMEOUT, else 120)",
  ).argParser(parseModelTimeout);

const noSandboxOption = () =>
  new Option(
    "--no-sandbox",
    "run the agent's shell commands without the OS sandbox (with your rights; in --approval auto they then run unasked)",
  );

const modeOption = () =>
  new Option(
    "--mode <mode>",
    "what the Coders may do: agent (every tool), ask (only read: answers, changes nothing), plan (read, then present a plan for approval before acting)",
  ).choices(["ask", "plan", "agent"]);

const approvalOption = () =>
  new Option(
    "--approval <mode>",
    "tool calls: ask (edits and shell ask), auto-edit (shell asks), auto (only denied rules stop), deny (never ask)",
  )
    .choices(["ask", "auto-edit", "auto", "deny"])
    .default("ask");

function buildProgram(setExitCode: (code: number) => void): Command {
  const program = new Command("loopgraph")
    .description("Durable, inspectable, replayable agent workflows declared as YAML graphs.")
    .version(packageVersion())
    .option("--db <file>", "checkpoint database (default: $LOOPGRAPH_DB, else the project root's .loopgraph/loopgraph.db)")
    .exitOverride();

  // The configuration files (user, project) fill in the settings the environment does not set,
  // for every command that uses them: not `config` (it shows where each setting comes from), nor
  // `init`, `completion` and `trust` (they use none, and must work beside a broken file). Resolved
  // once, before the command's action, and handed to it: nothing is written into process.env.
  const ownEnvironment = { ...process.env };
  let settings: Settings = settingsOf(ownEnvironment);
  const withGlobals = <T extends object>(options: T): T & { db?: string; settings: Settings } => ({
    ...program.opts<{ db?: string }>(),
    settings,
    ...options,
  });
  program.hook("preAction", async (_program, action) => {
    // At a terminal, a run or chat first offers to trust what the project holds that is not trusted as it is (not for --json or --queue).
    const { json, queue, workspace } = action.opts<{ json?: boolean; queue?: boolean; workspace?: string }>();
    if (["run", "chat", "resume"].includes(action.name()) && !json && !queue && process.stdin.isTTY && process.stdout.isTTY) {
      const { offerTrust } = await import("./trust-prompt.js");
      await offerTrust([process.cwd(), ...(workspace ? [resolve(workspace)] : [])], ownEnvironment);
    }
    if (["config", "init", "completion", "trust"].includes(action.name())) return;
    // Without a config file (the usual case) the settings module and its parser are not loaded: a narrow command stays narrow.
    const files = configFiles(process.cwd(), ownEnvironment);
    if (!existsSync(files.user) && !existsSync(files.project)) return;
    const { loadConfig, resolveSettings } = await import("../config/settings.js");
    const config = loadConfig(process.cwd(), ownEnvironment);
    if (config.projectIgnored) process.stderr.write(`loopgraph: ${config.projectIgnored}\n`);
    settings = resolveSettings(config, ownEnvironment);
  });

  program
    .command("run <graph>")
    .description("start a run of a graph (a name in ./graphs or the built-in graphs, or a path)")
    .option("--task <text>", "the task given to the graph")
    .option("--thread <id>", "thread id (default: generated)")
    .option(
      "--workspace <dir>",
      "directory the nodes work in (default: the project root: the nearest directory up from here with loopgraph.yaml, .loopgraph/ or .git)",
    )
    .option(
      "--model <provider:model>",
      "model for nodes that name none (default: $LOOPGRAPH_MODEL, else the config files', else the graph's)",
    )
    .addOption(approvalOption().default(undefined, "$LOOPGRAPH_APPROVAL, else the config files', else ask"))
    .addOption(modeOption())
    .addOption(noSandboxOption())
    .option("--max-rounds <n>", "round limit of the Looper (default: the graph's, 5)", parsePositiveInt)
    .option(
      "--attempts <n>",
      "for a graph with an attempts field (best-of-n): how many attempts at the task (default: the graph's)",
      parsePositiveInt,
    )
    .addOption(modelTimeoutOption())
    .option("--json", "print newline-delimited JSON events")
    .option("--queue", "queue the run for a worker (`loopgraph worker`) and print its thread id; needs a PostgreSQL store")
    .option(
      "--repo <url|path>",
      "with --queue: the git repository the run works on; the worker clones it and pushes the result to loopgraph/<thread>",
    )
    .option("--ref <ref>", "with --repo: the branch, tag or commit to start from (default: the repository's HEAD)")
    .option("--commit", "when the run finishes, commit the files it changed as one commit (see docs/commands.md)")
    .action(async (graph: string, options) => {
      if (options.queue && options.commit)
        throw new ConfigError(
          "--commit is for a run on this machine: a queued run on a repository pushes its own branch, loopgraph/<thread>",
        );
      return setExitCode(
        options.queue
          ? await (await commands.queue()).enqueueCommand(graph, withGlobals(options))
          : await (await commands.run()).runCommand(graph, withGlobals(options)),
      );
    });

  program
    .command("worker")
    .description("run the queued runs of a PostgreSQL store (`run --queue`), on this machine, until SIGTERM")
    .option("--concurrency <n>", "runs at once", parsePositiveInt, 1)
    .addOption(noSandboxOption())
    .action(async (options) => setExitCode(await (await commands.queue()).workerCommand(withGlobals(options))));

  program
    .command("wait <thread>")
    .description("follow a run (queued, or running on any machine) to its end; exits with the run's exit code")
    .option("--json", "print JSON")
    .action(async (thread: string, options) => setExitCode(await (await commands.queue()).waitCommand(thread, withGlobals(options))));

  program
    .command("patch <thread>")
    .description("print the change a run on a repository (run --queue --repo) made, as a patch for git apply")
    .action(async (thread: string, options) => setExitCode(await (await commands.queue()).patchCommand(thread, withGlobals(options))));

  program
    .command("chat")
    .description("talk with the Mediator; it hands real work to the Looper, which runs in the background while you keep talking")
    .option("--graph <graph>", "graph of a new chat; it needs a mediator node", "monitor")
    .option("--thread <id>", "continue this chat (history, settings and its loop), or start one with this id")
    .option("--continue", "continue the chat used last in this project's store (its history, settings and loop)")
    .option(
      "--workspace <dir>",
      "directory the loop works in (default: the project root: the nearest directory up from here with loopgraph.yaml, .loopgraph/ or .git)",
    )
    .option("--model <provider:model>", "model for nodes that name none (default: $LOOPGRAPH_MODEL, or the chat's)")
    .addOption(approvalOption().default(undefined, "ask, or the chat's"))
    .addOption(modeOption())
    .addOption(noSandboxOption())
    .option("--max-rounds <n>", "round limit of the loops started in this chat (default: the graph's, 5)", parsePositiveInt)
    .addOption(modelTimeoutOption())
    .option("--json", "newline-delimited JSON events on stdout; each line of stdin is a typed line")
    .action(async (options) => setExitCode(await (await commands.chat()).chatCommand(withGlobals(options))));

  program
    .command("resume <thread>")
    .description("continue a paused, interrupted, failed or crashed run from its last checkpoint")
    .option("--model <provider:model>", "use this model instead of the one recorded with the run")
    .addOption(approvalOption().default(undefined, "the run's"))
    .addOption(modeOption())
    .addOption(noSandboxOption())
    .option("--approve [call-id]", "approve the tool call the run is waiting on (with several waiting: all of them, or the one named)")
    .option("--reject [reason]", "reject the tool call the run is waiting on; the reason is told to the agent")
    .option("--call <call-id>", "with several calls waiting: the one --approve, --reject or --answer is for (default: all of them)")
    .option("--answer <text>", "answer to the question the run is waiting on")
    .option("--edit-args <file>", "with --approve: run the call with the arguments in this JSON file (- for stdin) instead of the model's")
    .option(
      "--set-arg <name=value>",
      "with --approve: run the call with this argument changed (JSON or text; repeat for more)",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option(
      "--max-rounds <n>",
      "round limit of a loop this resume starts (default: the one the thread's loop started with)",
      parsePositiveInt,
    )
    .addOption(modelTimeoutOption())
    .option("--json", "print newline-delimited JSON events")
    .option("--commit", "when the run finishes, commit the files it changed as one commit (as run --commit)")
    .action(async (thread: string, options) => setExitCode(await (await commands.run()).resumeCommand(thread, withGlobals(options))));

  program
    .command("send <thread> <message...>")
    .description('send a command to a thread\'s loop from any terminal: stop, status, "add: <task>", "start: <task>" or JSON')
    .action(async (thread: string, words: string[]) =>
      setExitCode(await (await commands.thread()).sendCommandCli(thread, words, withGlobals({}))),
    );

  program
    .command("stop <thread>")
    .description("stop a thread's loop at its next step: the Coder finishes the tool call in flight, nothing more runs")
    .action(async (thread: string) => setExitCode(await (await commands.thread()).sendCommandCli(thread, ["stop"], withGlobals({}))));

  program
    .command("status <thread>")
    .description("the Looper status block of a thread (no model call)")
    .option("--json", "print JSON")
    .action(async (thread: string, options) => setExitCode(await (await commands.status()).statusCommand(thread, withGlobals(options))));

  program
    .command("inspect [thread]")
    .description("list threads; with a thread, one line per step (node, what it did, tokens, time); --diff adds the state changes")
    .option("--checkpoint <id>", "the full state at this checkpoint (an id or a unique prefix)")
    .option(
      "--export-script <file>",
      "write the thread's recorded model answers as a scripted-model file (replay it with --model scripted:<file>)",
    )
    .option("--diff", "under each step, the state changes it made")
    .option("--internal", "with --diff, the engine's bookkeeping channels too (scripted)")
    .option("--nested", "under each step, the steps of the graphs it ran: a Coder's model and tool calls, a subagent's under its task call")
    .addOption(new Option("--last <n>", "the newest n steps (default: 50)").argParser(parsePositiveInt).conflicts(["all", "from"]))
    .addOption(
      new Option(
        "--from <step>",
        "the steps from this one on: its # as inspect numbers them, or its checkpoint id (a unique prefix)",
      ).conflicts("all"),
    )
    .option("--all", "every step of the thread")
    .option("--json", "print JSON")
    .action(async (thread: string | undefined, options) =>
      setExitCode(await (await commands.inspect()).inspectCommand(thread, withGlobals(options))),
    );

  program
    .command("ui")
    .description("the web inspector: threads, their graphs, steps, state and diffs, live, with approvals and Looper commands, on 127.0.0.1")
    .option("--port <n>", "listen on this port (default: a free one)", parsePort)
    .option("--open", "open the URL in the desktop's browser")
    .action(async (options) => setExitCode(await (await commands.ui()).uiCommand(withGlobals(options))));

  program
    .command("serve")
    .description("the LangGraph server API (threads, runs, streams, interrupts) for LangGraph's SDK, useStream and Studio, on 127.0.0.1")
    .option("--port <n>", "listen on this port (default: a free one)", parsePort)
    .option("--host <address>", "listen on this address (default: 127.0.0.1)")
    .option("--no-auth", "ask no token (on 127.0.0.1 only)")
    .option("--cors <origin>", "let a browser page of this origin call the API (repeatable)", collect)
    .option("--static <dir>", "serve a web app's files under /app/ (the token replaces __LOOPGRAPH_SERVE_TOKEN__ in its HTML)")
    .option("--model <provider:model>", "model of new threads' nodes that name none (default: $LOOPGRAPH_MODEL)")
    .option("--queue", "queue new threads' runs for the workers of the PostgreSQL store (loopgraph worker) instead of running them here")
    .action(async (options) => setExitCode(await (await commands.serve()).serveCommand(withGlobals(options))));

  program
    .command("rewind <thread> [checkpoint]")
    .description(
      "put back the files the agent changed after a checkpoint (root or Coder tool step), as they were then, and undo the commits loopgraph made for it since",
    )
    .option("--dry-run", "list what would change (restore, delete, recreate), change nothing")
    .option("--list", "list the snapshot points: the checkpoint each file-changing tool step started from")
    .option("--json", "print JSON")
    .action(async (thread: string, checkpoint: string | undefined, options) =>
      setExitCode(await (await commands.rewind()).rewindCommand(thread, checkpoint, withGlobals(options))),
    );

  program
    .command("replay <thread>")
    .description(
      "re-run a thread: fork a new branch from a checkpoint (--from), re-execute it from its record with " +
        "no model and no side effects (--recorded), or check the record against the current graph (--verify)",
    )
    .option(
      "--from <checkpoint>",
      "start at this checkpoint (an id or a unique prefix): a new branch that calls the models again, or with --recorded where the re-execution starts",
    )
    .option(
      "--recorded",
      "re-execute into a scratch thread with the recorded model answers and tool results; report where it departs from the record (exit 1)",
    )
    .option(
      "--set <path=value...>",
      'edit the state at that checkpoint first, e.g. task="…" or vars.audience=managers (JSON values, else text)',
    )
    .option(
      "--restore-files",
      "with --from: first put the files the agent changed since that checkpoint back as they were then (like rewind)",
    )
    .option(
      "--verify",
      "re-evaluate the routing of the current graph file on the recorded run, running nothing: exit 0 if consistent, 1 at the first divergence",
    )
    .option("--model <provider:model>", "use this model instead of the one recorded with the run")
    .addOption(approvalOption().default(undefined, "the run's"))
    .addOption(modeOption())
    .addOption(noSandboxOption())
    .addOption(modelTimeoutOption())
    .option("--json", "print newline-delimited JSON events (with --verify: the result as JSON; with --recorded: then the replay's result)")
    .action(async (thread: string, options) => setExitCode(await (await commands.replay()).replayCommand(thread, withGlobals(options))));

  program
    .command("config")
    .description(
      "the settings that apply here (model, approval, model timeout, store) and where each comes from: flag, environment, project loopgraph.yaml, user config.yaml, default",
    )
    .option("--json", "print JSON")
    .action(async (options) =>
      setExitCode(await (await commands.config()).configCommand({ ...withGlobals(options), env: ownEnvironment })),
    );

  program
    .command("doctor")
    .description(
      "check what this machine offers loopgraph (OS sandbox, git, ripgrep, the store, the model's key) and what each missing piece costs; exit 1 when the configuration here needs something missing",
    )
    .option("--json", "print JSON")
    .action(async (options) => setExitCode(await (await commands.doctor()).doctorCommand(withGlobals(options))));

  program
    .command("trust [path]")
    .description(
      "trust the project PATH is in (default: here) as it is now: its graphs found by name, " +
        "loopgraph.yaml, .loopgraph/policy.yaml and the modules and scripts they name are used only once " +
        "trusted, and again only after a change is trusted",
    )
    .option("--list", "the trusted projects, and whether each is still as trusted")
    .option("--revoke", "take the trust in the project back")
    .action(async (target: string | undefined, options) =>
      setExitCode(await (await commands.trust()).trustCommand(target, { ...options, env: ownEnvironment })),
    );

  const mcp = program.command("mcp").description("the MCP servers whose tools the Coder gets (see docs/mcp.md)");
  mcp
    .command("list")
    .description("start or contact each declared MCP server as a run would, and list its tools (exit 1 when one is not available)")
    .option("--graph <name|file>", "also the servers this graph declares")
    .option("--workspace <dir>", "where stdio servers run (default: the project root)")
    .option("--no-sandbox", "run stdio servers without the OS sandbox (the config's own servers only)")
    .option("--json", "print JSON")
    .action(async (options: { graph?: string; workspace?: string; sandbox?: boolean; json?: boolean }) =>
      setExitCode(await (await commands.mcp()).mcpListCommand(withGlobals({ ...options, noSandbox: options.sandbox === false }))),
    );

  program
    .command("init")
    .description(
      "make this folder a loopgraph project: loopgraph.yaml, graphs/starter.yaml and its prompt, .loopgraph/ (files that exist are kept)",
    )
    .action(async () => setExitCode(await (await commands.init()).initCommand({ env: ownEnvironment })));

  program
    .command("demo")
    .description(
      "the offline demo: the Mediator hands a task to the Looper, two rounds of Coder → Review → Judge with the scripted model (no API key)",
    )
    .action(async () => setExitCode(await (await commands.demo()).demoCommand(program.opts<{ db?: string }>())));

  program
    .command("completion <shell>")
    .description(
      "print a completion script for bash, zsh or fish, e.g. loopgraph completion bash > ~/.local/share/bash-completion/completions/loopgraph",
    )
    .action(async (shell: string) => {
      const { completionScript } = await import("./completion.js");
      process.stdout.write(completionScript(shell, program));
      setExitCode(0);
    });

  const threads = program.command("threads").description("list the store's threads by status and graph; delete or prune them");
  threads
    .command("list")
    .description("the threads, newest first")
    .option("--status <status>", "only threads of this status: running, queued, finished, paused, interrupted, failed, limited")
    .option("--graph <name>", "only threads of this graph")
    .option("--limit <n>", "at most this many", parsePositiveInt)
    .option("--json", "print JSON")
    .action(async (options) => setExitCode(await (await commands.thread()).threadsListCommand(withGlobals(options))));
  threads
    .command("delete <thread...>")
    .description(
      "delete threads with everything the store holds of them (checkpoints, inbox, recordings, snapshot log), their loop thread and their artifacts; never one a live process runs",
    )
    .option("--json", "print JSON")
    .action(async (ids: string[], options) => setExitCode(await (await commands.thread()).threadsDeleteCommand(ids, withGlobals(options))));
  threads
    .command("prune")
    .description("delete the threads not changed for a while, or an eval's (none a live process runs)")
    .option("--older-than <age>", "e.g. 30d, 12h, 2w")
    .option("--eval <id>", "instead: an eval's trials' threads, their workspaces and the eval itself (see loopgraph eval --list)")
    .option("--status <status>", "only threads of this status")
    .option("--graph <name>", "only threads of this graph")
    .option("--dry-run", "list what would be deleted, delete nothing")
    .option("--json", "print JSON")
    .action(async (options) => setExitCode(await (await commands.thread()).threadsPruneCommand(withGlobals(options))));

  program
    .command("eval [suite]")
    .description("run a suite of tasks against graph and model variants, each trial a thread of its own, and report pass rates")
    .option("--graph <graph>", "a graph to run the tasks with (repeatable: one variant each; default: coder-review)", collect)
    .option("--model <provider:model>", "a model to run them with (repeatable: each graph with each model)", collect)
    .option("--repeat <n>", "trials of each task per variant (default: 1)", parsePositiveInt)
    .option("--concurrency <k>", "trials run at once, or with --queue queued at once (default: 1)", parsePositiveInt)
    .option("--tag <tag>", "only the tasks with this tag (repeatable: any of them)", collect)
    .option("--queue", "queue the trials for the workers (`loopgraph worker`) and check them here; needs a PostgreSQL store")
    .option("--resume <id>", "continue a stopped eval: its trials without a result run, no finished one again")
    .option("--report <id>", "print an eval's report again (with --json, --junit, --markdown)")
    .option("--list", "the store's evals, newest first")
    .option(
      "--recorded <id>",
      "re-check a finished eval's trials against the --graph given, without a model call; exit 1 if a path differs",
    )
    .option("--variant <label>", "with --recorded: the variant whose trials to check")
    .option("--json", "print the report as JSON (progress lines go to stderr)")
    .option("--junit <file>", "also write the report as JUnit XML")
    .option("--markdown <file>", "also write the report as Markdown")
    .addOption(noSandboxOption())
    .action(async (suite: string | undefined, options) =>
      setExitCode(await (await commands.eval()).evalCommand(suite, withGlobals(options))),
    );

  const graphs = program.command("graphs").description("list, validate and draw graph files");
  graphs
    .command("list")
    .option("--json", "print JSON")
    .description("graphs in ./graphs and the built-in ones")
    .action(async (options) => setExitCode(await (await commands.graphs()).graphsListCommand(options)));
  graphs
    .command("validate <file...>")
    .description("check graph files; errors as file:line:col: message")
    .action(async (files: string[]) => setExitCode(await (await commands.graphs()).graphsValidateCommand(files)));
  graphs
    .command("draw <file>")
    .description("print the graph as a Mermaid flowchart")
    .action(async (file: string) => setExitCode(await (await commands.graphs()).graphsDrawCommand(file)));
  printUsageErrorsBriefly(program);
  return program;
}

/** Runs the CLI on `argv` (as `process.argv`: node, the script, then the arguments); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  let exitCode: number = ExitCode.Finished;
  const program = buildProgram((code) => (exitCode = code));
  try {
    await program.parseAsync(argv);
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      const benign = error.code === "commander.helpDisplayed" || error.code === "commander.version" || error.code === "commander.help";
      return benign ? ExitCode.Finished : ExitCode.BadInput;
    }
    if (error instanceof GraphValidationError) {
      process.stderr.write(`${error.message}\n`);
      return error.exitCode;
    }
    if (error instanceof LoopgraphError) {
      process.stderr.write(
        `${error.message
          .split("\n")
          .map((line) => `loopgraph: ${line}`)
          .join("\n")}\n`,
      );
      return error.exitCode;
    }
    if (isConnectionLost(error)) {
      // A store's server lost where no store path was at hand to name it (every store command names it).
      process.stderr.write(`loopgraph: the PostgreSQL server of the store went away (${lostReason(error)}): try again once it is back\n`);
      return ExitCode.BadInput;
    }
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`loopgraph: internal error: ${message.split("\n")[0]}\n`);
    if (process.env.LOOPGRAPH_DEBUG && error instanceof Error && error.stack) {
      // Loaded only here: no command needs it, a failure being debugged does.
      const { sourceMappedStack } = await import("./debug-stack.js");
      process.stderr.write(`${sourceMappedStack(error.stack)}\n`);
    }
    return ExitCode.Failed;
  }
}
