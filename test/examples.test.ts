import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadExperiment } from "../src/experiment/load.js";
import { plan, type RunPlan } from "../src/experiment/plan.js";
import { STAGES } from "../src/experiment/stages.js";

const dir = "examples";
const load = (name: string) => plan(loadExperiment(join(dir, name)));

/** How many distinct stages of each kind the plan runs, and how many variants use each. */
function shape(p: RunPlan): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const { stage, variants } of p.unique) (out[stage.stage] ??= []).push(variants.length);
  return out;
}

const idOf = (p: RunPlan, stage: string) => p.variants[0].stages.find((s) => s.stage === stage)?.id;

describe("examples/", () => {
  const files = readdirSync(dir).filter((f) => /\.(ya?ml|json)$/.test(f));

  it("holds the documented experiment files", () => {
    expect(files.sort()).toEqual([
      "beta-seed-sweep.yaml",
      "caption-demo.yaml",
      "coco-caption-vllm.yaml",
      "demo.yaml",
      "okvqa-vllm.yaml",
      "worlds.yaml",
    ]);
  });

  it("caption-demo.yaml: a caption world, every stage, image embeddings, CIDEr rewards, the consensus baseline", () => {
    const p = load("caption-demo.yaml");
    const e = p.variants[0].variant.experiment;
    expect(e.data.captionSynth).toMatchObject({ trainItems: 3000, valItems: 1000 });
    expect(e.embedding).toBe("image");
    expect(p.variants[0].stages.map((s) => s.stage)).toEqual(load("demo.yaml").variants[0].stages.map((s) => s.stage));
    for (const stage of ["rce", "grpo", "online"] as const) expect(e[stage]?.reward.mode).toBe("cider");
    expect(e.sft?.model.features).toEqual(["consensus"]);
    expect(e.eval?.baselines).toContain("consensus");
  });

  it("worlds.yaml: no training, the demo's pools, top-k, vote and informed on 2,000 questions; --set picks the world", () => {
    const p = plan(loadExperiment(join(dir, "worlds.yaml"), ["data.synth.labelNoise=0.25"]));
    expect(shape(p)).toEqual({ data: [1], pools: [1] });
    const e = p.variants[0].variant.experiment;
    expect(e.data.synth).toMatchObject({ trainItems: 5000, valItems: 2000, labelNoise: 0.25 });
    expect(e.pools).toMatchObject(load("demo.yaml").variants[0].variant.experiment.pools);
    expect(e.eval?.baselines).toEqual(["topk-joint", "vote", "informed"]);
  });

  it.each(files)("%s loads, validates and plans", (file) => {
    const p = load(file);
    expect(p.variants.length).toBeGreaterThan(0);
    for (const v of p.variants) expect(v.stages[0].stage).toBe("data");
  });

  it("demo.yaml: one variant, every stage once, one evaluation", () => {
    const p = load("demo.yaml");
    expect(p.variants).toHaveLength(1);
    expect(shape(p)).toEqual(Object.fromEntries(STAGES.map((s) => [s, [1]])));
    expect(p.variants[0].variant.experiment.vlm.vlm).toBe("sim");
  });

  it("coco-caption-vllm.yaml: Karpathy's caption splits and a vLLM server; the selector starts from consensus", () => {
    const p = load("coco-caption-vllm.yaml");
    expect(p.variants).toHaveLength(1);
    const e = p.variants[0].variant.experiment;
    expect(e.data.importCaptions?.train).toMatchObject({
      format: "karpathy",
      split: "train",
      demoReference: "consensus",
    });
    expect(e.data.importCaptions?.val).toMatchObject({ format: "karpathy", split: "test" });
    expect(e.vlm).toMatchObject({ vlm: "openai", model: "Qwen/Qwen2.5-VL-3B-Instruct" });
    expect(e.sft?.model).toMatchObject({ features: ["consensus"], featureInit: 1 });
    for (const stage of ["rce", "grpo"] as const) expect(e[stage]?.reward.mode).toBe("cider");
  });

  it("okvqa-vllm.yaml: real files and a vLLM server; one variant through offline GRPO", () => {
    const p = load("okvqa-vllm.yaml");
    expect(p.variants).toHaveLength(1);
    expect(shape(p)).toEqual({
      data: [1],
      pools: [1],
      beams: [1],
      sft: [1],
      rollouts: [1],
      rce: [1],
      grpo: [1],
    });
    const e = p.variants[0].variant.experiment;
    expect(e.data.import?.train.questions).toMatch(/OpenEnded_mscoco_train2014_questions\.json$/);
    expect(e.data.import?.val.annotations).toMatch(/mscoco_val2014_annotations\.json$/);
    expect(Object.keys(e.data.import?.embeddings.train ?? {}).sort()).toEqual(["image", "joint", "text"]);
    expect(e.vlm).toMatchObject({ vlm: "openai", model: "Qwen/Qwen2.5-VL-3B-Instruct" });
    expect(e.pools).toMatchObject({ sampler: "joint-sim", k: 32 });
    expect(e.beams).toMatchObject({ anchors: "random:800", shots: 4, budget: 8 });
    expect(e.eval).toMatchObject({ queries: "first:800", shots: [1, 2, 3, 4] });
    // More replicas (an operational setting) plan the very same stages and evaluation.
    const more = plan(loadExperiment(join(dir, "okvqa-vllm.yaml"), ["vlm.baseUrls=[http://a:8000, http://b:8000]"]));
    expect(more.variants[0].stages).toEqual(p.variants[0].stages);
    expect(more.variants[0].evalId).toBe(p.variants[0].evalId);
  });

  it("beta-seed-sweep.yaml: 3 β × 3 seeds = 9 variants sharing one of each upstream stage, 9 GRPO runs", () => {
    const p = load("beta-seed-sweep.yaml");
    expect(p.loaded.sweeps).toEqual([
      ["grpo", "kl", "beta"],
      ["grpo", "seed"],
    ]);
    expect(p.variants).toHaveLength(9);
    expect(shape(p)).toEqual({
      data: [9],
      pools: [9],
      beams: [9],
      sft: [9],
      rollouts: [9],
      rce: [9],
      grpo: [1, 1, 1, 1, 1, 1, 1, 1, 1],
    });
    expect(new Set(p.variants.map((v) => v.evalId)).size).toBe(1);
    const grpo = p.variants.map((v) => v.stages.find((s) => s.stage === "grpo"));
    expect(grpo[0]?.label).toBe("grpo_beta-0.12_seed-1");
    expect(grpo[8]?.label).toBe("grpo_beta-0.18_seed-3");
    // The seeds of one β collapse to one name: one row of the comparison.
    expect(new Set(grpo.map((s) => s?.seedGroup))).toEqual(
      new Set(["grpo_beta-0.12", "grpo_beta-0.15", "grpo_beta-0.18"]),
    );
    // Stages no seed reaches form no group.
    expect(p.variants[0].stages.filter((s) => s.stage !== "grpo").map((s) => s.seedGroup)).toEqual(Array(6).fill(null));
    expect(p.variants[0].variant.experiment.compare?.baseline).toBe("selector:rce");
  });

  it("the sweep's upstream stages are the demo's: a workspace that ran `lever demo` reuses them", () => {
    const demo = load("demo.yaml");
    const sweep = load("beta-seed-sweep.yaml");
    for (const stage of ["data", "pools", "beams", "sft", "rollouts", "rce"])
      expect(idOf(sweep, stage), stage).toBe(idOf(demo, stage));
    expect(idOf(sweep, "grpo")).not.toBe(idOf(demo, "grpo"));
  });
});
