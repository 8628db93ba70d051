import { expect, vi } from "vitest";
import { runLever } from "../../src/cli/program.js";

/** What a user of `lever` sees: the exit code and everything printed. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `lever ARGS` in-process through the real program (`runLever`): a LeverError becomes one
 * "error: …" line on stderr and exit code 2, a usage error is commander's one-line message and code 2.
 */
export async function runCli(args: string[]): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const code = await runLever(args);
    return { code, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

/** Runs `lever ARGS`, which must succeed; returns its stdout. A failure shows the code and stderr. */
export async function runCliOk(args: string[]): Promise<string> {
  const result = await runCli(args);
  if (result.code !== 0) throw new Error(`lever ${args.join(" ")} exited ${result.code}:\n${result.stderr}`);
  return result.stdout;
}

/** Asserts the user-facing failure (a LeverError): exit code 2 and exactly one "error: …" line on stderr,
 * containing `message` when given. */
export function expectUserError(result: CliResult, message?: RegExp | string): void {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).toMatch(/^error: [^\n]*\n$/);
  if (message === undefined) return;
  if (typeof message === "string") expect(result.stderr).toContain(message);
  else expect(result.stderr).toMatch(message);
}
