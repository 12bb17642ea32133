/**
 * `loopgraph completion bash|zsh|fish`: a completion script made from the CLI's own command tree
 * (commands, subcommands, options, option choices), so it never lags behind the commands.
 *
 *     loopgraph completion bash > ~/.local/share/bash-completion/completions/loopgraph
 *     loopgraph completion zsh  > "${fpath[1]}/_loopgraph"     # or: source <(loopgraph completion zsh)
 *     loopgraph completion fish > ~/.config/fish/completions/loopgraph.fish
 */
import type { Command } from "commander";
import { ConfigError } from "../errors.js";

export const SHELLS = ["bash", "zsh", "fish"] as const;

interface Node {
  /** The command's path of names below `loopgraph`, e.g. ["threads", "list"]. */
  path: string[];
  subcommands: string[];
  options: { long: string; choices?: readonly string[]; takesValue?: boolean }[];
}

function nodesOf(command: Command, path: string[] = []): Node[] {
  const visible = command.commands.filter((sub) => sub.name() !== "help");
  const options = command.options.flatMap((option) =>
    option.long
      ? [
          {
            long: option.long,
            ...(option.argChoices && { choices: option.argChoices }),
            ...((option.required || option.optional) && { takesValue: true }),
          },
        ]
      : [],
  );
  const own: Node = { path, subcommands: visible.map((sub) => sub.name()), options: [...options, { long: "--help" }] };
  return [own, ...visible.flatMap((sub) => nodesOf(sub, [...path, sub.name()]))];
}

export function completionScript(shell: string, program: Command): string {
  const nodes = nodesOf(program);
  if (shell === "bash") return bashScript(nodes);
  if (shell === "zsh")
    return `#compdef loopgraph\n# zsh runs the bash completion of loopgraph through bashcompinit.\nautoload -U +X bashcompinit && bashcompinit\n${bashScript(nodes)}`;
  if (shell === "fish") return fishScript(nodes);
  throw new ConfigError(`no completion for "${shell}": use one of ${SHELLS.join(", ")}`);
}

const quote = (word: string): string => `'${word.replace(/'/g, "'\\''")}'`;

function bashScript(nodes: Node[]): string {
  // The deepest command paths first: `threads list …` before `threads …`.
  const cases = nodes
    .filter((node) => node.path.length > 0)
    .sort((a, b) => b.path.length - a.path.length)
    .map((node) => {
      const name = node.path.join(" ");
      const words = [...node.subcommands, ...node.options.map((option) => option.long)].join(" ");
      const choices = node.options
        .filter((option) => option.choices)
        .map((option) => `      [[ $prev == ${option.long} ]] && words=${quote(option.choices!.join(" "))}`)
        .join("\n");
      const pattern = node.subcommands.length > 0 ? `${quote(name)}` : `${quote(name)}|${quote(name)}' '*`;
      return `    ${pattern})\n      words=${quote(words)}${choices ? `\n${choices}` : ""}\n      ;;`;
    });
  const top = nodes[0]!;
  const valued = [
    ...new Set(nodes.flatMap((node) => node.options.filter((option) => option.takesValue).map((option) => option.long))),
  ].sort();
  return `# bash completion for loopgraph (loopgraph completion bash)
_loopgraph() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" path="" word words
  # The command path: the words before the cursor that are not options (nor an option's value).
  local skip=0
  for word in "\${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    if (( skip )); then skip=0; continue; fi
    case "$word" in
      ${valued.join("|")}) skip=1 ;;
      -*) ;;
      *) path="\${path:+$path }$word" ;;
    esac
  done
  case "$path" in
${cases.join("\n")}
    *)
      words=${quote([...top.subcommands, ...top.options.map((option) => option.long)].join(" "))}
      ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _loopgraph loopgraph
`;
}

function fishScript(nodes: Node[]): string {
  const lines = ["# fish completion for loopgraph (loopgraph completion fish)", "complete -c loopgraph -f"];
  const top = nodes[0]!;
  lines.push(`complete -c loopgraph -n __fish_use_subcommand -a ${quote(top.subcommands.join(" "))}`);
  for (const option of top.options) lines.push(`complete -c loopgraph -l ${option.long.slice(2)}`);
  for (const node of nodes.filter((each) => each.path.length > 0)) {
    const last = node.path.at(-1)!;
    const parent = node.path.slice(0, -1);
    const inParent = parent.length > 0 ? `__fish_seen_subcommand_from ${parent.join(" ")}; and ` : "";
    if (node.subcommands.length > 0) {
      lines.push(
        `complete -c loopgraph -n ${quote(`${inParent}__fish_seen_subcommand_from ${last}; and not __fish_seen_subcommand_from ${node.subcommands.join(" ")}`)} -a ${quote(node.subcommands.join(" "))}`,
      );
    }
    for (const option of node.options) {
      const values = option.choices ? ` -x -a ${quote(option.choices.join(" "))}` : "";
      lines.push(`complete -c loopgraph -n ${quote(`${inParent}__fish_seen_subcommand_from ${last}`)} -l ${option.long.slice(2)}${values}`);
    }
  }
  return `${lines.join("\n")}\n`;
}
