import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../src/errors.js";
import { listGraphs, packageGraphsDir, resolveGraphPath } from "../src/graph/index.js";
import { sharedTempDir } from "./helpers/workspace.js";

const repoRoot = fileURLToPath(new URL("..", import.meta.url));

/** A project with its own graphs/ and a stand-in for the package's shipped graphs/. */
const root = sharedTempDir("loopgraph-paths-");
let project: string;
let shipped: string;

function write(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

beforeAll(() => {
  project = path.join(root.path, "project");
  shipped = path.join(root.path, "package", "graphs");
  write(path.join(project, "graphs", "review.yaml"), "version: 1\nname: review\ndescription: Project review loop.\n");
  write(path.join(project, "graphs", "alt.yml"), "version: 1\nname: alt\n");
  write(path.join(project, "graphs", "broken.yaml"), "description: [unclosed\n");
  write(path.join(project, "graphs", "notes.txt"), "not a graph\n");
  write(path.join(project, "flows", "local.yaml"), "version: 1\n");
  write(path.join(shipped, "review.yaml"), "description: Shipped review loop.\n");
  write(path.join(shipped, "monitor.yaml"), "description: Mediator and Looper.\n");
});

describe("resolveGraphPath", () => {
  it("takes an existing path first, with or without its extension", () => {
    const local = path.join(project, "flows", "local.yaml");
    expect(resolveGraphPath("flows/local.yaml", project, shipped)).toBe(local);
    expect(resolveGraphPath("flows/local", project, shipped)).toBe(local);
    expect(resolveGraphPath(local, "/", shipped)).toBe(local);
  });

  it("looks a name up in the project's graphs/, then in the package's", () => {
    expect(resolveGraphPath("review", project, shipped)).toBe(path.join(project, "graphs", "review.yaml"));
    expect(resolveGraphPath("alt", project, shipped)).toBe(path.join(project, "graphs", "alt.yml"));
    expect(resolveGraphPath("monitor", project, shipped)).toBe(path.join(shipped, "monitor.yaml"));
    expect(resolveGraphPath("monitor.yaml", project, shipped)).toBe(path.join(shipped, "monitor.yaml"));
  });

  it("names every place it tried when nothing is found", () => {
    const attempt = () => resolveGraphPath("nope", project, shipped);
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(path.join(project, "graphs", "nope.yaml"));
    expect(attempt).toThrow(path.join(shipped, "nope.yaml"));
    expect(() => resolveGraphPath("nope.yaml", project, shipped)).toThrow(path.join(project, "nope.yaml"));
  });

  it("never takes a file beside the current directory for a bare name: an agent could have written it", () => {
    write(path.join(project, "monitor.yaml"), "version: 1\nname: planted\n");
    write(path.join(project, "monitor"), "version: 1\nname: planted\n");
    expect(resolveGraphPath("monitor", project, shipped)).toBe(path.join(shipped, "monitor.yaml"));
    // Named with its extension, the file is a path the user chose.
    expect(resolveGraphPath("monitor.yaml", project, shipped)).toBe(path.join(project, "monitor.yaml"));
  });

  it("does not look up paths with a directory part as names", () => {
    expect(() => resolveGraphPath("flows/review", project, shipped)).toThrow(
      /^graph "flows\/review" not found \(tried [^)]*flows\/review\.yml\)/,
    );
  });
});

describe("packageGraphsDir", () => {
  it("is the graphs/ folder of the loopgraph package", () => {
    expect(packageGraphsDir()).toBe(path.join(repoRoot, "graphs"));
  });
});

describe("listGraphs", () => {
  it("lists project graphs, then shipped graphs not hidden by a project graph of the same name", async () => {
    expect(await listGraphs(project, shipped)).toEqual([
      { name: "alt", description: undefined, path: path.join(project, "graphs", "alt.yml"), source: "project" },
      { name: "broken", description: undefined, path: path.join(project, "graphs", "broken.yaml"), source: "project" },
      {
        name: "review",
        description: "Project review loop.",
        path: path.join(project, "graphs", "review.yaml"),
        source: "project",
      },
      { name: "monitor", description: "Mediator and Looper.", path: path.join(shipped, "monitor.yaml"), source: "package" },
    ]);
  });

  it("lists the package's graphs once when run inside the package itself", async () => {
    const graphs = await listGraphs(repoRoot);
    expect(graphs.every((graph) => graph.source === "project")).toBe(true);
  });
});
