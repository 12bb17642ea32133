import { homedir } from "node:os";
import { describe, expect, it } from "vitest";
import { sensitiveGlobForms, sensitiveMatches } from "../src/policy/glob-forms.js";
import { parseShellCommand } from "../src/policy/shell-parts.js";

describe("globs matched against the sensitive paths the built-in rules know", () => {
  it.each([
    ["/e?c/shadow", ["/etc/shadow"]],
    ["/etc/s*", ["/etc/shadow", "/etc/sudoers"]],
    ["/[e]tc/[!x]shadow", ["/etc/gshadow"]],
    ["~/.ss?/id_rsa", ["~/.ssh/id_rsa"]],
    ["$HOME/.gnu*", ["$HOME/.gnupg"]],
    ["/home/*/.a?s/credentials", ["/home/*/.aws/credentials"]],
    ["/home/bob/.config/gcl*", ["/home/bob/.config/gcloud"]],
    ["/**/.ssh/id_ed25519", ["/root/.ssh/id_ed25519", "/home/**/.ssh/id_ed25519", "/Users/**/.ssh/id_ed25519"]],
    ["~root/.ss?", ["~root/.ssh"]],
    [".en?", [".env"]],
    ["config/.env.*", ["config/.env.local"]],
    ["keys/id_*", ["keys/id_rsa", "keys/id_dsa", "keys/id_ecdsa", "keys/id_ed25519"]],
  ])("%j can match %j", (glob, paths) => {
    expect(sensitiveMatches(glob)).toEqual(expect.arrayContaining(paths));
  });

  it.each(["/etc/*.conf", "src/*.ts", "~/*", "~/.b*", "/home/*/projects/*", "*.json", "*", "/etc", "/e*"])(
    "%j matches none (a wildcard does not match a leading dot; a shorter glob is not the file)",
    (glob) => {
      expect(sensitiveMatches(glob)).toEqual([]);
    },
  );

  it("matches the home directory by its path too", () => {
    expect(sensitiveMatches(`${homedir()}/.s?h`)).toContain(`${homedir()}/.ssh`);
  });

  it("writes the part with each glob word or redirection target replaced", () => {
    const [part] = parseShellCommand("cat -n /e?c/shadow src/*.ts < /etc/gsha*").parts;
    expect(sensitiveGlobForms(part!)).toEqual(["cat -n /etc/shadow src/*.ts < /etc/gsha*", "cat -n /e?c/shadow src/*.ts < /etc/gshadow"]);
    expect(sensitiveGlobForms(parseShellCommand("cat '/e?c/shadow'").parts[0]!)).toEqual([]);
  });
});
