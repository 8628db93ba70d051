import { existsSync, realpathSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { CHECKPOINT_REF_HELP, resolveCheckpoint } from "../icl/checkpoint-ref.js";
import { loadCheckpoint, parameterGroups, saveCheckpoint } from "../selector/checkpoint.js";
import { readsCandidateData, variantName } from "../selector/config.js";
import { predict } from "../selector/decode.js";
import { importTorchStateDict } from "../selector/import-torch.js";
import { loadSelectorInput, loadTrajectories } from "../selector/input-files.js";
import { PointerSelector } from "../selector/model.js";
import { parameterCount } from "../selector/params.js";
import { trajectoryLogProbs } from "../selector/trajectory-logprobs.js";
import { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import { group, printJson, withWorkspace, workspaceDir } from "./common.js";

function positiveInt(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1)
      throw new LeverError(`must be a positive integer, got "${value}"`, { field: name });
    return n;
  };
}

function positiveNumber(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!(n > 0)) throw new LeverError(`must be a positive number, got "${value}"`, { field: name });
    return n;
  };
}

/** A checkpoint, its model, and the query/candidate inputs of `predict` and `logprob`. */
function loadModelAndInput(ckpt: string, files: { queryEmb: string; candEmb: string; pools?: string }) {
  const c = loadCheckpoint(ckpt);
  // Candidate answers and identities come from a workspace's index dataset, which .npy inputs do not carry.
  if (readsCandidateData(c.config))
    throw new LeverError(
      `this selector reads its candidates' answers or identities (${variantName(c.config)}), which embedding files do not carry; evaluate it in a workspace: lever eval --retriever selector:CKPT`,
      { file: ckpt, field: "config" },
    );
  const model = new PointerSelector(c.config, c.params);
  const input = loadSelectorInput(
    { queryEmb: files.queryEmb, candEmb: files.candEmb, pools: files.pools },
    c.config.d,
    {
      center: c.config.center === "index-mean",
    },
  );
  return { c, model, input };
}

/**
 * The file a CKPT argument names: a file as it is, else a training run RUN[:best|last|epoch-N] of the
 * workspace (read-only; src/icl/checkpoint-ref.ts). Without a workspace the error names the missing
 * file, not the missing workspace.
 */
export async function checkpointFile(command: Command, ref: string): Promise<string> {
  if (existsSync(ref)) return ref;
  if (!Workspace.exists(workspaceDir(command))) return resolveCheckpoint(null, ref, "<ckpt>");
  return withWorkspace(command, (ws) => resolveCheckpoint(ws, ref, "<ckpt>"), { readOnly: true });
}

/** Whether two paths name one file (also through links). */
function sameFile(a: string, b: string): boolean {
  if (resolve(a) === resolve(b)) return true;
  return existsSync(a) && existsSync(b) && realpathSync(a) === realpathSync(b);
}

/** Registers the `selector` commands: inspect, import-torch, predict, logprob. */
export function register(program: Command): void {
  const selector = group(program, "selector", "inspect, import and run pointer-selector checkpoints");
  registerInspect(selector);
  registerImportTorch(selector);
  registerPredict(selector);
  registerLogprob(selector);
}

/** `lever selector inspect CKPT`. */
function registerInspect(selector: Command): void {
  selector
    .command("inspect")
    .description("architecture, parameter counts per group and provenance of a checkpoint")
    .argument("<ckpt>", `selector checkpoint: ${CHECKPOINT_REF_HELP}`)
    .option("--json", "print JSON")
    .action(async (ref: string, opts: { json?: boolean }, command: Command) => {
      const c = loadCheckpoint(await checkpointFile(command, ref));
      const info = {
        architecture: "lever-plus.pointer-selector",
        variant: variantName(c.config),
        config: c.config,
        trainedK: c.trainedK,
        shots: c.shots,
        parameters: parameterCount(c.config),
        groups: parameterGroups(c.config),
        provenance: c.provenance,
      };
      if (opts.json) return printJson(info);
      const lines = [
        `architecture  ${info.architecture} (${info.variant})`,
        `config        ${JSON.stringify(c.config)}`,
        `trained K     ${c.trainedK ?? "unknown"}   shots ${c.shots}`,
        `parameters    ${info.parameters.toLocaleString("en-US")}`,
        ...info.groups.map((g) => `  ${g.group.padEnd(12)} ${g.count.toLocaleString("en-US").padStart(10)}`),
        `provenance    stage ${c.provenance.stage}, run ${c.provenance.runId ?? "-"}, epoch ${c.provenance.epoch === null ? "-" : c.provenance.epoch + 1}, created ${c.provenance.createdAt}`,
        ...Object.entries(c.provenance.metrics).map(([k, v]) => `  ${k.padEnd(12)} ${v}`),
        ...Object.entries(c.provenance.dataHashes).map(([k, v]) => `  ${k.padEnd(12)} sha256 ${v}`),
      ];
      process.stdout.write(`${lines.join("\n")}\n`);
    });
}

