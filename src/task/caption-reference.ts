/**
 * Which of a caption item's references a demonstration shows (issue 24): `lever data import-captions
 * --demo-reference` (the schema is in src/data/caption-item.ts). The choice is the item's `answer`
 * column — what every stage shows and what beams score — so it is part of the items hash and of every
 * stage identity downstream, and the dataset records it (`details.demoReference`):
 *
 *   - `first`: the first reference in file order (Lever-LM's `captions[0]`, OpenFlamingo's
 *     `sentences[0].raw`);
 *   - `random`: one drawn per item from the run's seed (a stream named by the item id, so it does not
 *     depend on which other items are shown);
 *   - `consensus`: the reference with the highest CIDEr-D against the item's other references, with
 *     document frequencies fixed from the whole dataset's references (src/metrics/caption/; every
 *     caption PTB-tokenized first, as the metric does); ties go to the earlier reference, and an item
 *     with one reference shows it.
 * What we read of Lever-Plus and Lever-LM, and where: docs/provenance.md.
 */
import { type CaptionItem, DEMO_REFERENCES, type DemoReference, DemoReferenceSchema } from "../data/caption-item.js";
import { ciderScores, type DocumentFrequency, documentFrequency } from "../metrics/caption/cider.js";
import { tokenizeCaption } from "../metrics/caption/ptb-tokenize.js";
import { Rng } from "../util/rng.js";

export { DEMO_REFERENCES, type DemoReference, DemoReferenceSchema };

/** Chooses each item's demonstration reference; `seed` is the run's (used by `random`). */
export function demonstrationReferences(
  items: readonly Pick<CaptionItem, "itemId" | "references">[],
  rule: DemoReference,
  seed: number,
): Map<string, string> {
  const out = new Map<string, string>();
  if (rule === "first") for (const item of items) out.set(item.itemId, item.references[0]);
  else if (rule === "random") {
    const rng = new Rng(seed).child("demo-reference");
    for (const item of items) out.set(item.itemId, item.references[rng.child(item.itemId).int(item.references.length)]);
  } else {
    const tokenized = items.map((item) => item.references.map(tokenizeCaption));
    const df = documentFrequency(tokenized);
    for (let i = 0; i < items.length; i++)
      out.set(items[i].itemId, items[i].references[consensusIndex(tokenized[i], df)]);
  }
  return out;
}

/** Index of the reference with the highest CIDEr-D against the others (first on ties; 0 for one reference). */
export function consensusIndex(tokenized: readonly string[], df: DocumentFrequency): number {
  if (tokenized.length < 2) return 0;
  const images = tokenized.map((hypothesis, k) => ({
    hypothesis,
    references: tokenized.filter((_, j) => j !== k),
  }));
  const { perImage } = ciderScores(images, df);
  let best = 0;
  for (let k = 1; k < perImage.length; k++) if (perImage[k] > perImage[best]) best = k;
  return best;
}
