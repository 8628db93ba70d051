import { Command, CommanderError } from "commander";
import { InterruptedError } from "../util/errors.js";
import { userError } from "../util/files.js";
import { packageVersion } from "../util/version.js";
import { registerCommands } from "./commands.js";

export function buildProgram(): Command {
  const program = new Command();
  program
    .name("lever")
    .description(
      "Learn which in-context demonstrations to show a VLM, train the selector (SFT, RCE, GRPO), and test honestly whether it beats the baselines.",
    )
    .version(packageVersion())
    .option("-w, --workspace <dir>", "workspace directory (default: $LEVER_WORKSPACE or ./lever-workspace)");
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
    // --help and --version exit 0; every usage error (unknown option or command, missing argument) is
    // the one line commander printed and exit 2, like every other bad input.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    // Ctrl-C: what was kept and how to resume, and the shell's exit code for SIGINT.
    if (error instanceof InterruptedError) {
      process.stderr.write(`interrupted: ${error.message}\n`);
      return 130;
    }
    // Bad input and system conditions (a missing file, a full disk, a locked or read-only database,
    // an input too large for one string) are one line naming the path, never a stack trace.
    const user = userError(error);
    if (user !== undefined) {
      process.stderr.write(`error: ${user.message}\n`);
      return 2;
    }
    process.stderr.write(
      `internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return 1;
  }
}

/** A usage error as one line: commander's "(Did you mean --dataset?)" joins the message it follows. */
export function oneLineUsageError(text: string): string {
  return `${text.trimEnd().replace(/\s*\n\s*/g, " ")}\n`;
}

/** Commander only inherits exitOverride into sub-commands created after it is set; usage errors in
 * `lever data import …` would otherwise call process.exit instead of returning a code. Usage errors
 * are one line (no help after them: `lever <command> --help` shows it). */
function exitOverrideEverywhere(command: Command): void {
  command.exitOverride();
  command.configureOutput({ outputError: (text, write) => write(oneLineUsageError(text)) });
  for (const sub of command.commands) exitOverrideEverywhere(sub);
}
