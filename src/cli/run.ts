import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { execute } from "../experiment/execute.js";
import { loadExperiment } from "../experiment/load.js";
import { describePlan, plan } from "../experiment/plan.js";
import { DEFAULT_TASK, getTask, TASK_NAMES } from "../task/registry.js";
import { LeverError } from "../util/errors.js";
import { printJson, withWorkspace } from "./common.js";
import { withSigint } from "./interrupt.js";

interface RunFlags {
  set: string[];
  dryRun?: boolean;
  quiet?: boolean;
  json?: boolean;
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** The experiment file `lever demo` runs for a task (shipped in the package's examples/; `Task.demo`). */
export function demoExperimentFile(taskName: string = DEFAULT_TASK): string {
  const name = getTask(taskName, "--task").demo;
  const here = dirname(fileURLToPath(import.meta.url));
  for (const up of ["../../..", "../.."]) {
    const file = join(here, up, "examples", name);
    if (existsSync(file)) return file;
  }
  throw new LeverError(`examples/${name} is missing from this installation`);
}

/** Registers `lever run` and `lever demo` (`lever status`: src/cli/status.ts). */
export function register(program: Command): void {
  const addRunOptions = (command: Command) =>
    command
      .option(
        "--set <key=value>",
        "override a setting of the file (YAML value; a list is a sweep); repeatable",
        collect,
        [],
      )
      .option("--dry-run", "print the plan (variants, stages, what is shared and what is already done) and stop")
      .option("--quiet", "no progress output of the stages")
      .option("--json", "print the plan or the result as JSON");

  addRunOptions(
    program
      .command("run")
      .description(
        "run an experiment file (YAML/JSON): data → pools → beams → SFT → rollouts → RCE → GRPO → evaluation → comparison → report; sweeps share identical upstream stages; resumable",
      )
      .argument("<file>", "experiment file (examples/*.yaml)"),
  ).action(async (file: string, flags: RunFlags, command: Command) => runExperiment(command, file, flags));

  addRunOptions(
    program
      .command("demo")
      .description(
        "the whole chain on the simulated VLM (examples/demo.yaml): synthetic world, pools, beams, SFT, rollouts, RCE, GRPO offline and online, evaluation against zero-shot, random, top-k, the answer vote, the informed ceiling and the oracle with intervals, the HTML report; --task caption runs the caption chain (examples/caption-demo.yaml, CIDEr)",
      )
      .option("--task <task>", `the task whose chain runs: ${TASK_NAMES.join(", ")}`, DEFAULT_TASK),
  ).action(async (flags: RunFlags & { task: string }, command: Command) =>
    runExperiment(command, demoExperimentFile(flags.task), flags),
  );
}

async function runExperiment(command: Command, file: string, flags: RunFlags): Promise<void> {
  const loaded = loadExperiment(file, flags.set);
  const p = plan(loaded);
  await withWorkspace(
    command,
    async (ws) => {
      const described = describePlan(ws, p);
      if (flags.dryRun) {
        if (flags.json) printJson(described);
        else {
          process.stdout.write(`${described.variants.length} variant(s) of ${file}\n`);
          for (const v of described.variants) process.stdout.write(`  #${v.index} ${v.label}\n`);
          // In the stage table's order (the plan's).
          for (const s of described.stages)
            process.stdout.write(
              `  ${s.stage.padEnd(9)} ${s.id}  ${s.state.padEnd(7)} used by variant${s.usedBy.length > 1 ? "s" : ""} ${s.usedBy.join(", ")}${s.usedBy.length > 1 ? " (shared)" : ""}\n`,
            );
        }
        return;
      }
      const report = await withSigint((signal) =>
        execute(ws, p, {
          log: (line) => process.stderr.write(`${line}\n`),
          progress: flags.quiet ? null : process.stderr,
          signal,
        }),
      );
      if (flags.json) printJson({ plan: described, ...report });
      else {
        if (report.comparison !== null) process.stdout.write(`${report.comparison}\n`);
        if (report.reportPath !== null) process.stdout.write(`report: ${report.reportPath}\n`);
      }
    },
    { create: true },
  );
}
