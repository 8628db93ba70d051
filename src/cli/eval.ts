import type { Command } from "commander";
import { parseEvalOptions } from "../eval/config.js";
import { type EvaluateResult, evaluate } from "../eval/evaluate.js";
import { formatDuration } from "../eval/progress.js";
import { DEFAULT_RESAMPLES } from "../report/results.js";
import { renderEvalSummary } from "../report/table.js";
import { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import { parseIntList, printJson, workspaceDir } from "./common.js";

interface EvalFlags {
  dataset: string;
  index: string;
  queries: string;
  shots: string;
  retriever: string;
  vlm: string;
  world?: string;
  baseUrl: string[];
  model?: string;
  layout: string;
  k?: string;
  poolSampler?: string;
  selectorEmbedding?: string;
  seed: string;
  run?: string;
  cache: boolean;
  metricVariant: string;
  order: string;
  batchSize: string;
  concurrency: string;
  resamples: string;
  clusterByImage?: boolean;
  json?: boolean;
}

const collect = (value: string, previous: string[]) => [
  ...previous,
  ...value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean),
];

/** Registers `lever eval`. */
export function register(program: Command): void {
  program
    .command("eval")
    .description(
      "ICL evaluation: for every query × retriever × shot choose demonstrations, ask the VLM, score with the official VQA accuracy, store every prediction (resumable), and report accuracy with CIs and paired tests vs random",
    )
    .requiredOption("--dataset <name>", "query dataset (the eval split)")
    .requiredOption("--index <name>", "index dataset the demonstrations come from (the train split)")
    .option("--queries <spec>", "query subset: first:N, random:N (seeded) or all", "first:100")
    .option("--shots <list>", "shot counts", "1,2,3,4")
    .option(
      "--retriever <list>",
      "zero, random, topk-image, topk-text, topk-joint, oracle (sim only), selector:CKPT",
      "zero,random",
    )
    .option("--vlm <backend>", "sim | openai", "sim")
    .option("--world <file>", "synthetic world file for --vlm sim (default: world.json beside the dataset files)")
    .option("--base-url <url>", "OpenAI-compatible server (repeat or comma-separate for replicas)", collect, [])
    .option("--model <name>", "served model name (--vlm openai)")
    .option("--layout <name>", "prompt layout: lever-plus | chat-turns", "lever-plus")
    .option("--k <n>", "pool size K of each query's pool (oracle, selectors; default 64 / the checkpoint's)")
    .option(
      "--pool-sampler <name>",
      "sampler of each query's pool: random | text-sim | image-sim | joint-sim | mix (default mix / the checkpoint's)",
    )
    .option(
      "--selector-embedding <kind>",
      "embedding selectors read: image | text | joint (default: the checkpoint's, else joint)",
    )
    .option("--seed <n>", "seed of query subsets, random retrieval, pools and bootstrap", "0")
    .option("--run <name>", "name of the run (resumed if it exists); default: identified by the config hash")
    .option("--no-cache", "send every request to the VLM (no response cache)")
    .option("--metric-variant <name>", "official | always-normalize", "official")
    .option("--order <order>", "prompt order: nearest (first selected next to the query) | farthest", "nearest")
    .option("--batch-size <n>", "prompts per VLM call", "64")
    .option("--concurrency <n>", "VLM calls in flight", "4")
    .option("--resamples <n>", "bootstrap resamples", String(DEFAULT_RESAMPLES))
    .option(
      "--cluster-by-image",
      "bootstrap over images instead of questions (questions sharing an image move together)",
    )
    .option("--json", "print the result as one JSON object")
    .action(async (flags: EvalFlags, command: Command) => {
      const options = parseEvalOptions({
        dataset: flags.dataset,
        index: flags.index,
        queries: flags.queries,
        shots: parseFlag(() => parseIntList(flags.shots), "--shots"),
        retrievers: flags.retriever
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean),
        vlm: flags.vlm,
        world: flags.world,
        baseUrls: flags.baseUrl,
        model: flags.model,
        layout: flags.layout,
        k: flags.k === undefined ? undefined : integer(flags.k, "--k"),
        poolSampler: flags.poolSampler,
        selectorEmbedding: flags.selectorEmbedding,
        seed: integer(flags.seed, "--seed"),
        run: flags.run,
        cache: flags.cache,
        metricVariant: flags.metricVariant,
        order: flags.order,
        batchSize: integer(flags.batchSize, "--batch-size"),
        concurrency: integer(flags.concurrency, "--concurrency"),
        resamples: integer(flags.resamples, "--resamples"),
      });
      const ws = Workspace.open(workspaceDir(command), { create: false });
      const controller = new AbortController();
      const onSigint = () => controller.abort();
      process.once("SIGINT", onSigint);
      let result: EvaluateResult;
      try {
        result = await evaluate(ws, options, { signal: controller.signal, clusterByImage: flags.clusterByImage });
      } finally {
        process.removeListener("SIGINT", onSigint);
        ws.close();
      }
      for (const note of result.notes) process.stderr.write(`note: ${note}\n`);
      for (const warning of result.warnings) process.stderr.write(`warning: ${warning}\n`);
      process.stderr.write(`${runLine(result)}\n`);
      if (result.stats.aborted)
        throw new LeverError(
          `interrupted after ${result.stats.skipped + result.stats.evaluated} of ${result.stats.planned} predictions; rerun the same command to resume`,
          { record: result.runId },
        );
      if (flags.json) printJson(result);
      else process.stdout.write(`${renderEvalSummary(result.summary)}\n`);
    });
}

function runLine(result: EvaluateResult): string {
  const s = result.stats;
  const vlm = result.vlm;
  const calls = vlm
    ? `; VLM: ${vlm.calls} calls, ${vlm.cacheHits} cache hits, ${vlm.failures.total} failures`
    : `; VLM: ${s.prompts} prompts (no cache)`;
  return (
    `run ${result.runId}${result.resumed ? " (resumed)" : ""}: ${s.planned} predictions planned, ${s.skipped} already stored, ` +
    `${s.evaluated} evaluated, ${s.failures} failed${calls}; ${formatDuration(s.seconds)}`
  );
}

function integer(text: string, flag: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new LeverError(`expected an integer, got "${text}"`, { field: flag });
  return value;
}

function parseFlag<T>(parse: () => T, flag: string): T {
  try {
    return parse();
  } catch (error) {
    throw new LeverError((error as Error).message, { field: flag });
  }
}
