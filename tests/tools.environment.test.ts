/** What the agent's commands see of loopgraph's environment: the core variables and those the user names, never a credential. */
import { describe, expect, it } from "vitest";
import { MODEL_KEY_VARIABLES } from "../src/models/spec.js";
import { isSecretVariable, secretValues } from "../src/runs/redact.js";
import { agentEnvironment, environmentPolicyOf } from "../src/tools/environment.js";
import { makeWorkspace } from "./helpers/tool-workspace.js";
import { onCleanup } from "./helpers/workspace.js";

const SECRETS = {
  OPENAI_API_KEY: "sk-openai-0123456789",
  GITHUB_TOKEN: "ghp_0123456789abcdef",
  AWS_SECRET_ACCESS_KEY: "aws-secret-0123456789",
  LANGSMITH_API_KEY: "lsv2-0123456789",
  DATABASE_URL: "postgres://app:hunter2-password@db.internal:5432/app",
  SMTP_PASSWORD: "mail-password-0123",
  NPM_CONFIG_CREDENTIALS: "npm-credentials-0123",
  SIGNING_PASSPHRASE: "passphrase-0123456",
};
const ORDINARY = {
  PATH: "/usr/bin:/bin",
  HOME: "/home/dev",
  LANG: "C.UTF-8",
  GIT_AUTHOR_NAME: "Dev",
  DATABASE_HOST: "db.internal",
  REDIS_URL: "redis://localhost:6379/0",
  AWS_REGION: "eu-west-1",
};

describe("the agent's environment", () => {
  it("passes on the core variables only: every other variable, ordinary or a credential, stays with loopgraph", () => {
    const env = agentEnvironment({ ...SECRETS, ...ORDINARY, LC_ALL: "C", TZ: "UTC", TERM: "xterm" }, { include: [], exclude: [] });
    expect(env).toEqual({ PATH: ORDINARY.PATH, HOME: ORDINARY.HOME, LANG: ORDINARY.LANG, LC_ALL: "C", TZ: "UTC", TERM: "xterm" });
  });

  it("a credential by any name (MYSQL_PWD, DB_PASS, SENTRY_DSN) reaches no command and is redacted from what loopgraph writes", () => {
    const unnamed = { MYSQL_PWD: "hunter2mysql-pw", DB_PASS: "Pa55word-for-db", SENTRY_DSN: "https://abc123def456@o1.ingest.sentry.io/42" };
    const env = agentEnvironment({ ...unnamed, ...ORDINARY }, { include: [], exclude: [] });
    for (const name of Object.keys(unnamed)) expect(env[name], name).toBeUndefined();
    const secrets = secretValues(
      { ...unnamed, ...ORDINARY, npm_package_name: "loopgraph", BUILD_ID: "20261126", APP_DIR: "/srv/app1234567890" },
      MODEL_KEY_VARIABLES,
    );
    expect(secrets.sort()).toEqual(Object.values(unnamed).sort());
  });

  it("LOOPGRAPH_SHELL_ENV_INCLUDE passes named variables on, a credential too (never a model key); LOOPGRAPH_SHELL_ENV_EXCLUDE takes any out", () => {
    const policy = environmentPolicyOf({
      LOOPGRAPH_SHELL_ENV_INCLUDE: "GITHUB_TOKEN, OPENAI_API_KEY, AWS_*, GIT_AUTHOR_*",
      LOOPGRAPH_SHELL_ENV_EXCLUDE: "AWS_SECRET_*, LANG",
    });
    expect(policy).toEqual({ include: ["GITHUB_TOKEN", "OPENAI_API_KEY", "AWS_*", "GIT_AUTHOR_*"], exclude: ["AWS_SECRET_*", "LANG"] });
    const env = agentEnvironment({ ...SECRETS, ...ORDINARY }, policy);
    expect(env.GITHUB_TOKEN).toBe(SECRETS.GITHUB_TOKEN);
    expect(env.OPENAI_API_KEY).toBeUndefined();
    expect(env.AWS_REGION).toBe(ORDINARY.AWS_REGION);
    expect(env.GIT_AUTHOR_NAME).toBe(ORDINARY.GIT_AUTHOR_NAME);
    expect(env.AWS_SECRET_ACCESS_KEY).toBeUndefined();
    expect(env.LANG).toBeUndefined();
    expect(env.PATH).toBe(ORDINARY.PATH);
  });

  it("the shell tool's commands do not see loopgraph's credentials", async () => {
    const saved = { ...process.env };
    onCleanup(() => {
      for (const name of Object.keys(SECRETS)) delete process.env[name];
      Object.assign(process.env, saved);
    });
    Object.assign(process.env, SECRETS);
    const ws = makeWorkspace();
    const printed = await ws.call("shell", { command: "env; cat /proc/self/environ | tr '\\0' '\\n'" });
    expect(printed.ok).toBe(true);
    for (const value of Object.values(SECRETS)) expect(printed.content).not.toContain(value);
    expect(printed.content).toContain("PATH=");
  });

  it("every model provider's key is a secret by its name alone (the store finds secrets by name)", () => {
    expect(MODEL_KEY_VARIABLES.length).toBeGreaterThan(0);
    for (const name of MODEL_KEY_VARIABLES) expect(isSecretVariable(name, undefined, []), name).toBe(true);
  });

  it("what is kept from the agent is also redacted from what loopgraph records", () => {
    // A connection string's password is a secret value of its own.
    expect(secretValues({ ...SECRETS, ...ORDINARY }, MODEL_KEY_VARIABLES).sort()).toEqual(
      [...Object.values(SECRETS), "hunter2-password"].sort(),
    );
  });
});
