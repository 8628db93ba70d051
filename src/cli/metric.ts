import type { Command } from "commander";

/** Registers the `metric` commands. (Filled in by the module that owns them.) */
export function register(program: Command): void {
  void program;
}
