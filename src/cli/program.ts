import { Command, CommanderError } from "commander";
import { LeverError } from "../util/errors.js";
import { registerCommands } from "./commands.js";

export function buildProgram(): Command {
  const program = new Command();
  program
    .name("lever")
    .description(
      "Learn which in-context demonstrations to show a VLM, train the selector (SFT, RCE, GRPO), and test honestly whether it beats the baselines.",
    )
    .version("0.1.0")
    .option("-w, --workspace <dir>", "workspace directory (default: $LEVER_WORKSPACE or ./lever-workspace)")
    .showHelpAfterError();
  registerCommands(program);
  return program;
}

/** Runs `lever` with the given arguments (without "node lever"); returns the exit code. */
export async function runLever(args: string[]): Promise<number> {
  const program = buildProgram();
  exitOverrideEverywhere(program);
  try {
    await program.parseAsync(args, { from: "user" });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    if (error instanceof LeverError) {
      process.stderr.write(`error: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(
      `internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return 1;
  }
}

/** Commander only inherits exitOverride into sub-commands created after it is set; usage errors in
 * `lever data import …` would otherwise call process.exit instead of returning a code. */
function exitOverrideEverywhere(command: Command): void {
  command.exitOverride();
  for (const sub of command.commands) exitOverrideEverywhere(sub);
}
