import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // The checkpoint conformance suite registers its tests through vitest globals.
    globals: true,
    include: ["tests/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Most tests wait on the CLI processes they start: more workers than cores keep both cores busy.
    maxWorkers: 3,
  },
});
