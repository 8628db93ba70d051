import type { Command } from "commander";
import { EMBEDDING_KINDS, type EmbeddingKind } from "../data/embeddings.js";
import type { ConstructOrder } from "../data/leverplus/beams.js";
import { type ImportEmbeddingResult, importEmbedding } from "../store/ingest/embeddings.js";
import {
  exportBeamsFile,
  exportRolloutsFile,
  importBeamsFile,
  importPoolsFile,
  importRolloutsFile,
} from "../store/ingest/leverplus.js";
import { LeverError } from "../util/errors.js";
import { group, printJson, withWorkspace } from "./common.js";

/**
 * `lever data import-beams|import-rollouts|import-pools|export-beams|export-rollouts` (Lever-Plus
 * artefacts ⇄ workspace, docs/provenance.md#beam-data) and `lever embed import` (embedding matrices).
 */
export function register(program: Command): void {
  const data = group(program, "data", "datasets: import, inspect, list");
  const embed = group(program, "embed", "embedding matrices: import, compute");
  registerImportBeams(data);
  registerImportRollouts(data);
  registerImportPools(data);
  registerExportBeams(data);
  registerExportRollouts(data);
  registerEmbedImport(embed);
}

/** `lever data import-beams FILE`. */
function registerImportBeams(data: Command): void {
  data
    .command("import-beams <file>")
    .description("import Lever-Plus beam-search data (generate_data.py output) as artifacts/beams/<name>.json")
    .requiredOption("--dataset <name>", "dataset whose rows the file's idx refer to (the train split)")
    .option("--out <name>", "artefact name (default: the file name, made safe)")
    .option("--construct-order <order>", "left | right (default: from the file name, else left)")
    .option("--replace", "overwrite an existing artefact of the same name")
    .option("--json", "print the result as JSON")
    .action((file: string, flags: ImportFlags & { constructOrder?: string }, command: Command) => {
      const constructOrder = parseChoice(flags.constructOrder, ["left", "right"], "--construct-order") as
        | ConstructOrder
        | undefined;
      return withWorkspace(command, (ws) => {
        const result = importBeamsFile(ws, {
          file,
          dataset: flags.dataset,
          out: flags.out,
          constructOrder,
          replace: flags.replace,
        });
        report(result.warnings, flags.json, result, [
          `imported ${result.summary.beams} beams of ${result.summary.queries} queries (${result.summary.shots.join("/")} shots, construct_order ${result.constructOrder} → prompt order ${result.summary.promptOrder})`,
          `artefact: artifacts/${result.artifact.path} (beam set "${result.name}")`,
        ]);
      });
    });
}

/** `lever data import-rollouts FILE`. */
function registerImportRollouts(data: Command): void {
  data
    .command("import-rollouts <file>")
    .description("import Lever-Plus RL data (rl_data*.json, any flavour) as artifacts/rollouts/<name>.json")
    .requiredOption("--dataset <name>", "dataset whose rows the file's idx refer to (the train split)")
    .option("--out <name>", "artefact name (default: the file name, made safe)")
    .option("--shots <n>", "required ICDs per trajectory (default: whatever the first trajectory has)")
    .option("--replace", "overwrite an existing artefact of the same name")
    .option("--json", "print the result as JSON")
    .action((file: string, flags: ImportFlags & { shots?: string }, command: Command) => {
      const shots = flags.shots === undefined ? undefined : parsePositiveInt(flags.shots, "--shots");
      return withWorkspace(command, (ws) => {
        const result = importRolloutsFile(ws, {
          file,
          dataset: flags.dataset,
          out: flags.out,
          shots,
          replace: flags.replace,
        });
        const s = result.summary;
        report(result.warnings, flags.json, result, [
          `imported ${s.trajectories} trajectories of ${s.queries} queries (${s.perQuery.min}–${s.perQuery.max} per query, ${s.queriesWithPool} with a fixed pool)`,
          `mean VQA accuracy ${fmt(s.meanAcc)}, ${fmt(100 * s.positiveFraction, 1)}% positive, ${s.mixedQueries} queries with both positives and negatives`,
          `artefact: artifacts/${result.artifact.path} (rollout set "${result.name}")`,
        ]);
      });
    });
}

/** `lever data import-pools FILE`. */
function registerImportPools(data: Command): void {
  data
    .command("import-pools <file>")
    .description("import a Lever-Plus sampler cache {anchor idx: [K idx]} as artifacts/pools/<name>.json")
    .requiredOption("--dataset <name>", "index dataset: the candidates' rows (the train split)")
    .requiredOption("--queries <name>", "query dataset: the anchors' rows (the train split for Lever-Plus caches)")
    .option("--sampler <name>", "sampler name (default: from the file name, e.g. RandSampler)")
    .option("--k <n>", "pool size (default: from the file name, else the first pool's size)")
    .option("--seed <n>", "seed the cache was drawn with", "42")
    .option("--out <name>", "artefact name (default: the file name, made safe)")
    .option("--drop-conflicts", "drop candidates that are the query or share its image, cutting pools to the shortest")
    .option("--replace", "overwrite an existing artefact of the same name")
    .option("--json", "print the result as JSON")
    .action(
      (
        file: string,
        flags: ImportFlags & { queries: string; sampler?: string; k?: string; seed: string; dropConflicts?: boolean },
        command: Command,
      ) => {
        const k = flags.k === undefined ? undefined : parsePositiveInt(flags.k, "--k");
        const seed = Number(flags.seed);
        if (!Number.isSafeInteger(seed))
          throw new LeverError(`must be an integer, got "${flags.seed}"`, { field: "--seed" });
        return withWorkspace(command, (ws) => {
          const result = importPoolsFile(ws, {
            file,
            dataset: flags.dataset,
            queries: flags.queries,
            out: flags.out,
            sampler: flags.sampler,
            k,
            seed,
            dropConflicts: flags.dropConflicts,
            replace: flags.replace,
          });
          report(result.warnings, flags.json, result, [
            `imported ${result.summary.queries} pools of K = ${result.summary.k} (sampler ${result.summary.sampler})`,
            `artefact: artifacts/${result.artifact.path} (pool set "${result.name}")`,
          ]);
        });
      },
    );
}

