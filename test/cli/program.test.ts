import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { expectUserError, runCli } from "../helpers/cli.js";

describe("runLever (the real program, as the CLI runs it)", () => {
  it("returns commander's usage error code from a nested sub-command instead of exiting the process", async () => {
    const exit = vi.spyOn(process, "exit").mockImplementation((() => undefined) as never);
    try {
      const result = await runCli(["data", "import", "--questions", "q.json"]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^error: required option[^\n]*\n$/);
      expect(exit).not.toHaveBeenCalled();
    } finally {
      exit.mockRestore();
    }
  });

  it("prints a nested sub-command's help on stdout and returns 0", async () => {
    const result = await runCli(["metric", "vqa", "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: lever metric vqa/);
  });

  it("turns a LeverError into exit code 2 and one 'error:' line naming the file", async () => {
    const result = await runCli([
      "metric",
      "vqa",
      "--results",
      "/nonexistent/r.json",
      "--questions",
      "q",
      "--annotations",
      "a",
    ]);
    expectUserError(result, /^error: \/nonexistent\/r\.json: no such file \(ENOENT\)/);
    expect(result.stdout).toBe("");
  });

  it("a directory given where a file is expected is one line naming it, not a stack trace", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lever-program-"));
    const result = await runCli(["metric", "vqa", "--results", dir, "--questions", dir, "--annotations", dir]);
    expectUserError(result, `error: ${dir}: is a directory, not a file (EISDIR)`);
    const synth = await runCli(["data", "synth", "--items", "10", "--out", dir, "--params", dir]);
    expectUserError(synth, `error: ${dir}: is a directory, not a file (EISDIR)`);
  });

  it("a usage error is one line and exit 2: a flag typo's hint joins it, no help follows", async () => {
    const typo = await runCli(["eval", "--datset", "x"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toBe("error: unknown option '--datset' (Did you mean --dataset?)\n");
    const command = await runCli(["evl"]);
    expect(command.code).toBe(2);
    expect(command.stderr).toBe("error: unknown command 'evl' (Did you mean eval?)\n");
    const missing = await runCli(["compare"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error: missing required argument 'runs'\n$/);
  });

  it("a closed stdout (lever … | head) ends quietly with exit 0, not an EPIPE stack trace", async () => {
    const child = spawn(process.execPath, [resolve("dist/src/cli/main.js"), "--help"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.destroy(); // the reader is gone before lever writes
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += String(chunk);
    });
    const code = await new Promise<number | null>((done) => child.on("close", done));
    expect(stderr).toBe("");
    expect(code).toBe(0);
  });
});
