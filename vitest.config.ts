import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The slowest test files (measured), longest first. They start first, so the workers finish
 * together instead of one of them starting a 40-second file when everything else is done.
 */
const SLOW_FIRST = [
  "test/cli/interrupt.test.ts",
  "test/bench.test.ts",
  "test/experiment/caption-chain.test.ts",
  "test/experiment/execute.test.ts",
  "test/cli/concurrent.test.ts",
  "test/cli/readonly.test.ts",
  "test/experiment/guard.test.ts",
  "test/train/rl-stage.test.ts",
];

/**
 * Files that measure wall-clock latency under load of their own (32 clients, a server and a mock VLM in
 * one process, every request within a bound): they run after the others, one at a time, so that
 * another worker's CPU-bound work (a training run, child processes) does not slow their event loop.
 */
const ALONE = ["test/serve/load.test.ts"];

/** Vitest's order (failed first, then by recorded duration or size) with SLOW_FIRST moved to the front. */
class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const i = SLOW_FIRST.findIndex((slow) => file.moduleId.endsWith(slow));
      return i < 0 ? SLOW_FIRST.length : i;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

/** What both projects share. */
const common = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: "forks",
  // Test files run one after another in each worker process and share its module cache: src/ is
  // loaded once per worker rather than once per file (importing the program was a third of the
  // suite's time). A file that needs a fresh module (a vi.mock of something the program imports)
  // resets the cache itself (test/cli/version.test.ts).
  isolate: false,
} as const;

export default defineConfig({
  test: {
    // The pool reads this one (the projects' own copy is what each worker reads).
    isolate: common.isolate,
    // Vitest's default is one worker fewer than the CPUs: one worker on a 2-core machine, which then
    // idles a core (the main process has little to do, and many tests wait for a child process).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    sequence: { sequencer: SlowFirst },
    projects: [
      {
        test: {
          ...common,
          name: "parallel",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...ALONE],
        },
      },
      { test: { ...common, name: "alone", include: ALONE, poolOptions: { forks: { singleFork: true } } } },
    ],
    reporters: ["default", "./test/summary-reporter.ts"],
  },
});