/** `lever data export-beams NAME`. */
function registerExportBeams(data: Command): void {
  data
    .command("export-beams <name>")
    .description("write a stored beam set as a Lever-Plus beam-data JSON file")
    .requiredOption("--out <file>", "output file")
    .option("--replace", "overwrite --out when it exists with other content")
    .action((name: string, flags: { out: string; replace?: boolean }, command: Command) => {
      return withWorkspace(command, (ws) => {
        const summary = exportBeamsFile(ws, name, flags.out, { replace: flags.replace });
        process.stdout.write(`wrote ${summary.beams} beams of ${summary.queries} queries to ${flags.out}\n`);
      });
    });
}

/** `lever data export-rollouts NAME`. */
function registerExportRollouts(data: Command): void {
  data
    .command("export-rollouts <name>")
    .description("write a stored rollout set as a Lever-Plus RL-data JSON file")
    .requiredOption("--out <file>", "output file")
    .option("--replace", "overwrite --out when it exists with other content")
    .action((name: string, flags: { out: string; replace?: boolean }, command: Command) => {
      return withWorkspace(command, (ws) => {
        const summary = exportRolloutsFile(ws, name, flags.out, { replace: flags.replace });
        process.stdout.write(
          `wrote ${summary.trajectories} trajectories of ${summary.queries} queries to ${flags.out}\n`,
        );
      });
    });
}

/** `lever embed import FILE`. */
function registerEmbedImport(embed: Command): void {
  embed
    .command("import <file>")
    .description("copy an embedding matrix (.npy + ids, or .safetensors) into the workspace and register it")
    .requiredOption("--dataset <name>", "dataset the rows belong to")
    .option("--kind <kind>", `embedding kind: ${EMBEDDING_KINDS.join(" | ")}`, "joint")
    .option("--ids <file>", "JSON array of the rows' question ids (default: <stem>.ids.json beside the file)")
    .option("--dataset-order", "row r is the r-th dataset item in question-id order (Lever-Plus exports)")
    .option("--normalize", "scale every row to unit L2 norm")
    .option("--replace", "replace a registered embedding of this kind that has other content")
    .option("--json", "print the result as JSON")
    .action(
      (
        file: string,
        flags: {
          dataset: string;
          kind: string;
          ids?: string;
          datasetOrder?: boolean;
          normalize?: boolean;
          replace?: boolean;
          json?: boolean;
        },
        command: Command,
      ) => {
        const kind = parseChoice(flags.kind, EMBEDDING_KINDS, "--kind") as EmbeddingKind;
        if (flags.ids !== undefined && flags.datasetOrder)
          throw new LeverError("give either --ids or --dataset-order, not both", { field: "--ids" });
        return withWorkspace(command, (ws) => {
          const result = importEmbedding(ws, {
            file,
            dataset: flags.dataset,
            kind,
            idsFile: flags.ids,
            datasetOrder: flags.datasetOrder,
            normalize: flags.normalize,
            replace: flags.replace,
          });
          report([], flags.json, result, embedImportLines(result));
        });
      },
    );
}

/** What `lever embed import` prints: the matrix, its row norms, dataset coverage and the files. */
function embedImportLines(result: ImportEmbeddingResult): string[] {
  const n = result.norms;
  const lines = [
    `imported ${result.rows} × ${result.dim} ${result.kind} embeddings for "${result.dataset}" (source ${result.sourceDtype}, ids from ${result.idsSource})`,
    `row norms: min ${fmt(n.min)}, max ${fmt(n.max)}, mean ${fmt(n.mean)}${result.normalized ? " → normalised to 1" : ""}`,
  ];
  if (result.missingFromMatrix)
    lines.push(`note: ${result.missingFromMatrix} of ${result.datasetItems} dataset items have no row`);
  lines.push(`artefact: artifacts/${result.path} + artifacts/${result.idsPath}`);
  return lines;
}

interface ImportFlags {
  dataset: string;
  out?: string;
  replace?: boolean;
  json?: boolean;
}

function report(warnings: string[], json: boolean | undefined, result: unknown, lines: string[]): void {
  for (const warning of warnings) process.stderr.write(`warning: ${warning}\n`);
  if (json) printJson(result);
  else process.stdout.write(`${lines.join("\n")}\n`);
}

function parseChoice(value: string | undefined, choices: readonly string[], field: string): string | undefined {
  if (value !== undefined && !choices.includes(value))
    throw new LeverError(`must be one of ${choices.join(", ")}, got "${value}"`, { field });
  return value;
}

function parsePositiveInt(text: string, field: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) throw new LeverError(`must be a positive integer, got "${text}"`, { field });
  return n;
}

function fmt(x: number, digits = 3): string {
  return Number.isFinite(x) ? x.toFixed(digits) : "n/a";
}
