import { describe, expect, it } from "vitest";
import { commandWords, normalisedText, parseShellCommand, writeTargetsOf } from "../src/policy/shell-parts.js";

const partsOf = (command: string) => parseShellCommand(command).parts.map((part) => part.text);
const normalisedPartsOf = (command: string) => parseShellCommand(command).parts.map(normalisedText);

describe("splitting a command into simple commands", () => {
  it.each([
    ["echo hi && rm -rf ~", ["echo hi", "rm -rf ~"]],
    ["a || b; c | d & e", ["a", "b", "c", "d", "e"]],
    ["a |& b ;; c", ["a", "b", "c"]],
    ["a\nb\r\nc", ["a", "b", "c"]],
    ["make build&&make test", ["make build", "make test"]],
    ["(cd /; rm -rf .)", ["cd /", "rm -rf ."]],
    ["{ rm -rf /; }", ["rm -rf /"]],
    ["if true; then rm -rf /; else echo no; fi", ["true", "rm -rf /", "echo no"]],
    ["for f in *.ts; do rm $f; done", ["f in *.ts", "rm $f"]],
    ["! grep -q x file", ["grep -q x file"]],
  ])("%j → %j", (command, parts) => {
    expect(partsOf(command)).toEqual(parts);
  });

  it.each([
    ["echo $(rm -rf ~)", ["rm -rf ~", "echo $(rm -rf ~)"]],
    ['echo "$(rm -rf ~)"', ["rm -rf ~", 'echo "$(rm -rf ~)"']],
    ["echo `rm -rf /`", ["rm -rf /", "echo `rm -rf /`"]],
    ['echo "`rm -rf /`"', ["rm -rf /", 'echo "`rm -rf /`"']],
    ["echo $(echo $(whoami))", ["whoami", "echo $(whoami)", "echo $(echo $(whoami))"]],
    ["diff <(ls a) <(ls b)", ["ls a", "ls b", "diff <(ls a) <(ls b)"]],
    ["bash <(curl -s x)", ["curl -s x", "bash <(curl -s x)"]],
  ])("descends into substitutions: %j", (command, parts) => {
    expect(partsOf(command)).toEqual(parts);
  });

  it.each([
    ['bash -c "rm -rf /"', "rm -rf /"],
    ["sh -c 'a && b'", "a"],
    ["bash -lc 'rm -rf ~'", "rm -rf ~"],
    ["timeout 5 bash -c 'rm -rf ~'", "rm -rf ~"],
    ["xargs -I {} sh -c 'rm -rf {}'", "rm -rf {}"],
    ['eval "rm -rf ~"', "rm -rf ~"],
    ["eval rm -rf '~'", "rm -rf ~"],
    ["find . -name '*.tmp' -exec rm -f {} \\;", "rm -f {}"],
    ["watch -n 1 'rm -rf /'", "rm -rf /"],
    ["watch -d 'rm -rf /'", "rm -rf /"],
    ["env -S 'rm -rf /'", "rm -rf /"],
    ["script -qc 'rm -rf /' /dev/null", "rm -rf /"],
  ])("descends into commands run by arguments: %j contains %j", (command, inner) => {
    expect(partsOf(command)).toContain(inner);
  });

  it("counts `sh -c 'a && b'` as the shell plus both inner commands", () => {
    expect(partsOf("sh -c 'a && b'")).toEqual(["sh -c 'a && b'", "a", "b"]);
  });

  it.each([
    'echo "a && b"',
    "echo 'a; rm -rf /'",
    "echo a\\;b",
    "echo a\\&\\&b",
    "git commit -m 'fix: a | b'",
    "grep -E 'a|b' file",
    "echo '$(rm -rf /)'",
    "echo '`rm -rf /`'",
    "echo \\`rm -rf /\\`",
    'echo "\\$(rm -rf /)"',
    "echo a#b",
    "echo hi # && rm -rf /",
  ])("does not split or descend into quoted or escaped text: %j", (command) => {
    expect(parseShellCommand(command).parts).toHaveLength(1);
  });

  it("keeps only the commands of a heredoc whose body expands", () => {
    expect(partsOf("cat > notes.md <<EOF\nrm -rf / is a bad idea\nEOF\necho done")).toEqual(["cat > notes.md <<EOF", "echo done"]);
    expect(partsOf("cat <<EOF\nuser: $(whoami)\nEOF")).toEqual(["cat <<EOF", "whoami"]);
    expect(partsOf("cat <<'EOF'\n$(rm -rf /)\nEOF")).toEqual(["cat <<'EOF'"]);
    expect(partsOf("cat <<-END\n\t`id`\n\tEND\nls")).toEqual(["cat <<-END", "id", "ls"]);
  });

  it("lists the outer command and every nested script", () => {
    expect(parseShellCommand("sh -c 'curl x | sh'").scripts).toEqual(["sh -c 'curl x | sh'", "curl x | sh"]);
    expect(parseShellCommand("   ").scripts).toEqual([]);
  });

  it("survives unterminated quotes and parentheses without losing commands", () => {
    expect(partsOf("echo 'unterminated && rm -rf /")).toHaveLength(1);
    expect(partsOf("echo $(rm -rf ~")).toContain("rm -rf ~");
    expect(partsOf("(rm -rf ~")).toEqual(["rm -rf ~"]);
  });

  it.each([
    ["ls &&", "`&&` with no command after it"],
    ["ls ||", "`||` with no command after it"],
    ["ls |", "`|` with no command after it"],
    ["ls && ; pwd", "`&&` with no command after it"],
    ["git log &&& rm -rf /", "`&&` with no command after it"],
    ["echo 'a", "an unclosed '"],
    ['echo "a', 'an unclosed "'],
    ["echo $'a", "an unclosed $'"],
    ["echo `ls", "an unclosed `"],
    ["echo $(ls", "an unclosed ("],
    ["(rm -rf ~", "an unclosed ("],
    ["echo ${a", "an unclosed ${"],
  ])("reports what bash cannot parse: %j (%s)", (command, what) => {
    expect(parseShellCommand(command).incomplete).toEqual([{ script: command, what }]);
  });

  it("reports it in the nested script it is in, and nothing in a complete command", () => {
    expect(parseShellCommand("bash -c 'ls &&'").incomplete).toEqual([{ script: "ls &&", what: "`&&` with no command after it" }]);
    for (const command of [
      "ls && pwd",
      "ls &&\npwd",
      "ls && (pwd)",
      "ls &",
      "ls;",
      "echo \"it's\" 'a\"b'",
      "echo ${v:-$(id)}",
      "x=$((1+(2*3)))",
      "case x in a) ls;; esac",
    ]) {
      expect(parseShellCommand(command).incomplete, command).toEqual([]);
    }
  });

  it("marks the commands nested in a subshell, a substitution or another shell's script", () => {
    const nested = (command: string) => parseShellCommand(command).parts.map((part) => `${part.text}${part.nested ? " (nested)" : ""}`);
    expect(nested("ls || (pwd && echo hi)")).toEqual(["ls", "pwd (nested)", "echo hi (nested)"]);
    expect(nested("echo $(ls)")).toEqual(["ls (nested)", "echo $(ls)"]);
    expect(nested("bash -c 'ls'")).toEqual(["bash -c 'ls'", "ls (nested)"]);
    expect(nested("find . -exec ls {} +")).toEqual(["find . -exec ls {} +", "ls {} (nested)"]);
    expect(nested("ls && pwd; { echo hi; }")).toEqual(["ls", "pwd", "echo hi"]);
  });

  it("splits `function NAME { …; }` into the name it defines and the commands of its body", () => {
    expect(partsOf("function echo { curl google.com; } ; echo hi")).toEqual(["echo", "curl google.com", "echo hi"]);
    expect(partsOf("function f() { rm -rf build; }")).toEqual(["f", "rm -rf build"]);
    expect(partsOf("echo () { curl x; }")).toEqual(["echo", "curl x"]);
  });

  it("does not recurse without bound, and reports what it did not follow", () => {
    const deep = parseShellCommand(`${"$(".repeat(50)}whoami${")".repeat(50)}`);
    expect(deep.parts.length).toBe(13);
    expect(deep.tooDeep).toEqual([`${"$(".repeat(37)}whoami${")".repeat(37)}`]);
    expect(parseShellCommand(`${"eval ".repeat(30)}rm -rf /`).tooDeep).toEqual([`${"eval ".repeat(17)}rm -rf /`]);
    expect(parseShellCommand("echo $(echo $(ls))").tooDeep).toEqual([]);
  });
});

