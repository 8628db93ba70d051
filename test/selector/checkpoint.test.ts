import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, expectTypeOf, it } from "vitest";
import { writeSafetensors } from "../../src/data/safetensors.js";
import {
  checkIndexFits,
  checkpointConfig,
  loadCheckpoint,
  parameterGroups,
  saveCheckpoint,
} from "../../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { beamDecode } from "../../src/selector/decode.js";
import { importTorchStateDict } from "../../src/selector/import-torch.js";
import { PointerSelector, sequenceLogProbs } from "../../src/selector/model.js";
import { initParams, parameterCount, paramSpecs } from "../../src/selector/params.js";
import { noGrad } from "../../src/tensor/tensor.js";
import { LeverError } from "../../src/util/errors.js";
import { Rng } from "../../src/util/rng.js";

const dir = mkdtempSync(join(tmpdir(), "lever-ckpt-"));
const config = SelectorConfigSchema.parse({ d: 8, hidden: 4, layers: 2, shots: 3, stateUpdate: "gate" });

function inputs(seed: number) {
  const rng = new Rng(seed);
  const B = 3;
  const K = 6;
  return {
    queries: Float32Array.from({ length: B * config.d }, () => rng.normal()),
    table: Float32Array.from({ length: B * K * config.d }, () => rng.normal()),
    slots: Int32Array.from({ length: B * K }, (_, i) => i),
    K,
  };
}

function tensorsOf(values: Map<string, Float64Array>, cfg = config, rename = (n: string) => n) {
  const shapes = new Map(paramSpecs(cfg).map((s) => [s.name, s.shape]));
  const out: Record<string, { dtype: "F32"; shape: number[]; data: Float32Array }> = {};
  for (const [name, v] of values)
    out[rename(name)] = { dtype: "F32", shape: shapes.get(name)!, data: Float32Array.from(v) };
  return out;
}

describe("selector checkpoints", () => {
  it("round-trip: save → load gives identical config, metadata and outputs", () => {
    const values = initParams(config, 3);
    const path = join(dir, "a.safetensors");
    saveCheckpoint(path, {
      config,
      params: values,
      trainedK: 64,
      shots: 3,
      provenance: {
        stage: "sft",
        runId: "run-1",
        epoch: 4,
        metrics: { valTop1: 0.5 },
        createdAt: "2026-01-01T00:00:00Z",
      },
    });
    const back = loadCheckpoint(path);
    expect(back.config).toEqual(config);
    expect(back.trainedK).toBe(64);
    expect(back.shots).toBe(3);
    expect(back.provenance.runId).toBe("run-1");
    expect(back.provenance.metrics).toEqual({ valTop1: 0.5 });
    const a = new PointerSelector(config, values);
    const b = new PointerSelector(back.config, back.params);
    const inp = inputs(1);
    const beamsA = beamDecode(
      a,
      noGrad(() => a.encode(inp)),
      3,
      4,
    );
    const beamsB = beamDecode(
      b,
      noGrad(() => b.encode(inp)),
      3,
      4,
    );
    expect(beamsB).toEqual(beamsA);
    // Saving again gives the same bytes (deterministic layout and metadata).
    const path2 = join(dir, "b.safetensors");
    saveCheckpoint(path2, { ...back, provenance: back.provenance });
    expect(readFileSync(path2)).toEqual(readFileSync(path));
  });

  it("refuses in one error every missing, unexpected and mis-shaped tensor", () => {
    const values = initParams(config, 3);
    const tensors = tensorsOf(values);
    delete tensors["query_proj.weight"];
    delete tensors["attn_norms.1.bias"];
    tensors["cross_attn.in_proj_weight"] = { dtype: "F32", shape: [1], data: new Float32Array(1) };
    tensors["cand_proj.weight"] = { dtype: "F32", shape: [2, 8], data: new Float32Array(16) };
    const path = join(dir, "bad.safetensors");
    writeSafetensors(path, tensors, {
      format: "lever.selector/1",
      architecture: "lever-plus.pointer-selector",
      config: JSON.stringify(config),
      k: "null",
      shots: "3",
      provenance: JSON.stringify({ stage: "x", createdAt: "now" }),
    });
    expect(() => loadCheckpoint(path)).toThrow(
      /bad\.safetensors: .*missing attn_norms\.1\.bias, query_proj\.weight; unexpected cross_attn\.in_proj_weight; mis-shaped cand_proj\.weight is \[2, 8\], expected \[4, 4\]/,
    );
  });

  it("names the metadata field that is missing or invalid", () => {
    const path = join(dir, "meta.safetensors");
    writeSafetensors(path, tensorsOf(initParams(config, 1)), { format: "lever.selector/1" });
    expect(() => loadCheckpoint(path)).toThrow(/meta\.safetensors, field "__metadata__\.architecture"/);
    writeSafetensors(path, tensorsOf(initParams(config, 1)), {
      format: "lever.selector/1",
      architecture: "lever-plus.pointer-selector",
      config: JSON.stringify({ ...config, stateUpdate: "lstm" }),
      k: "null",
      shots: "3",
      provenance: "{}",
    });
    expect(() => loadCheckpoint(path)).toThrow(/field "__metadata__\.config\.stateUpdate"/);
    expect(() => checkpointConfig(path)).toThrow(/field "__metadata__\.config\.stateUpdate"/);
  });

  it("checkpointConfig reads the config from the header alone, with loading's checks", () => {
    const path = join(dir, "header-only.safetensors");
    const provenance = { stage: "sft", createdAt: "2026-01-01T00:00:00Z" };
    saveCheckpoint(path, { config, params: initParams(config, 2), trainedK: null, shots: 3, provenance });
    expect(checkpointConfig(path)).toEqual(loadCheckpoint(path).config);
    // The tensors are not read: a checkpoint whose weights do not fit its config still gives its config.
    const wider = { ...config, hidden: 8 };
    writeSafetensors(path, tensorsOf(initParams(wider, 1), wider), {
      format: "lever.selector/1",
      architecture: "lever-plus.pointer-selector",
      config: JSON.stringify(config),
      k: "null",
      shots: "3",
      provenance: JSON.stringify(provenance),
    });
    expect(() => loadCheckpoint(path)).toThrow(/mis-shaped/);
    expect(checkpointConfig(path)).toEqual(config);
    writeSafetensors(path, tensorsOf(initParams(config, 1)), { format: "lever.selector/1" });
    expect(() => checkpointConfig(path)).toThrow(/header-only\.safetensors, field "__metadata__\.architecture"/);
  });

  it("reports parameter counts per group that add up to the total", () => {
    const groups = parameterGroups(config);
    expect(groups.reduce((s, g) => s + g.count, 0)).toBe(parameterCount(config));
    expect(groups.find((g) => g.group === "gate")?.count).toBe(4 * 8 + 4);
  });
});

