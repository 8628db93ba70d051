import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { runCli as RunCli } from "../helpers/cli.js";

/** What packageVersion() returns in the second case (empty: the real one). */
const fake = { version: "" };
let runCli: typeof RunCli;

// Test files share their worker's module cache (vitest.config.ts: isolate false), so the program may
// already be loaded with the real version module: drop the cache, mock, and load the program afresh.
beforeAll(async () => {
  vi.resetModules();
  vi.doMock("../../src/util/version.js", async (importOriginal) => {
    const real = await importOriginal<typeof import("../../src/util/version.js")>();
    return { ...real, packageVersion: () => (fake.version === "" ? real.packageVersion() : fake.version) };
  });
  ({ runCli } = await import("../helpers/cli.js"));
});

// The files after this one in the worker load the real module again.
afterAll(() => {
  vi.doUnmock("../../src/util/version.js");
  vi.resetModules();
});

describe("lever --version", () => {
  it("prints package.json's version", async () => {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    const result = await runCli(["--version"]);
    expect(result).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: "" });
  });

  it("prints what packageVersion() reads, not a version written into the program", async () => {
    fake.version = "9.8.7-test";
    try {
      expect((await runCli(["--version"])).stdout).toBe("9.8.7-test\n");
    } finally {
      fake.version = "";
    }
  });
});