describe("words and normalised text", () => {
  it.each([
    ['rm -rf "$HOME"', "rm -rf $HOME"],
    ["FOO=1 BAR=2 /bin/r'm' -rf /", "rm -rf /"],
    ["env -i PATH=/bin nohup nice -n 5 rm -rf /", "rm -rf /"],
    ["command \\rm -rf ~", "rm -rf ~"],
    ["timeout -s KILL 10 sudo ls", "sudo ls"],
    ["$'\\x72\\x6d' -rf /", "rm -rf /"],
    ["$'\\162m' -rf /", "rm -rf /"],
    ["{rm,-rf,/}", "rm -rf /"],
    ["echo hi>out.txt 2>&1", "echo hi > out.txt 2>& 1"],
    ["cat <in.txt >>log &>all", "cat < in.txt >> log &> all"],
  ])("%j normalises to %j", (command, normalised) => {
    expect(normalisedPartsOf(command)).toEqual([normalised]);
  });

  it("skips assignments, wrappers and their option values", () => {
    expect(commandWords(["A=1", "xargs", "-n", "1", "rm", "-f"])).toEqual(["rm", "-f"]);
    expect(commandWords(["A=1"])).toEqual([]);
  });
});

describe("write targets", () => {
  const targetsOf = (command: string) => parseShellCommand(command).parts.flatMap(writeTargetsOf);

  it.each([
    ["echo x > /etc/hosts", ["/etc/hosts"]],
    ["echo x >> a 2> b &> c", ["a", "b", "c"]],
    ["cmd 2>&1 >&2 <in", []],
    ["rm -rf a b -- -c", ["a", "b", "-c"]],
    ["cp -r src dist", ["dist"]],
    ["cp -t /out a b", ["/out"]],
    ["cp --target-directory=/out a", ["/out"]],
    ["mv a b", ["a", "b"]],
    ["ln -s /etc link", ["/etc", "link"]],
    ["tee -a x y", ["x", "y"]],
    ["chmod -R 777 /", ["777", "/"]],
    ["dd if=/dev/zero of=disk.img", ["disk.img"]],
    ["sed -i 's/a/b/' f.txt", ["s/a/b/", "f.txt"]],
    ["sed 's/a/b/' f.txt", []],
    ["find /tmp -name x -delete", ["/tmp"]],
    ["find -delete", ["."]],
    ["curl -o /tmp/x https://e.com", ["/tmp/x"]],
    ["curl --output=/tmp/x https://e.com", ["/tmp/x"]],
    ["wget -O/tmp/x https://e.com", ["/tmp/x"]],
    ["tar -xf a.tar -C /", ["/"]],
    ["cat a b", []],
    ["$RM -rf ../x", ["../x"]],
    ["$(echo rm) -rf /", ["/"]],
  ])("%j writes %j", (command, targets) => {
    expect(targetsOf(command)).toEqual(targets);
  });
});

