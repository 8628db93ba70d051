import { describe, expect, it } from "vitest";
import { documentFrequency } from "../../src/metrics/caption/cider.js";
import { tokenizeCaption } from "../../src/metrics/caption/ptb-tokenize.js";
import { consensusIndex, DemoReferenceSchema, demonstrationReferences } from "../../src/task/caption-reference.js";

const items = [
  { itemId: "1", references: ["A cat on a mat.", "A dog runs in a park.", "A dog running in the park.", "Dog runs."] },
  { itemId: "2", references: ["A red bus.", "A bus on a street.", "A red bus on the street."] },
  { itemId: "3", references: ["Only one reference."] },
  { itemId: "4", references: ["A plate of food.", "Food on a plate.", "A bowl of soup."] },
];

describe("the demonstration reference", () => {
  it("is a setting with a default and a description", () => {
    expect(DemoReferenceSchema.parse(undefined)).toBe("first");
    expect(DemoReferenceSchema.description).toMatch(/consensus/);
    expect(() => DemoReferenceSchema.parse("longest")).toThrow();
  });

  it("first: the first reference in file order", () => {
    const chosen = demonstrationReferences(items, "first", 0);
    expect([...chosen.values()]).toEqual(items.map((i) => i.references[0]));
  });

  it("random: one of the item's references, fixed by the seed and independent of the other items", () => {
    const a = demonstrationReferences(items, "random", 7);
    expect(demonstrationReferences(items, "random", 7)).toEqual(a);
    for (const item of items) expect(item.references).toContain(a.get(item.itemId));
    expect(demonstrationReferences(items.slice(1), "random", 7).get("2")).toBe(a.get("2"));
    const seeds = Array.from({ length: 12 }, (_, s) => demonstrationReferences(items, "random", s).get("1"));
    expect(new Set(seeds).size).toBeGreaterThan(1);
  });

  it("consensus: the reference most like the item's others by CIDEr-D (ties to the earlier one)", () => {
    const chosen = demonstrationReferences(items, "consensus", 0);
    expect(chosen.get("1")).toMatch(/^A dog run/);
    expect(chosen.get("2")).toBe("A red bus on the street.");
    expect(chosen.get("3")).toBe("Only one reference.");
    const df = documentFrequency(items.map((i) => i.references.map(tokenizeCaption)));
    expect(consensusIndex(["x y", "x y"], df)).toBe(0);
    expect(consensusIndex(["a cat on a mat"], df)).toBe(0);
  });
});
