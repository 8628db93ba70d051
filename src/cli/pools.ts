import { type Command, Option } from "commander";
import { buildPoolSet, embeddingKindsFor } from "../pools/artifact.js";
import {
  DEFAULT_MIX_RATIOS,
  type EmbeddingSet,
  type MixRatios,
  SAMPLERS,
  type SamplerName,
} from "../pools/samplers.js";
import { defaultGemm } from "../pools/search.js";
import { loadDatasetEmbedding } from "../store/ingest/embeddings.js";
import { poolArtifactPath, writePoolSet } from "../store/sets.js";
import { LeverError } from "../util/errors.js";
import { group, printJson, withWorkspace } from "./common.js";

interface PoolsOptions {
  queries: string;
  index: string;
  sampler: SamplerName;
  k: string;
  seed: string;
  ratios?: string;
  out?: string;
  replace?: boolean;
  json?: boolean;
}

/** Registers `lever pools`: candidate pools for every query of a dataset, stored as an artefact. */
export function register(program: Command): void {
  group(program, "pools", "choose K candidate demonstrations per query (the pool contract)")
    .requiredOption("--queries <dataset>", "dataset whose items get a pool")
    .requiredOption("--index <dataset>", "dataset the candidates come from (the train split)")
    .addOption(new Option("--sampler <name>", "how candidates are chosen").choices(SAMPLERS).makeOptionMandatory())
    .option("--k <n>", "candidates per query", "64")
    .option("--seed <n>", "seed of the random draws", "0")
    .option("--ratios <r,t,i>", `mix shares of random,text,image (default ${formatRatios(DEFAULT_MIX_RATIOS)})`)
    .option("--out <name>", "artefact name: artifacts/pools/<name>.json (default <queries>.<sampler>.k<K>.s<seed>)")
    .option("--replace", "overwrite an existing pool set of that name that has other content")
    .option("--json", "print the summary as JSON")
    .action(async (opts: PoolsOptions, command: Command) => {
      const k = parseInteger(opts.k, "--k");
      const seed = parseInteger(opts.seed, "--seed");
      if (opts.ratios !== undefined && opts.sampler !== "mix")
        throw new LeverError("--ratios only applies to --sampler mix", { field: "--ratios" });
      const ratios = opts.ratios !== undefined ? parseRatios(opts.ratios) : undefined;
      const name = opts.out ?? `${opts.queries}.${opts.sampler}.k${k}.s${seed}`;
      poolArtifactPath(name); // validate the name before any work
      await withWorkspace(command, (ws) => {
        const started = performance.now();
        const queries = ws.loadItems(ws.requireDataset(opts.queries).name);
        const index = ws.loadItems(ws.requireDataset(opts.index).name);
        const kinds = embeddingKindsFor(opts.sampler, k, ratios);
        const queryEmbeddings: EmbeddingSet = {};
        const indexEmbeddings: EmbeddingSet = {};
        const embeddingHashes: Record<string, string> = {};
        for (const kind of kinds) {
          queryEmbeddings[kind] = loadDatasetEmbedding(ws, opts.queries, kind);
          indexEmbeddings[kind] = loadDatasetEmbedding(ws, opts.index, kind);
          for (const dataset of [opts.queries, opts.index])
            embeddingHashes[`${dataset}/${kind}`] = ws.getEmbedding(dataset, kind)?.sha256 ?? "";
        }
        const { gemm, path: gemmPath } = defaultGemm();
        const poolSet = buildPoolSet({
          queryDataset: opts.queries,
          queries,
          indexDataset: opts.index,
          index,
          sampler: opts.sampler,
          k,
          seed,
          ratios,
          queryEmbeddings,
          indexEmbeddings,
          gemm,
          provenance: {
            itemsHashes: {
              [opts.queries]: ws.requireDataset(opts.queries).itemsHash,
              [opts.index]: ws.requireDataset(opts.index).itemsHash,
            },
            ...(kinds.length > 0 ? { embeddings: embeddingHashes } : {}),
          },
        });
        const ref = writePoolSet(ws, name, poolSet, { replace: opts.replace === true });
        const seconds = (performance.now() - started) / 1000;
        const summary = {
          name,
          path: ref.path,
          sha256: ref.sha256,
          queries: queries.length,
          index: index.length,
          sampler: opts.sampler,
          k,
          seed,
          ...(poolSet.settings.ratios !== undefined ? { ratios: poolSet.settings.ratios } : {}),
          gemm: kinds.length > 0 ? gemmPath : null,
          seconds: Number(seconds.toFixed(2)),
        };
        if (opts.json) printJson(summary);
        else
          process.stdout.write(
            `pools ${name}: ${queries.length} queries × K=${k} from ${index.length} ${opts.index} items ` +
              `(sampler ${opts.sampler}${ratios || opts.sampler === "mix" ? ` ${formatRatios(ratios ?? DEFAULT_MIX_RATIOS)}` : ""}, seed ${seed}) ` +
              `→ ${ref.path} (sha256 ${ref.sha256.slice(0, 12)}) in ${seconds.toFixed(1)} s` +
              `${kinds.length > 0 ? ` [gemm: ${gemmPath}]` : ""}\n`,
          );
      });
    });
}

function parseInteger(text: string, field: string): number {
  const n = Number(text);
  if (!/^-?\d+$/.test(text.trim()) || !Number.isSafeInteger(n))
    throw new LeverError(`expected an integer, got "${text}"`, { field });
  return n;
}

/** "0.5,0.25,0.25" → {random, text, image}; shares must be non-negative and sum to 1. */
export function parseRatios(text: string): MixRatios {
  const parts = text.split(",").map((s) => Number(s.trim()));
  if (parts.length !== 3 || parts.some((x) => !Number.isFinite(x) || x < 0))
    throw new LeverError(`expected three non-negative shares "random,text,image", got "${text}"`, {
      field: "--ratios",
    });
  const [random, text_, image] = parts;
  if (Math.abs(random + text_ + image - 1) > 1e-9)
    throw new LeverError(`shares must sum to 1, got ${random + text_ + image}`, { field: "--ratios" });
  return { random, text: text_, image };
}

function formatRatios(r: MixRatios): string {
  return `${r.random},${r.text},${r.image}`;
}