describe("word splitting and expansion as bash does it", () => {
  it.each([
    ["rm${IFS}-rf${IFS}/", ["rm", "-rf", "/"]],
    ["rm$IFS-rf$IFS/", ["rm", "-rf", "/"]],
    ["rm${IFS:0:1}-rf /", ["rm", "-rf", "/"]],
    ['echo "a${IFS}b"', ["echo", "a${IFS}b"]],
    ["echo $IFSX ${#IFS}", ["echo", "$IFSX", "${#IFS}"]],
    ["rm -rf {/*,x}", ["rm", "-rf", "/*", "x"]],
    ["echo a{b,c{d,e}}f", ["echo", "abf", "acdf", "acef"]],
    ["echo {a,b}{1,2}", ["echo", "a1", "a2", "b1", "b2"]],
    ['rm -rf {"/",x}', ["rm", "-rf", "/", "x"]],
    ["echo '{a,b}' \\{a,b} {} {a} ${x,y}", ["echo", "{a,b}", "{a,b}", "{}", "{a}", "${x,y}"]],
    ["X={a,b} env", ["X={a,b}", "env"]],
    ["find . -exec rm {} +", ["find", ".", "-exec", "rm", "{}", "+"]],
  ])("%j → %j", (command, words) => {
    expect(parseShellCommand(command).parts[0]!.words).toEqual(words);
  });

  it("does not expand braces without bound: too many words are reported, not checked", () => {
    const bomb = `echo ${"{a,b}".repeat(11)}`;
    expect(parseShellCommand(bomb).tooDeep).toEqual(["{a,b}".repeat(11)]);
    expect(parseShellCommand(`echo ${"{a,b}".repeat(10)}`).tooDeep).toEqual([]);
  });

  it("marks unquoted globs, with quoted characters escaped", () => {
    const [part] = parseShellCommand(`cat /e?c/shadow 'a*' "b"* plain < /e[t]c/x`).parts;
    expect(part!.globs).toEqual([undefined, "/e?c/shadow", undefined, "b*", undefined]);
    expect(part!.redirects).toEqual([{ op: "<", target: "/e[t]c/x", glob: "/e[t]c/x" }]);
    expect(parseShellCommand(`cat "x y"?`).parts[0]!.globs).toEqual([undefined, "x\\ y?"]);
    expect(parseShellCommand("cat a b").parts[0]!.globs).toBeUndefined();
  });

  it("descends into command substitutions inside ${…}", () => {
    expect(partsOf("echo ${v=`rm -rf /`}")).toEqual(["rm -rf /", "echo ${v=`rm -rf /`}"]);
    expect(partsOf("echo ${v:-$(id)}x")).toEqual(["id", "echo ${v:-$(id)}x"]);
    expect(partsOf("echo ${a:-${b:-$(id)}}")).toEqual(["id", "echo ${a:-${b:-$(id)}}"]);
    // Only `${` nests, as in bash: the `}` of `{}` ends the expansion and `; rm` is a command.
    expect(partsOf("echo ${v:-{}; rm -rf /")).toEqual(["echo ${v:-{}", "rm -rf /"]);
  });
});

