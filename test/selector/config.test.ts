import { describe, expect, it } from "vitest";
import {
  CANDIDATE_FEATURES,
  ModelOptionsSchema,
  mixesCandidates,
  readsCandidateData,
  SelectorConfigSchema,
  SelectorFieldsSchema,
  variantName,
} from "../../src/selector/config.js";

const cfg = (over: Record<string, unknown>) => SelectorConfigSchema.parse({ d: 8, hidden: 4, ...over });

describe("selector config: candidate options", () => {
  it("default to off, so an existing config parses to the model it always was", () => {
    const c = cfg({});
    expect(c).toMatchObject({ features: [], identity: "none", indexItems: 0, poolAttention: 0 });
    expect(readsCandidateData(c)).toBe(false);
    expect(mixesCandidates(c)).toBe(false);
    expect(variantName(c)).toBe("v4-1");
  });

  it("name the variant with a suffix per option", () => {
    expect(variantName(cfg({ features: ["vote", "agreement"] }))).toBe("v4-1+feat(vote,agreement)");
    expect(variantName(cfg({ identity: "embedding", indexItems: 3, prior: "cosine" }))).toBe("v4-1+prior+id");
    expect(variantName(cfg({ stateUpdate: "gru", redundancy: "max", features: ["agreement"], poolAttention: 2 }))).toBe(
      "v4-3+feat(agreement)+pool2",
    );
    expect(readsCandidateData(cfg({ features: ["vote"] }))).toBe(true);
    expect(readsCandidateData(cfg({ identity: "embedding", indexItems: 3 }))).toBe(true);
    expect(mixesCandidates(cfg({ poolAttention: 1 }))).toBe(true);
    expect(CANDIDATE_FEATURES).toEqual(["vote", "agreement", "consensus"]);
  });

  it("refuse repeated features, unknown features, identity without index items and too many pool layers", () => {
    expect(() => cfg({ features: ["vote", "vote"] })).toThrow(/features must be distinct/);
    expect(() => cfg({ features: ["answer"] })).toThrow();
    expect(() => cfg({ identity: "embedding" })).toThrow(/needs indexItems > 0 .*set it from the data/);
    expect(() => cfg({ poolAttention: 5 })).toThrow();
  });

  it("leave indexItems to the data: the training options have no such field", () => {
    expect(ModelOptionsSchema.parse({ identity: "embedding", features: ["agreement"] })).toMatchObject({
      identity: "embedding",
      features: ["agreement"],
    });
    expect(() => ModelOptionsSchema.parse({ indexItems: 5 })).toThrow(/indexItems/);
    expect(() => ModelOptionsSchema.parse({ features: ["vote", "vote"] })).toThrow(/distinct/);
  });

  it("check distinct features on the field itself, so every schema built from the fields does, naming features", () => {
    const repeated = { features: ["agreement", "agreement"] };
    expect(SelectorFieldsSchema.shape.features.safeParse(repeated.features).success).toBe(false);
    for (const result of [
      SelectorConfigSchema.safeParse({ d: 8, ...repeated }),
      ModelOptionsSchema.safeParse(repeated),
    ])
      expect(result.error?.issues.map((i) => [i.path, i.message])).toEqual([
        [["features"], "features must be distinct (name each feature once)"],
      ]);
  });

  it("a training run gets the cosine prior, centred inputs and the answer features by default; identity, pool attention and the vote scale stay absent unless set", () => {
    const opts = ModelOptionsSchema.parse({});
    expect(opts).toMatchObject({ prior: "cosine", center: "index-mean", features: ["vote", "agreement"] });
    for (const key of ["identity", "indexItems", "poolAttention", "voteScale"]) expect(key in opts).toBe(false);
    const config = SelectorConfigSchema.parse({ ...opts, d: 8, shots: 2 });
    expect(config).toMatchObject({
      prior: "cosine",
      center: "index-mean",
      voteScale: 0,
      features: ["vote", "agreement"],
      identity: "none",
      poolAttention: 0,
    });
    // The plain Lever-Plus selector, asked for explicitly; the selector's own defaults are unchanged.
    expect(ModelOptionsSchema.parse({ prior: "none", features: [] })).toMatchObject({ prior: "none", features: [] });
    expect(SelectorConfigSchema.parse({ d: 8, shots: 2 })).toMatchObject({
      prior: "none",
      center: "none",
      features: [],
    });
    expect(ModelOptionsSchema.parse({ poolAttention: 2 }).poolAttention).toBe(2);
    expect(() => ModelOptionsSchema.parse({ poolAttention: 5 })).toThrow();
  });

  it("name each training default in the option's help, after the selector field's own description", () => {
    const { prior, features } = ModelOptionsSchema.shape;
    expect(prior.description).toBe(`${SelectorFieldsSchema.shape.prior.description} (training default: cosine)`);
    expect(features.description).toBe(
      `${SelectorFieldsSchema.shape.features.description} (training default: vote, agreement)`,
    );
  });
});
