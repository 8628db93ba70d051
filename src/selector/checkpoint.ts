/**
 * Strict, self-describing selector checkpoints (docs/selector.md, "Checkpoints"): a `.safetensors` file whose tensors
 * carry exactly the PyTorch state-dict names of the Lever-Plus pointer selector (params.ts) and whose
 * `__metadata__` holds the format version, architecture, full config, the pool size K used in
 * training, the shot count and provenance. Loading fails on ANY missing, unexpected or mis-shaped
 * tensor, listing all of them in one error — the reference's non-strict loading silently dropped the
 * RL-trained attention weights (docs/selector.md, "Importing a Lever-Plus PyTorch checkpoint";
 * docs/provenance.md#checkpoints).
 * A checkpoint with identity "embedding" also records the index whose items it learned (`index`:
 * dataset, item count, hash), and `checkIndexFits` refuses it on any other index. The candidate options
 * (center, features, voteScale, identity, indexItems, poolAttention) are written into `config` only when not at their
 * defaults, so a checkpoint without them is byte-identical to one written before they existed.
 */
import { z } from "zod";
import { openSafetensors, readSafetensors, type Tensor as StTensor, writeSafetensors } from "../data/safetensors.js";
import { LeverError } from "../util/errors.js";
import { parseOrThrow } from "../util/validate.js";
import { type SelectorConfig, SelectorConfigSchema, SelectorFieldsSchema, variantName } from "./config.js";
import { type ParamValues, paramSpecs, sizeOf } from "./params.js";

export const CHECKPOINT_FORMAT = "lever.selector/1";
export const ARCHITECTURE = "lever-plus.pointer-selector";

export const ProvenanceSchema = z
  .object({
    runId: z.string().nullable().default(null),
    /** What produced the weights: "sft", "rce", "grpo", "init", "import-torch", … */
    stage: z.string(),
    epoch: z.number().int().nullable().default(null),
    /** sha256 of the inputs (beam/pool/embedding artefacts, source file). */
    dataHashes: z.record(z.string(), z.string()).default({}),
    metrics: z.record(z.string(), z.number().nullable()).default({}),
    seed: z.number().int().nullable().default(null),
    createdAt: z.string(),
    /** Free-form notes (e.g. the source file of an import). */
    notes: z.record(z.string(), z.string()).default({}),
  })
  .strict();
export type Provenance = z.infer<typeof ProvenanceSchema>;
export type ProvenanceInput = z.input<typeof ProvenanceSchema>;

/** The index whose items a checkpoint with identity "embedding" learned (row i of item_emb = item i). */
export const IndexIdentitySchema = z
  .object({
    dataset: z.string().describe("the index dataset's name"),
    items: z.number().int().describe("its item count (= config.indexItems)"),
    hash: z.string().describe("a hash of its item ids in row order"),
  })
  .strict();
export type IndexIdentity = z.infer<typeof IndexIdentitySchema>;

export interface Checkpoint {
  config: SelectorConfig;
  params: ParamValues;
  /** Pool size K the weights were trained with (null when unknown, e.g. imported weights). */
  trainedK: number | null;
  /** Shot count the weights were trained for. */
  shots: number;
  provenance: Provenance;
  /** The index of the learned identities; present exactly when config.identity is "embedding". */
  index?: IndexIdentity;
}

/** The candidate options, left out of the saved config at their defaults (see the header). */
const CANDIDATE_OPTIONS = [
  "center",
  "features",
  "featureInit",
  "voteScale",
  "identity",
  "indexItems",
  "poolAttention",
] as const;

function configJson(config: SelectorConfig): string {
  const defaults = SelectorFieldsSchema.parse({ d: config.d });
  const out: Record<string, unknown> = { ...config };
  for (const key of CANDIDATE_OPTIONS)
    if (JSON.stringify(config[key]) === JSON.stringify(defaults[key])) delete out[key];
  return JSON.stringify(out);
}

/** The index metadata a config needs: required with identity "embedding", refused without it. */
function checkIndexField(config: SelectorConfig, index: IndexIdentity | undefined, file: string): void {
  const field = "__metadata__.index";
  if (config.identity !== "embedding") {
    if (index !== undefined)
      throw new LeverError('an index is recorded only for a selector with identity "embedding"', { file, field });
    return;
  }
  if (index === undefined)
    throw new LeverError(
      'a selector with identity "embedding" must record the index whose items it learned (dataset, items, hash)',
      { file, field },
    );
  if (index.items !== config.indexItems)
    throw new LeverError(`the index has ${index.items} items but the identity table has ${config.indexItems} rows`, {
      file,
      field,
    });
}