describe("wrappers with operands before the command", () => {
  it.each([
    ["flock f sudo id", "sudo id"],
    ["flock -x -w 5 /tmp/lock rm -rf /", "rm -rf /"],
    ["taskset 0x1 rm -rf /", "rm -rf /"],
    ["taskset -c 0,1 rm -rf /", "rm -rf /"],
    ["chrt -f 10 rm -rf /", "rm -rf /"],
    ["timeout -k 5 10 rm -rf /", "rm -rf /"],
    ["busybox rm -rf /", "rm -rf /"],
    ["unshare -r chroot / rm -rf /", "rm -rf /"],
  ])("%j runs %j", (command, normalised) => {
    expect(normalisedPartsOf(command)).toContain(normalised);
  });

  it("sees `flock FILE -c 'script'` as a script", () => {
    expect(partsOf("flock f -c 'rm -rf / && id'")).toEqual(["flock f -c 'rm -rf / && id'", "rm -rf /", "id"]);
  });
});

describe("stdin that the command shows", () => {
  it.each([
    ["echo 'rm -rf /' | bash", "rm -rf /"],
    ["echo rm -rf / |& sh -s", "rm -rf /"],
    ["echo -e 'ls\\nrm -rf /' | sh", "rm -rf /"],
    ["printf '%s\\n' 'rm -rf /' | bash", "rm -rf /"],
    ["printf 'rm -rf %s' / | bash -", "rm -rf /"],
    ['bash <<< "rm -rf /"', "rm -rf /"],
    ["sh -x <<'EOF'\nls\nrm -rf /\nEOF", "rm -rf /"],
    ["bash <<-EOF\n\trm -rf /\n\tEOF", "rm -rf /"],
    ["cat <<EOF | bash\nrm -rf /\nEOF", "rm -rf /"],
    ["echo 'rm -rf /' | cat | cat - | bash", "rm -rf /"],
    [". /dev/stdin <<< 'rm -rf /'", "rm -rf /"],
    ["echo 'rm -rf /' | source /dev/fd/0", "rm -rf /"],
    ["echo 'rm -rf /' | bash /dev/stdin", "rm -rf /"],
    ["echo / | xargs rm -rf", "rm -rf /"],
    ["echo /* | xargs rm -rf", "rm -rf /*"],
    ["echo \"'/'\" | xargs -n1 rm -rf", "rm -rf /"],
    ["printf '/\\n' | xargs -I{} rm -rf {}", "rm -rf /"],
    ["echo / | xargs -I % sh -c 'rm -rf %'", "rm -rf /"],
  ])("%j runs %j", (command, inner) => {
    expect(partsOf(command)).toContain(inner);
  });

  it.each([
    "cat script.sh | bash",
    "bash script.sh < input.txt",
    "echo 'rm -rf /' | bash -c 'cat'",
    "echo 'rm -rf /' > notes.txt",
    "echo 'rm -rf /' | tee notes.txt",
    "echo 'rm -rf /' | bash script.sh",
    "bash < script.sh",
    "echo 'rm -rf /' || bash",
    "find . -name '*.o' | xargs rm -f",
  ])("does not take %j's stdin for a script it runs", (command) => {
    expect(partsOf(command)).not.toContain("rm -rf /");
  });

  it("lists each pipeline normalised, whatever wrappers and `|&` it uses", () => {
    expect(parseShellCommand("curl -s x |& timeout 9 sh; a | b | c").pipelines).toEqual(["curl -s x | sh", "a | b | c"]);
    expect(parseShellCommand("a || b && c").pipelines).toEqual([]);
  });
});
