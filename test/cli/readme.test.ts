import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { Command as CommanderCommand } from "commander";
import { describe, expect, it } from "vitest";
import { registerCommands } from "../../src/cli/commands.js";

function commandPaths(command: Command, prefix: string[] = []): string[] {
  return command.commands.flatMap((sub) => {
    const path = [...prefix, sub.name()];
    return sub.commands.length > 0 ? commandPaths(sub, path) : [path.join(" ")];
  });
}

describe("README", () => {
  const readme = readFileSync("README.md", "utf8");
  const program = new CommanderCommand("lever");
  registerCommands(program);

  it("lists every command that `lever --help` offers in its command reference", () => {
    const reference = readme.slice(readme.indexOf("## Command reference"));
    const missing = commandPaths(program).filter((path) => !reference.includes(`lever ${path}`));
    expect(missing).toEqual([]);
  });

  it("lists no command that does not exist", () => {
    const reference = readme.slice(readme.indexOf("## Command reference"));
    const known = new Set(commandPaths(program));
    const listed = [...reference.matchAll(/^\| `lever ([a-z][a-z -]*)`/gm)].map((m) => m[1].trim());
    expect(listed.filter((path) => !known.has(path))).toEqual([]);
  });

  it("shows the two set-up commands: the main job on the simulated VLM, and the tests", () => {
    expect(readme).toContain("npm ci && npm run lever -- demo");
    expect(readme).toContain("npm ci && npm test");
  });

  it("says how to run lever after npm ci, which does not put it on PATH", () => {
    const setup = readme.slice(readme.indexOf("## Set up and run"), readme.indexOf("## Real data"));
    expect(setup).toContain("npx lever");
    expect(setup).toContain("npm link");
  });

  it("chains training by run names: RCE and GRPO get --init, and every checkpoint named is a run named before", () => {
    const commands = [...readme.matchAll(/`(lever [^`]+)`/g)].map((m) => m[1].replace(/\s+/g, " "));
    const training = commands.filter((c) => /^lever train (rce|grpo) --/.test(c));
    expect(training.length).toBeGreaterThan(0);
    for (const c of training) expect(c).toMatch(/ --init \S+/);
    // Validation answers come from a VLM: a real-data line names one (without it, the simulator answers).
    for (const c of training.filter((t) => t.includes("okvqa")))
      expect(c).toMatch(/ --vlm openai\b| --no-validation-answers\b/);
    const named = new Set<string>();
    const used: string[] = [];
    for (const c of commands) {
      for (const m of c.matchAll(/(?:--init |--checkpoint |selector:)([^\s,`]+)/g))
        if (m[1] !== "random" && m[1] !== "CKPT" && !named.has(m[1])) used.push(`${m[1]} in: ${c}`);
      for (const m of c.matchAll(/--name (\S+)/g)) named.add(m[1]);
    }
    expect(used).toEqual([]);
  });
});
