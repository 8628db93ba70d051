import type { Command } from "commander";

/** Every command group registers itself here; one file per group under src/cli/. */
export function registerCommands(program: Command): void {
  void program;
}
