/**
 * The benches keep running (README: `npm run bench`): `node dist/bench/run.js --smoke` runs every
 * bench/*.bench.ts at its smallest sizes (bench/common.ts, SMOKE) in one process, so a bench that no
 * longer fits src/ fails here instead of when someone next measures. Its numbers are not checked.
 */
import { execFile } from "node:child_process";
import { readdirSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

describe("the benches", () => {
  it("each bench/*.bench.ts runs to its end at smoke sizes", async () => {
    const benches = readdirSync("bench")
      .filter((name) => name.endsWith(".bench.ts"))
      .map((name) => name.replace(/\.bench\.ts$/, ""))
      .sort();
    const run = await promisify(execFile)(process.execPath, ["dist/bench/run.js", "--smoke"], {
      encoding: "utf8",
      maxBuffer: 64 << 20,
    }).catch((error: { code?: number; stdout?: string; stderr?: string }) => {
      throw new Error(`bench/run.ts --smoke exited ${error.code}:\n${error.stdout?.slice(-4000)}\n${error.stderr}`);
    });
    // run.ts prints "## NAME" before each bench and "(smoke: S s)" once it returned.
    const finished = [...run.stdout.matchAll(/^## (\S+)\n[\s\S]*?^\(smoke: [\d.]+ s\)$/gm)].map((m) => m[1]);
    expect(finished.sort()).toEqual(benches);
  }, 240_000);
});
