/**
 * The canonical form identities hash (src/util/canonical-settings.ts): defaults and operational fields
 * left out at every depth, relative to a frozen baseline where it has the field.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { canonicalSettings, settingsNode } from "../../src/util/canonical-settings.js";
import { hashValue } from "../../src/util/hash.js";
import { OPERATIONAL } from "../../src/util/operational.js";

const Optim = z
  .object({
    epochs: z.number().default(5),
    lr: z.number().default(1e-4),
    clip: z.number().optional(),
    threads: z.number().default(4).meta(OPERATIONAL),
  })
  .strict();
const Section = z
  .object({
    seed: z.number().default(0),
    optim: Optim.prefault({}),
    extra: z.object({ on: z.boolean().default(true) }).optional(),
    groupLr: z.record(z.string(), z.number()).default({ features: 100 }),
    timeoutMs: z.number().default(1000).meta(OPERATIONAL),
  })
  .strict();
const canonical = (input: unknown, schema: z.ZodType = Section, baseline = settingsNode(Section)) =>
  canonicalSettings(schema, schema.parse(input) as object, baseline);

describe("canonical settings", () => {
  it("an unset setting and its explicit default are the same; operational ones are left out at every depth", () => {
    expect(canonical({})).toEqual({});
    expect(canonical({ seed: 0, optim: { epochs: 5, threads: 8 }, timeoutMs: 5, groupLr: { features: 100 } })).toEqual(
      {},
    );
    expect(canonical({ seed: 1, optim: { lr: 0.01, clip: 1 } })).toEqual({ seed: 1, optim: { clip: 1, lr: 0.01 } });
    // Records are compared whole.
    expect(canonical({ groupLr: { features: 100, identity: 1 } })).toEqual({
      groupLr: { features: 100, identity: 1 },
    });
  });

  it("an optional object without a default stays when present, even with every default: on is not off", () => {
    expect(canonical({})).not.toHaveProperty("extra");
    expect(canonical({ extra: {} })).toEqual({ extra: {} });
    expect(canonical({ extra: { on: false } })).toEqual({ extra: { on: false } });
  });

  it("a field added with a default changes nothing until it is set; a default changed after the baseline was frozen does", () => {
    const frozen = settingsNode(Section);
    const Grown = Section.extend({
      seed: z.number().default(7), // its default changed since the baseline
      optim: Optim.extend({ warmup: z.number().default(0.1) }).prefault({}), // a new setting
    });
    const before = hashValue(canonical({ optim: { epochs: 3 } }, Section, frozen));
    expect(hashValue(canonical({ seed: 0, optim: { epochs: 3 } }, Grown, frozen))).toBe(before);
    expect(hashValue(canonical({ seed: 0, optim: { epochs: 3, warmup: 0.1 } }, Grown, frozen))).toBe(before);
    expect(canonical({ seed: 0, optim: { warmup: 0.2 } }, Grown, frozen)).toEqual({ optim: { warmup: 0.2 } });
    // Unset, the seed is now 7, not the frozen 0: another result, another identity.
    expect(canonical({}, Grown, frozen)).toEqual({ seed: 7 });
  });
});