describe("checkpoints with candidate options", () => {
  const idConfig = SelectorConfigSchema.parse({
    ...{ d: 8, hidden: 4, layers: 1, shots: 2 },
    ...{ features: ["agreement"], identity: "embedding", indexItems: 6, poolAttention: 1 },
  });
  const index = { dataset: "okvqa-train", items: 6, hash: "ab12" };
  const provenance = { stage: "sft", createdAt: "2026-01-01T00:00:00Z" };

  it("round-trips the options and the index of the learned identities", () => {
    const path = join(dir, "id.safetensors");
    saveCheckpoint(path, {
      config: idConfig,
      params: initParams(idConfig, 2),
      trainedK: 8,
      shots: 2,
      provenance,
      index,
    });
    const back = loadCheckpoint(path);
    expect(back.config).toEqual(idConfig);
    expect(back.index).toEqual(index);
    expect(back.params.get("item_emb.weight")?.length).toBe(6 * 4);
    const meta = readSafetensorsMeta(path);
    expect(meta.variant).toBe("v4-1+feat(agreement)+id+pool1");
    expect(JSON.parse(meta.index)).toEqual(index);
  });

  it("writes the config of a model without the options exactly as before they existed", () => {
    const path = join(dir, "plain.safetensors");
    saveCheckpoint(path, { config, params: initParams(config, 2), trainedK: 8, shots: 3, provenance });
    const meta = readSafetensorsMeta(path);
    expect(Object.keys(JSON.parse(meta.config))).toEqual([
      ...["d", "hidden", "heads", "layers", "dropout", "attnDropout", "temperature", "shots", "stateUpdate"],
      ...["stepEmbedding", "redundancy", "prior"],
    ]);
    expect(meta.index).toBeUndefined();
    expect(loadCheckpoint(path).index).toBeUndefined();
  });

  it("refuses to save or load identities without their index, or an index that does not match the table", () => {
    const params = initParams(idConfig, 2);
    const path = join(dir, "noindex.safetensors");
    expect(() => saveCheckpoint(path, { config: idConfig, params, trainedK: 8, shots: 2, provenance })).toThrow(
      /noindex\.safetensors, field "__metadata__\.index": .*must record the index/,
    );
    expect(() =>
      saveCheckpoint(path, {
        config: idConfig,
        params,
        trainedK: 8,
        shots: 2,
        provenance,
        index: { ...index, items: 7 },
      }),
    ).toThrow(/index has 7 items but the identity table has 6 rows/);
    writeSafetensors(path, tensorsOf(params, idConfig), {
      format: "lever.selector/1",
      architecture: "lever-plus.pointer-selector",
      config: JSON.stringify(idConfig),
      k: "null",
      shots: "2",
      provenance: JSON.stringify(provenance),
      index: JSON.stringify({ dataset: "x", items: 6 }),
    });
    expect(() => loadCheckpoint(path)).toThrow(/field "__metadata__\.index\.hash"/);
  });

  it("refuses a checkpoint with identities on another index in one line, and accepts its own index", () => {
    const ckpt = { config: idConfig, index };
    expect(() => checkIndexFits(ckpt, index, "runs/sft-0001/best.safetensors")).not.toThrow();
    const other = { dataset: "okvqa-train", items: 6, hash: "ff00" };
    let message = "";
    try {
      checkIndexFits(ckpt, other, "runs/sft-0001/best.safetensors");
    } catch (e) {
      expect(e).toBeInstanceOf(LeverError);
      message = (e as Error).message;
    }
    expect(message).toBe(
      "checkpoint runs/sft-0001/best.safetensors learned identities of index okvqa-train (6 items, hash ab12); " +
        "this run's index is okvqa-train (6 items, hash ff00) — use that index or train without identity",
    );
    expect(() => checkIndexFits(ckpt, { ...index, dataset: "vqav2-train" }, "c.safetensors")).toThrow(
      /learned identities of index okvqa-train .* this run's index is vqav2-train/,
    );
    expect(() => checkIndexFits({ config, index: undefined }, other, "plain.safetensors")).not.toThrow();
    // A run that reads no index dataset: refused for identities, fine without them.
    expect(() => checkIndexFits(ckpt, undefined, "runs/sft-0001/best.safetensors")).toThrow(
      "runs/sft-0001/best.safetensors: the checkpoint learned identities of index items, but this run reads no index dataset",
    );
    expect(() => checkIndexFits({ config, index: undefined }, undefined, "plain.safetensors")).not.toThrow();
    // Only a checkpoint is checked (its config says whether it learned identities), never a bare index.
    expectTypeOf(index).not.toExtend<Parameters<typeof checkIndexFits>[0]>();
  });
});