/** Writes the checkpoint atomically as float32 safetensors (PyTorch's default dtype). */
export function saveCheckpoint(
  path: string,
  ckpt: Omit<Checkpoint, "provenance"> & { provenance: ProvenanceInput },
): void {
  const config = SelectorConfigSchema.parse(ckpt.config);
  const provenance = ProvenanceSchema.parse(ckpt.provenance);
  const index = ckpt.index === undefined ? undefined : IndexIdentitySchema.parse(ckpt.index);
  checkIndexField(config, index, path);
  checkParams(config, ckpt.params, path);
  const tensors: Record<string, { dtype: "F32"; shape: number[]; data: Float32Array }> = {};
  for (const spec of paramSpecs(config)) {
    tensors[spec.name] = { dtype: "F32", shape: spec.shape, data: Float32Array.from(ckpt.params.get(spec.name)!) };
  }
  writeSafetensors(path, tensors, {
    format: CHECKPOINT_FORMAT,
    architecture: ARCHITECTURE,
    variant: variantName(config),
    config: configJson(config),
    k: JSON.stringify(ckpt.trainedK),
    shots: String(ckpt.shots),
    provenance: JSON.stringify(provenance),
    ...(index !== undefined ? { index: JSON.stringify(index) } : {}),
  });
}

/** Reads and validates a checkpoint; any problem is one LeverError naming the file and what is wrong. */
export function loadCheckpoint(path: string): Checkpoint {
  const file = readSafetensors(path);
  const meta = file.metadata;
  const { config, field } = checkedConfig(path, meta);
  const trainedK = parseJsonField(path, "k", field("k"), z.number().int().positive().nullable());
  const shots = parseJsonField(path, "shots", field("shots"), z.number().int().positive());
  const provenance = parseJsonField(path, "provenance", field("provenance"), ProvenanceSchema);
  const index = meta.index === undefined ? undefined : parseJsonField(path, "index", meta.index, IndexIdentitySchema);
  checkIndexField(config, index, path);
  const params = stateDictToParams(config, file.tensors, path);
  return { config, params, trainedK, shots, provenance, ...(index !== undefined ? { index } : {}) };
}

/**
 * The architecture of a checkpoint from its header alone (the tensors are not read): for a caller that
 * needs only the config, e.g. to know whether a run reads candidate data. Same checks as loading.
 */
export function checkpointConfig(path: string): SelectorConfig {
  const reader = openSafetensors(path);
  try {
    return checkedConfig(path, reader.metadata).config;
  } finally {
    reader.close();
  }
}

/** A checkpoint's provenance from its header alone (the tensors are not read); same checks as loading. */
export function checkpointProvenance(path: string): Provenance {
  const reader = openSafetensors(path);
  try {
    const { field } = checkedConfig(path, reader.metadata);
    return parseJsonField(path, "provenance", field("provenance"), ProvenanceSchema);
  } finally {
    reader.close();
  }
}

/** The header checks every reader of a checkpoint makes: format, architecture, config. */
function checkedConfig(path: string, meta: Record<string, string>) {
  const field = (name: string): string => {
    const v = meta[name];
    if (v === undefined)
      throw new LeverError("missing checkpoint metadata (not a lever selector checkpoint?)", {
        file: path,
        field: `__metadata__.${name}`,
      });
    return v;
  };
  if (field("format") !== CHECKPOINT_FORMAT)
    throw new LeverError(`unsupported checkpoint format "${meta.format}", expected "${CHECKPOINT_FORMAT}"`, {
      file: path,
      field: "__metadata__.format",
    });
  if (field("architecture") !== ARCHITECTURE)
    throw new LeverError(`unknown architecture "${meta.architecture}"`, {
      file: path,
      field: "__metadata__.architecture",
    });
  const config = parseJsonField(path, "config", field("config"), SelectorConfigSchema);
  return { config, field };
}

/** Save-side check: the values must be exactly the config's parameters (same strictness as loading). */
function checkParams(config: SelectorConfig, params: ParamValues, file: string): void {
  const tensors = new Map<string, StTensor>();
  const shapes = new Map(paramSpecs(config).map((s) => [s.name, s.shape]));
  for (const [name, data] of params) {
    const shape = shapes.get(name) ?? [data.length];
    tensors.set(name, { dtype: "F64", shape: sizeOf(shape) === data.length ? shape : [data.length], data });
  }
  stateDictToParams(config, tensors, file);
}

function parseJsonField<S extends z.ZodType>(file: string, name: string, text: string, schema: S): z.infer<S> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new LeverError("is not valid JSON", { file, field: `__metadata__.${name}` });
  }
  return parseOrThrow(schema, value, { file, fieldPrefix: `__metadata__.${name}` });
}

/**
 * Strict state-dict check: every expected tensor present with the expected shape, nothing else.
 * Returns float64 values; throws ONE error listing every missing, unexpected and mis-shaped tensor.
 */
