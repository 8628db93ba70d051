import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Test files run one after another in each worker process and share its module cache: src/ is
    // loaded once per worker rather than once per file (importing the program was a third of the
    // suite's time). A file that needs a fresh module (a vi.mock of something the program imports)
    // resets the cache itself (test/cli/version.test.ts).
    isolate: false,
    reporters: ["default", "./test/summary-reporter.ts"],
  },
});
