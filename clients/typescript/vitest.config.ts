import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    // The machine running them may be loaded: the worker is real.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // One worker for every file: the files share it, one at a time.
    fileParallelism: false,
    benchmark: { include: ["bench/**/*.bench.ts"] },
  },
});
