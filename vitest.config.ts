import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // The checkpoint conformance suite registers its tests through vitest globals.
    globals: true,
    include: ["tests/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: "forks",
  },
});