/** The __metadata__ of a safetensors file. */
function readSafetensorsMeta(path: string): Record<string, string> {
  const bytes = readFileSync(path);
  const n = Number(bytes.readBigUInt64LE(0));
  return JSON.parse(bytes.subarray(8, 8 + n).toString("utf8")).__metadata__;
}

describe("import of a PyTorch state dict", () => {
  const golden = JSON.parse(readFileSync(new URL("./golden/torch-golden.json", import.meta.url), "utf8"))[1];
  const gcfg = SelectorConfigSchema.parse(golden.config);
  const values = new Map(
    Object.entries(golden.params as Record<string, number[]>).map(([k, v]) => [k, Float64Array.from(v)]),
  );

  it("strips Lightning prefixes, skips the CLIP towers, infers the V4-3 architecture and keeps the outputs", async () => {
    const tensors = tensorsOf(values, gcfg, (n) => `lever_lm.pointer_selector.${n}`);
    tensors["lever_lm.img_model.vision_model.embeddings.patch"] = {
      dtype: "F32",
      shape: [2],
      data: new Float32Array(2),
    };
    tensors["lever_lm.sen_model.text_model.final_layer_norm.weight"] = {
      dtype: "F32",
      shape: [2],
      data: new Float32Array(2),
    };
    const path = join(dir, "torch.safetensors");
    writeSafetensors(path, tensors);
    const result = await importTorchStateDict(path, { temperature: 0.1 });
    expect(result.skippedEncoderTensors).toBe(2);
    expect(result.checkpoint.config).toEqual(gcfg);
    expect(result.sha256).toMatch(/^[0-9a-f]{64}$/);
    const model = new PointerSelector(result.checkpoint.config, result.checkpoint.params, "float64");
    const K = 5;
    const input = {
      queries: new Float64Array(golden.query.flat()),
      table: new Float64Array(golden.cands.flat(2)),
      slots: Int32Array.from({ length: 2 * K }, (_, i) => i),
      K,
    };
    const labels = new Int32Array(golden.labels.flat());
    const seq = noGrad(() => sequenceLogProbs(model.teacherForce(model.encode(input), 1, labels, 3), labels));
    golden.sequenceLogProb.forEach((v: number, b: number) => {
      expect(seq.data[b]).toBeCloseTo(v, 4); // float32 storage
    });
  });

  it("refuses the renamed cross_attn.* / attn_norm.* keys of the reference converters, explaining why", async () => {
    const rename = (n: string) =>
      n.replace("cross_attn_layers.0.", "cross_attn.").replace("attn_norms.0.", "attn_norm.");
    const path = join(dir, "converted.safetensors");
    writeSafetensors(
      path,
      tensorsOf(values, gcfg, (n) => `lever_lm.pointer_selector.${rename(n)}`),
    );
    await expect(importTorchStateDict(path)).rejects.toThrow(
      /refusing renamed keys .*cross_attn\..*strict=False.*docs\/selector\.md/,
    );
  });

  it("refuses a gate-less v2 state dict loaded as the gated model (no silent random gate)", async () => {
    const old = SelectorConfigSchema.parse({ d: 8, hidden: 4, layers: 1, stateUpdate: "none" });
    const path = join(dir, "v2-old.safetensors");
    writeSafetensors(path, tensorsOf(initParams(old, 2), old));
    const plain = await importTorchStateDict(path);
    expect(plain.checkpoint.config.stateUpdate).toBe("none");
    await expect(importTorchStateDict(path, { stateUpdate: "gate" })).rejects.toThrow(
      /missing query_update_gate\.weight, query_update_gate\.bias/,
    );
  });
});