/** `lever selector import-torch FILE --out CKPT`. */
function registerImportTorch(selector: Command): void {
  selector
    .command("import-torch")
    .description("import a Lever-Plus PyTorch state dict exported to .safetensors (strict; no key renaming)")
    .argument("<file>", "state dict as .safetensors")
    .requiredOption("--out <ckpt>", "checkpoint to write")
    .option("--heads <n>", "attention heads (not visible in the shapes)", positiveInt("--heads"))
    .option("--temperature <t>", "pointer softmax temperature (default 0.1)", positiveNumber("--temperature"))
    .option(
      "--shots <s>",
      "shot count the weights were trained for (default: step tables, else 2)",
      positiveInt("--shots"),
    )
    .option("--state-update <kind>", "gate | none | gru (default: inferred from the tensor names)")
    .option("--json", "print JSON")
    .action(
      async (
        file: string,
        opts: {
          out: string;
          heads?: number;
          temperature?: number;
          shots?: number;
          stateUpdate?: string;
          json?: boolean;
        },
      ) => {
        if (sameFile(file, opts.out))
          throw new LeverError(
            "is the input file: the checkpoint would overwrite the state dict; choose another path",
            {
              field: "--out",
            },
          );
        if (opts.stateUpdate !== undefined && !["gate", "none", "gru"].includes(opts.stateUpdate))
          throw new LeverError(`must be gate, none or gru, got "${opts.stateUpdate}"`, { field: "--state-update" });
        const result = await importTorchStateDict(file, {
          heads: opts.heads,
          temperature: opts.temperature,
          shots: opts.shots,
          stateUpdate: opts.stateUpdate as "gate" | "none" | "gru" | undefined,
        });
        saveCheckpoint(opts.out, {
          ...result.checkpoint,
          provenance: {
            stage: "import-torch",
            dataHashes: { source: result.sha256 },
            createdAt: new Date().toISOString(),
            notes: { source: file },
          },
        });
        const summary = {
          out: opts.out,
          variant: variantName(result.checkpoint.config),
          config: result.checkpoint.config,
          parameters: parameterCount(result.checkpoint.config),
          skippedEncoderTensors: result.skippedEncoderTensors,
        };
        if (opts.json) return printJson(summary);
        process.stdout.write(
          `wrote ${opts.out}: ${summary.variant}, d=${summary.config.d}, hidden=${summary.config.hidden}, layers=${summary.config.layers}, ` +
            `${summary.parameters.toLocaleString("en-US")} parameters` +
            (summary.skippedEncoderTensors > 0
              ? ` (skipped ${summary.skippedEncoderTensors} CLIP encoder tensors)`
              : "") +
            "\n",
        );
      },
    );
}

/** `lever selector predict CKPT`. */
function registerPredict(selector: Command): void {
  selector
    .command("predict")
    .description("choose demonstrations for each query (greedy, or beam search with --beam)")
    .argument("<ckpt>", `selector checkpoint: ${CHECKPOINT_REF_HELP}`)
    .requiredOption("--query-emb <Q.npy>", "query embeddings [queries, d]")
    .requiredOption("--cand-emb <C.npy>", "candidates [queries, K, d], or an index [N, d] with --pools")
    .option("--pools <P.json>", "per-query lists of rows of the index")
    .option("--shots <n>", "demonstrations per query (default: the checkpoint's)", positiveInt("--shots"))
    .option("--beam <w>", "beam width (1 = greedy)", positiveInt("--beam"), 1)
    .option("--json", "print JSON")
    .action(
      async (
        ref: string,
        opts: { queryEmb: string; candEmb: string; pools?: string; shots?: number; beam: number; json?: boolean },
        command: Command,
      ) => {
        const { c, model, input } = loadModelAndInput(await checkpointFile(command, ref), opts);
        const out = predict(model, input, { shots: opts.shots ?? c.shots, beam: opts.beam }).map((t, query) => ({
          query,
          positions: t.positions,
          logprob: t.logprob,
        }));
        if (opts.json) return printJson(out);
        process.stdout.write(
          out.map((r) => `${r.query}\t${r.positions.join(",")}\t${r.logprob.toFixed(6)}`).join("\n") +
            (out.length > 0 ? "\n" : ""),
        );
      },
    );
}

/** `lever selector logprob CKPT --trajectories FILE`. */
function registerLogprob(selector: Command): void {
  selector
    .command("logprob")
    .description("log-probability of given trajectories under the selector (teacher forced, summed over steps)")
    .argument("<ckpt>", `selector checkpoint: ${CHECKPOINT_REF_HELP}`)
    .requiredOption("--query-emb <Q.npy>", "query embeddings [queries, d]")
    .requiredOption("--cand-emb <C.npy>", "candidates [queries, K, d], or an index [N, d] with --pools")
    .option("--pools <P.json>", "per-query lists of rows of the index")
    .requiredOption("--trajectories <T.json>", 'array of {"query": i, "positions": [...]}')
    .option("--json", "print JSON")
    .action(
      async (
        ref: string,
        opts: { queryEmb: string; candEmb: string; pools?: string; trajectories: string; json?: boolean },
        command: Command,
      ) => {
        const { model, input } = loadModelAndInput(await checkpointFile(command, ref), opts);
        const logprobs = trajectoryLogProbs(model, input, loadTrajectories(opts.trajectories), opts.trajectories);
        if (opts.json) return printJson(logprobs);
        process.stdout.write(logprobs.map((v) => `${v}\n`).join(""));
      },
    );
}
