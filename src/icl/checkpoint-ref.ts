/**
 * Naming a checkpoint: the one resolver behind every command and setting that takes a selector
 * checkpoint (`--init`, `--reference`, `lever rollouts --checkpoint`, `lever selector inspect|predict|
 * logprob CKPT`, `lever eval --retriever selector:CKPT`). A reference is a file path, or a training
 * run of the workspace by id or name with an optional choice of its checkpoints:
 *
 *   RUN            the run's best checkpoint (RUN:best)
 *   RUN:best       best.safetensors, the best epoch by the run's selection metric
 *   RUN:last       the last finished epoch's checkpoint
 *   RUN:epoch-N    epoch N's checkpoint (1-based, as the files are named)
 *
 * An existing file wins over a run of the same name. Also here: where a training run writes its
 * checkpoints (`checkpointDirOf`: `runs/<run id>/<stage>/`) and their file names, and the label of a
 * checkpoint by its run (`sft-0002`, `sft-0002:epoch-3`) for tables and legends.
 */
import { existsSync, readdirSync } from "node:fs";
import { basename, extname, join } from "node:path";
import type { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";

export const BEST_FILE = "best.safetensors";
/** Epoch `epoch` (0-based) → its checkpoint's file name (1-based: epoch-001.safetensors). */
export const epochFile = (epoch: number) => `epoch-${String(epoch + 1).padStart(3, "0")}.safetensors`;
const EPOCH_FILE = /^epoch-(\d{3,})\.safetensors$/;

/** Directory of a training run's checkpoints and state (`stage` = the run's kind). */
export function checkpointDirOf(ws: Workspace, runId: string, stage: string): string {
  return ws.artifactPath(`runs/${runId}/${stage}`);
}

/** The kinds of run that write checkpoints (online GRPO is a `grpo` run). */
const TRAINING_KINDS = ["sft", "rce", "grpo"];

/** How to write a reference, for help texts and errors. */
export const CHECKPOINT_REF_HELP = "a .safetensors file, or a training run RUN[:best|last|epoch-N] (id or name)";

/**
 * The file a checkpoint reference names (see the header); a reference that is neither an existing file
 * nor a training run's existing checkpoint is one error naming what exists.
 */
export function resolveCheckpoint(ws: Workspace | null, ref: string, field = "checkpoint"): string {
  if (existsSync(ref)) return ref;
  const parsed = /^([A-Za-z0-9][A-Za-z0-9._-]*?)(?::(best|last|epoch-(\d+)))?$/.exec(ref);
  const run = parsed === null || ws === null ? undefined : findTrainingRun(ws, parsed[1]);
  if (parsed === null || run === undefined || ws === null)
    throw new LeverError(
      `no such file, and no training run "${parsed?.[1] ?? ref}" in the workspace (${CHECKPOINT_REF_HELP})`,
      {
        field,
        file: ref,
      },
    );
  const dir = checkpointDirOf(ws, run.id, run.kind);
  const epochs = existsSync(dir)
    ? readdirSync(dir)
        .map((f) => EPOCH_FILE.exec(f)?.[1])
        .filter((n): n is string => n !== undefined)
        .map(Number)
        .sort((a, b) => a - b)
    : [];
  const which = parsed[2] ?? "best";
  const file =
    which === "best"
      ? BEST_FILE
      : which === "last"
        ? epochs.length > 0
          ? epochFile(epochs.at(-1)! - 1)
          : null
        : epochFile(Number(parsed[3]) - 1);
  if (file === null || !existsSync(join(dir, file)))
    throw new LeverError(
      `run ${run.id} has no ${which} checkpoint (${epochs.length > 0 ? `finished epochs: ${epochs.join(", ")}; ${existsSync(join(dir, BEST_FILE)) ? "best, " : ""}last = epoch-${epochs.at(-1)}` : "no finished epoch yet"})`,
      { field },
    );
  return join(dir, file);
}

/** The training run a reference names by id or name (`lever train resume RUN`); none is one error naming `field`. */
export function resolveTrainingRun(ws: Workspace, ref: string, field = "run") {
  const run = findTrainingRun(ws, ref);
  if (run === undefined)
    throw new LeverError(`no training run "${ref}" in this workspace (give a run id or --name)`, { field });
  return run;
}

/** The training run with this id, else the newest with this name. */
function findTrainingRun(ws: Workspace, idOrName: string) {
  const byId = ws.getRun(idOrName);
  const run =
    byId ??
    ws
      .listRuns()
      .filter((r) => r.name === idOrName)
      .at(-1);
  return run !== undefined && TRAINING_KINDS.includes(run.kind) ? run : undefined;
}

/**
 * A checkpoint file of a training run labelled by that run — `…/runs/sft-0002/sft/best.safetensors`
 * → "sft-0002", `…/epoch-003.safetensors` → "sft-0002:epoch-3" — else its file name without extension.
 */
export function checkpointLabel(path: string): string {
  const parts = path.split(/[\\/]/);
  const n = parts.length;
  const file = parts[n - 1];
  if (n >= 4 && parts[n - 4] === "runs" && TRAINING_KINDS.includes(parts[n - 2])) {
    if (file === BEST_FILE) return parts[n - 3];
    const epoch = EPOCH_FILE.exec(file);
    if (epoch !== null) return `${parts[n - 3]}:epoch-${Number(epoch[1])}`;
  }
  return basename(file, extname(file));
}
