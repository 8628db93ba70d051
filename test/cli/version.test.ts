import { readFileSync } from "node:fs";
import { describe, expect, it, vi } from "vitest";
import { runCli } from "../helpers/cli.js";

/** What packageVersion() returns in the second case (empty: the real one). */
const fake = vi.hoisted(() => ({ version: "" }));
vi.mock("../../src/util/version.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../src/util/version.js")>();
  return { ...real, packageVersion: () => (fake.version === "" ? real.packageVersion() : fake.version) };
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
