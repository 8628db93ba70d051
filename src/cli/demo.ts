import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { EMBEDDING_KINDS } from "../data/embeddings.js";
import { annotationsFileName, embeddingFileName, IMAGES_DIR, questionsFileName, WORLD_FILE } from "../sim/synth.js";
import { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import { workspaceDir } from "./common.js";
import { runLever } from "./program.js";

interface DemoFlags {
  items: string;
  valItems: string;
  queries: string;
  shots: string;
  seed: string;
}

/**
 * `lever demo`: the whole evaluation chain on the embedded default (the simulated VLM), through
 * exactly the commands a user runs on real data: synthesise a world, import it, import its
 * embeddings, evaluate the baselines and the oracle. Every step is resumable, so a second run
 * reuses the workspace and makes no VLM calls.
 */
export function register(program: Command): void {
  program
    .command("demo")
    .description(
      "run the chain on the simulated VLM: synthesise a world, import it, evaluate zero-shot, random, top-k and the oracle at 1-4 shots",
    )
    .option("--items <n>", "train (index) questions in the synthetic world", "5000")
    .option("--val-items <n>", "val questions in the synthetic world", "1000")
    .option("--queries <n>", "evaluated val questions", "500")
    .option("--shots <list>", "shot counts", "1,2,3,4")
    .option("--seed <n>", "world and evaluation seed", "1")
    .action(async (flags: DemoFlags, command: Command) => {
      const workspace = resolve(workspaceDir(command));
      const dataDir = join(workspace, "demo-data", `seed-${flags.seed}`);
      const lever = async (...args: string[]) => {
        process.stderr.write(`\n$ lever ${args.join(" ")}\n`);
        const code = await runLever(["--workspace", workspace, ...args]);
        if (code !== 0) throw new LeverError(`demo step failed (exit ${code}): lever ${args.join(" ")}`);
      };

      if (!existsSync(join(dataDir, WORLD_FILE))) {
        await lever(
          "data",
          "synth",
          "--out",
          dataDir,
          "--items",
          flags.items,
          "--val-items",
          flags.valItems,
          "--seed",
          flags.seed,
        );
      }
      const names = { train: `demo${flags.seed}-train`, val: `demo${flags.seed}-val` };
      for (const split of ["train", "val"] as const) {
        const ws = Workspace.open(workspace);
        const hasDataset = ws.getDataset(names[split]) !== undefined;
        const missingKinds = EMBEDDING_KINDS.filter((kind) => ws.getEmbedding(names[split], kind) === undefined);
        ws.close();
        if (!hasDataset) {
          await lever(
            "data",
            "import",
            "--format",
            "vqa",
            "--questions",
            join(dataDir, questionsFileName(split)),
            "--annotations",
            join(dataDir, annotationsFileName(split)),
            "--images",
            join(dataDir, IMAGES_DIR),
            "--split",
            split,
            "--name",
            names[split],
          );
        }
        for (const kind of missingKinds) {
          await lever(
            "embed",
            "import",
            join(dataDir, embeddingFileName(split, kind)),
            "--dataset",
            names[split],
            "--kind",
            kind,
          );
        }
      }
      await lever(
        "eval",
        "--dataset",
        names.val,
        "--index",
        names.train,
        "--queries",
        `first:${flags.queries}`,
        "--shots",
        flags.shots,
        "--retriever",
        "zero,random,topk-image,topk-text,topk-joint,oracle",
        "--vlm",
        "sim",
        "--world",
        join(dataDir, WORLD_FILE),
        "--seed",
        flags.seed,
      );
    });
}
