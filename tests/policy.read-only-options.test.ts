import { describe, expect, it } from "vitest";
import { coversReadOnly, describeScope, READ_ONLY_PROGRAMS, readOnlyScope } from "../src/policy/read-only-options.js";
import { parseShellCommand } from "../src/policy/shell-parts.js";

/** The scope of the command's outermost part (`echo \`id\`` has `id` nested in it). */
const scopeOf = (command: string) => readOnlyScope(parseShellCommand(command).parts.find((part) => part.text === command.trim())!);

describe("the table of read-only options", () => {
  it("lists these programs; others (awk, python, node, npm, make …) are covered only exactly", () => {
    expect(Object.keys(READ_ONLY_PROGRAMS).sort()).toEqual(
      [
        "cat",
        "cut",
        "date",
        "df",
        "diff",
        "du",
        "echo",
        "egrep",
        "fgrep",
        "file",
        "find",
        "git",
        "grep",
        "head",
        "ls",
        "printf",
        "pwd",
        "rg",
        "sed",
        "sort",
        "stat",
        "tail",
        "tar",
        "tr",
        "tree",
        "uniq",
        "wc",
        "which",
      ].sort(),
    );
    for (const command of [
      "awk '{print}' f",
      "python3 x.py",
      "node x.js",
      "npm test",
      "npm run build",
      "make",
      "perl -ne print f",
      "jq . f",
      "xargs cat",
    ]) {
      expect(scopeOf(command), command).toBeUndefined();
    }
  });

  it.each([
    // program, then commands it covers, then commands it does not
    ["echo", ["echo", "echo -n a b", "echo -e 'a\\tb'"], ["echo --x", "echo $HOME", "echo `id`", "echo > f"]],
    ["printf", ["printf '%s\\n' a b", "printf -- x"], ["printf -v v x"]],
    ["cat", ["cat a b", "cat -n -- -weird", "cat - < in"], ["cat -x a", "cat a > b", "cat <<< x", "cat < <(id)", "cat < $F"]],
    ["head", ["head -n 5 a", "head -n5 a", "head --lines=5 a", "head -5 a", "head -c 10 -q a b"], ["head -x a", "head --verbose=1 a"]],
    ["tail", ["tail -f log", "tail -n +5 a", "tail --follow=name a", "tail -20 a"], ["tail -o a"]],
    ["wc", ["wc -l a", "wc --total=never -w a"], ["wc -x"]],
    ["ls", ["ls -la src", "ls --color=auto -1", "ls -I '*.o' --sort=size"], ["ls -la $HOME", "ls --dired-out=x"]],
    [
      "grep",
      ["grep -rn x src", "grep -e a -e b f", "grep -A3 x f", "grep --include=*.ts -r x .", "grep -5 x f"],
      ["grep --weird x", "grep x f >out"],
    ],
    [
      "rg",
      ["rg -n x", "rg -g '*.ts' -t ts x", "rg --json x", "rg -uu x", "rg -. x"],
      ["rg --pre sh x", "rg -z x", "rg --search-zip x", "rg --hostname-bin h x"],
    ],
    [
      "find",
      ["find . -name '*.ts' -type f", "find src -maxdepth 1 -print0", "find . -newer a -ls", "find . -printf %p"],
      [
        "find . -delete",
        "find . -exec ls \\;",
        "find . -fprint f",
        "find . -fprint0 f",
        "find . -fprintf f %p",
        "find . -fls f",
        "find . -ok ls \\;",
      ],
    ],
    [
      "sed",
      ["sed -n 5p f", "sed -n '1,20p' f", "sed -n -e 3p -e 7p f", "sed -E -n 2p f"],
      ["sed p f", "sed -n '1,20p;w x' f", "sed -i -n 1p f", "sed -n 1p -f s f", "sed s/a/b/ f", "sed -n '$p' f"],
    ],
    [
      "sort",
      ["sort -u a", "sort -k2,2n -t, a", "sort --check=quiet a"],
      ["sort -o b a", "sort --output=b a", "sort -T d a", "sort --compress-program=x a"],
    ],
    ["uniq", ["uniq -c a", "uniq"], ["uniq a b"]],
    ["cut", ["cut -d, -f1 a", "cut -c1-5 a"], ["cut --x a"]],
    ["tr", ["tr a-z A-Z", "tr -d '\\r'"], ["tr -x a b"]],
    ["diff", ["diff -u a b", "diff -ru --exclude=node_modules a b", "diff --unified=3 a b"], ["diff -l a b", "diff --paginate a b"]],
    ["stat", ["stat -c %s a", "stat --format=%n a"], ["stat -x a"]],
    ["file", ["file -b --mime-type a"], ["file -C -m m", "file -z a", "file -p a"]],
    ["du", ["du -sh .", "du -d 1 -h", "du --max-depth=2"], ["du -x --weird"]],
    ["df", ["df -h", "df --output=source,target"], ["df --x"]],
    ["pwd", ["pwd", "pwd -P"], ["pwd x"]],
    ["which", ["which -a git"], ["which -x git"]],
    ["date", ["date", "date -u +%s", "date -Iseconds", "date -d yesterday +%F"], ["date 010100002030", "date -s now", "date --set=now"]],
    ["tree", ["tree -L 2 -a src", "tree -I node_modules"], ["tree -o out", "tree -R -H x"]],
    [
      "tar",
      ["tar -tf a.tar", "tar -tvzf a.tgz", "tar --list -f a.tar", "tar -t --file=a.tar"],
      [
        "tar -xf a.tar",
        "tar -cf a.tar .",
        "tar -f a.tar",
        "tar -tf h:a.tar",
        "tar -t -I x -f a",
        "tar -t --to-command=x -f a",
        "tar tf a.tar",
      ],
    ],
  ])("%s covers %j and not %j", (program, covered, notCovered) => {
    for (const command of covered) expect(scopeOf(command), command).toEqual({ name: program, readOnly: true });
    for (const command of notCovered) expect(scopeOf(command), command).toBeUndefined();
  });

  it.each([
    [
      "status",
      ["git status", "git status -sb", "git status --porcelain=v2 -uno -- src", "git -P status"],
      ["git status --x", "git -c a=b status"],
    ],
    [
      "log",
      ["git log -n 3 --oneline", "git log -3 -p --stat", "git log --format=%H --since=2.weeks main..HEAD", "git --no-pager log -S foo"],
      ["git log --output=x", "git log --ext-diff", "git log --textconv", "git log --show-signature", "git log -c"],
    ],
    [
      "diff",
      ["git diff", "git diff --cached --stat", "git diff -U5 --no-ext-diff HEAD~1 -- src", "git diff --word-diff=color"],
      ["git diff --output=x", "git diff --ext-diff", "git diff --textconv", "git diff -o x"],
    ],
    [
      "show",
      ["git show HEAD", "git show --stat --format=%s HEAD~2", "git show HEAD:src/a.ts"],
      ["git show --output=x", "git show --ext-diff HEAD"],
    ],
    [
      "branch",
      ["git branch", "git branch -a -v", "git branch --list 'x*'", "git branch --show-current", "git branch --merged main"],
      ["git branch x", "git branch -d x", "git branch -D x", "git branch -m a b", "git branch -f x", "git branch --set-upstream-to=o/x"],
    ],
    [
      "rev-parse",
      ["git rev-parse HEAD", "git rev-parse --abbrev-ref HEAD", "git rev-parse --show-toplevel", "git rev-parse --short=8 HEAD"],
      ["git rev-parse --parseopt"],
    ],
    ["ls-files", ["git ls-files", "git ls-files -m -o --exclude-standard", "git ls-files -z -- src"], ["git ls-files --x"]],
    ["blame", ["git blame a.ts", "git blame -L 10,20 -w a.ts"], ["git blame --contents x a.ts", "git blame -c a.ts"]],
  ])("git %s covers %j and not %j", (subcommand, covered, notCovered) => {
    for (const command of covered) expect(scopeOf(command), command).toEqual({ name: "git", subcommand, readOnly: true });
    for (const command of notCovered) expect(scopeOf(command), command).toBeUndefined();
  });

  it.each(["git push", "git commit -m x", "git checkout x", "git config a b", "git stash list", "git -C x status", "git --git-dir=x log"])(
    "git covers no other subcommand or global option: %j",
    (command) => {
      expect(scopeOf(command)).toBeUndefined();
    },
  );

  it("needs the program as the first word: no assignment, wrapper or path before it", () => {
    for (const command of ["X=1 ls", "env ls", "nice ls", "/bin/ls", "./ls", "command ls", "xargs ls"])
      expect(scopeOf(command), command).toBeUndefined();
  });

  it("a scope covers its own program and subcommand only", () => {
    const [part] = parseShellCommand("git log -3").parts;
    expect(coversReadOnly({ name: "git", subcommand: "log", readOnly: true }, part!)).toBe(true);
    expect(coversReadOnly({ name: "git", subcommand: "diff", readOnly: true }, part!)).toBe(false);
    expect(coversReadOnly({ name: "git", readOnly: true }, part!)).toBe(false);
  });

  it("describes a scope for the approval prompt", () => {
    expect(describeScope({ name: "git", subcommand: "status", readOnly: true })).toBe("`git status` with read-only options");
    expect(describeScope({ name: "ls", readOnly: true })).toBe("`ls` with read-only options");
  });
});