export function stateDictToParams(config: SelectorConfig, tensors: Map<string, StTensor>, file: string): ParamValues {
  const specs = paramSpecs(config);
  const expected = new Map(specs.map((s) => [s.name, s.shape]));
  const missing = specs.filter((s) => !tensors.has(s.name)).map((s) => s.name);
  const unexpected = [...tensors.keys()].filter((n) => !expected.has(n));
  const misShaped: string[] = [];
  const wrongType: string[] = [];
  for (const [name, shape] of expected) {
    const t = tensors.get(name);
    if (!t) continue;
    if (t.shape.length !== shape.length || t.shape.some((v, i) => v !== shape[i]))
      misShaped.push(`${name} is [${t.shape.join(", ")}], expected [${shape.join(", ")}]`);
    if (!(t.data instanceof Float32Array || t.data instanceof Float64Array))
      wrongType.push(`${name} has dtype ${t.dtype}`);
  }
  const problems = [
    missing.length > 0 ? `missing ${missing.join(", ")}` : null,
    unexpected.length > 0 ? `unexpected ${unexpected.join(", ")}` : null,
    misShaped.length > 0 ? `mis-shaped ${misShaped.join("; ")}` : null,
    wrongType.length > 0 ? `not floating point: ${wrongType.join(", ")}` : null,
  ].filter((p) => p !== null);
  if (problems.length > 0)
    throw new LeverError(
      `state dict does not match the ${variantName(config)} selector (${describe(config)}): ${problems.join("; ")}`,
      {
        file,
      },
    );
  const out: ParamValues = new Map();
  for (const spec of specs) {
    const data = tensors.get(spec.name)!.data as Float32Array | Float64Array;
    if (data.length !== sizeOf(spec.shape))
      throw new LeverError(`tensor ${spec.name} has ${data.length} values`, { file });
    for (let i = 0; i < data.length; i++)
      if (!Number.isFinite(data[i]))
        throw new LeverError(`tensor ${spec.name} holds a non-finite value at ${i}`, { file });
    out.set(spec.name, Float64Array.from(data));
  }
  return out;
}

function describe(c: SelectorConfig): string {
  const base = `d=${c.d}, hidden=${c.hidden}, layers=${c.layers}, stateUpdate=${c.stateUpdate}, stepEmbedding=${c.stepEmbedding}, redundancy=${c.redundancy}, shots=${c.shots}`;
  const extra = [
    c.features.length > 0 ? `features=${c.features.join("+")}` : null,
    c.identity !== "none" ? `identity=${c.identity} (${c.indexItems} items)` : null,
    c.poolAttention > 0 ? `poolAttention=${c.poolAttention}` : null,
  ].filter((x) => x !== null);
  return extra.length > 0 ? `${base}, ${extra.join(", ")}` : base;
}

/** Parameter counts per group, for `selector inspect`. */
export function parameterGroups(config: SelectorConfig): { group: string; count: number }[] {
  const groups = new Map<string, number>();
  for (const s of paramSpecs(config)) groups.set(s.group, (groups.get(s.group) ?? 0) + sizeOf(s.shape));
  return [...groups].map(([group, count]) => ({ group, count }));
}

/** A checkpoint (a starting one, a KL reference) must read these embeddings and score these shots. */
export function checkpointFits(
  config: SelectorConfig,
  d: number,
  shots: number,
  role: string,
  file: string | undefined,
): void {
  if (config.d !== d)
    throw new LeverError(`the ${role} checkpoint expects d=${config.d}, the embeddings have ${d}`, { file });
  if (config.stepEmbedding && config.shots < shots)
    throw new LeverError(`the ${role} checkpoint was built for ${config.shots} shots, the data have ${shots}`, {
      file,
    });
}

/**
 * A checkpoint with learned identities fits only the index it learned them on: throws one LeverError
 * line when `actual` (this run's index) differs, or when the run reads no index dataset (`actual`
 * undefined). A checkpoint without identity fits any index, or none. `where` names the checkpoint (its
 * file) in the message.
 */
export function checkIndexFits(
  checkpoint: Pick<Checkpoint, "config" | "index">,
  actual: IndexIdentity | undefined,
  where: string,
): void {
  if (checkpoint.config.identity !== "embedding") return;
  const learned = checkpoint.index;
  if (actual === undefined)
    throw new LeverError("the checkpoint learned identities of index items, but this run reads no index dataset", {
      file: where,
    });
  if (learned === undefined)
    throw new LeverError(`checkpoint ${where} has identity "embedding" but records no index; retrain it`);
  if (learned.dataset === actual.dataset && learned.items === actual.items && learned.hash === actual.hash) return;
  throw new LeverError(
    `checkpoint ${where} learned identities of index ${learned.dataset} (${learned.items} items, hash ${learned.hash}); ` +
      `this run's index is ${actual.dataset} (${actual.items} items, hash ${actual.hash}) — use that index or train without identity`,
  );
}
