/**
 * A run name (`--name`, `eval --run`) must be one a reference can name: a name shaped like a run id loses
 * to the id, one with ':' reads as RUN:best|last|epoch-N, one with '/' as RUN/RETRIEVER, and an empty or
 * blank one names nothing. Each is refused as one line naming the flag, before any work (src/store/runs.ts).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "vitest";
import { expectUserError, runCli } from "../helpers/cli.js";

const ws = join(mkdtempSync(join(tmpdir(), "lever-run-names-")), "ws");
const SHAPE =
  "a run name is letters, digits, '.', '_' and '-', starting with a letter or digit (no ':', '/' or spaces)";
const ID = "a run name must not look like a run id (<kind>-NNNN); choose another";

describe("run names that no reference could name", () => {
  it("are refused by train sft/rce --name and eval --run, naming the flag", async () => {
    const commands: [string[], string][] = [
      [["train", "sft", "--beams", "b", "--pools", "p", "--dataset", "d"], "--name"],
      [["train", "rce", "--rollouts", "r", "--dataset", "d", "--init", "random"], "--name"],
      [["eval", "--dataset", "d", "--index", "i"], "--run"],
    ];
    const names: [string, string][] = [
      ["sft-0001", ID],
      ["eval-0042", ID],
      ["mine:best", SHAPE],
      ["a/b", SHAPE],
      ["", SHAPE],
      ["  ", SHAPE],
      ["my run", SHAPE],
    ];
    for (const [args, flag] of commands)
      for (const [name, message] of names)
        expectUserError(await runCli(["--workspace", ws, ...args, flag, name]), `error: field "${flag}": ${message}`);
  });
});
