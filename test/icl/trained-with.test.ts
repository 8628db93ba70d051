import { describe, expect, it } from "vitest";
import { checkTrainedWith, trainedWith } from "../../src/icl/trained-with.js";
import { ProvenanceSchema } from "../../src/selector/checkpoint.js";
import { leverErrorOf } from "../helpers/errors.js";

const provenance = (notes: Record<string, string>) =>
  ProvenanceSchema.parse({ stage: "test", createdAt: "2026-01-01T00:00:00Z", notes });

describe("trainedWith / checkTrainedWith", () => {
  it("reads the recorded embedding kind and pool sampler; an unknown one is one line naming the field", () => {
    expect(trainedWith(provenance({ embedding: "text", poolSampler: "mix", source: "x" }), "a.safetensors")).toEqual({
      embedding: "text",
      poolSampler: "mix",
    });
    expect(trainedWith(provenance({}), "a.safetensors")).toEqual({});
    expect(leverErrorOf(() => trainedWith(provenance({ embedding: "audio" }), "a.safetensors")).message).toBe(
      'a.safetensors, field "provenance.notes.embedding": unknown embedding kind "audio"',
    );
    expect(leverErrorOf(() => trainedWith(provenance({ poolSampler: "nope" }), "a.safetensors")).message).toBe(
      'a.safetensors, field "provenance.notes.poolSampler": unknown pool sampler "nope"',
    );
  });

  it("refuses a given value that differs from the recorded one; equal, absent or unrecorded values pass", () => {
    const trained = { embedding: "text" as const, poolSampler: "mix" as const };
    const given = (embedding?: string, poolSampler?: string) => ({
      embedding: { value: embedding, from: "--e" },
      poolSampler: { value: poolSampler, from: "--p" },
    });
    for (const ok of [given("text", "mix"), given(), given(undefined, "mix")])
      expect(() => checkTrainedWith(trained, "a.safetensors", ok)).not.toThrow();
    expect(() => checkTrainedWith({}, "a.safetensors", given("joint", "random"))).not.toThrow();
    expect(leverErrorOf(() => checkTrainedWith(trained, "a.safetensors", given("joint"))).message).toBe(
      'a.safetensors, field "provenance.notes.embedding": the selector was trained on "text" embeddings, not "joint" (--e); it reads only the kind it was trained on',
    );
    expect(leverErrorOf(() => checkTrainedWith(trained, "a.safetensors", given("text", "random"))).message).toBe(
      'a.safetensors, field "provenance.notes.poolSampler": the selector was trained on "mix" pools, not "random" (--p); use pools of the sampler it was trained on',
    );
  });
});
