import { describe, expect, it } from "vitest";
import { Lexicon, parseCaption } from "../../../src/sim/caption/lexicon.js";
import { CaptionWorldParamsSchema } from "../../../src/sim/caption/params.js";
import { CaptionWorld } from "../../../src/sim/caption/world.js";

const small = { trainItems: 200, valItems: 50 };

describe("caption world", () => {
  it("is deterministic in its seed: same seed same fingerprint and references, another seed another", () => {
    const a = CaptionWorld.generate({ ...small, seed: 3 });
    const b = CaptionWorld.generate({ ...small, seed: 3 });
    const c = CaptionWorld.generate({ ...small, seed: 4 });
    expect(a.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(b.fingerprint).toBe(a.fingerprint);
    expect(b.references).toEqual(a.references);
    expect(c.fingerprint).not.toBe(a.fingerprint);
  });

  it("gives every image 5–7 references, image ids as item ids, train before val", () => {
    const world = CaptionWorld.generate({ ...small, seed: 5 });
    expect(world.itemsOf("train")).toHaveLength(200);
    expect(world.itemsOf("val")).toHaveLength(50);
    const counts = new Set(world.references.map((r) => r.length));
    for (const n of counts) expect(n).toBeGreaterThanOrEqual(5);
    for (const n of counts) expect(n).toBeLessThanOrEqual(7);
    expect(counts.has(5)).toBe(true);
    expect(world.itemIds.every((id) => /^[1-9][0-9]*$/.test(id))).toBe(true);
    expect(new Set(world.itemIds).size).toBe(world.size);
    expect(world.indexOf(world.itemIds[7])).toBe(7);
  });

  it("writes references that name the image's main object and scene (in some register)", () => {
    const world = CaptionWorld.generate({ ...small, seed: 6 });
    const lexicon = new Lexicon();
    let named = 0;
    let total = 0;
    for (let i = 0; i < world.size; i++)
      for (const reference of world.references[i]) {
        const parsed = parseCaption(lexicon, reference);
        const concepts = (kind: string) => parsed.mentions.filter((m) => m.kind === kind).map((m) => m.concept);
        total++;
        if (concepts("object")[0] === world.objects[0][i] && concepts("scene").includes(world.scene[i])) named++;
      }
    expect(named).toBe(total);
  });

  it("rejects unknown parameters and documents every one", () => {
    expect(() => CaptionWorldParamsSchema.parse({ concepts: 3 })).toThrow();
    expect(() => CaptionWorldParamsSchema.parse({ model: { pull: 1 } })).toThrow();
    const undocumented: string[] = [];
    const seen: string[] = [];
    const visit = (shape: Record<string, { description?: string; def?: unknown }>, prefix: string) => {
      for (const [key, schema] of Object.entries(shape)) {
        const inner = (schema as unknown as { def: { innerType?: { shape?: unknown } } }).def.innerType?.shape;
        if (inner !== undefined) visit(inner as Record<string, { description?: string }>, `${prefix}${key}.`);
        else {
          seen.push(prefix + key);
          if (!schema.description) undocumented.push(prefix + key);
        }
      }
    };
    visit(CaptionWorldParamsSchema.shape as never, "");
    expect(seen).toContain("model.copyMass");
    expect(seen).toContain("annotators.pool");
    expect(seen).toContain("embedding.modalityGap");
    expect(undocumented).toEqual([]);
  });

  it("gives no two concepts or phrases the same words", () => {
    const lexicon = new Lexicon();
    const texts = lexicon.phrases.map((p) => p.text);
    expect(new Set(texts).size).toBe(texts.length);
  });
});
