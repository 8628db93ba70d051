/**
 * The default world is pinned: every item (ids, questions, annotators, shown answers, latents) and
 * every embedding of both splits hash to a value recorded before the label-noise and item-quality
 * parameters existed, so parameters that are off leave the default world bit-identical.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { splitEmbeddings } from "../../src/sim/embed.js";
import { SimVlm, worldFileContent } from "../../src/sim/vlm.js";
import { SPLITS, World } from "../../src/sim/world.js";
import { Rng } from "../../src/util/rng.js";

/** sha256 over everything a world generates: items, annotators, latents and each split's embeddings. */
function worldHash(world: World): string {
  const hash = createHash("sha256");
  for (let i = 0; i < world.size; i++)
    hash.update(
      [
        world.questionIds[i],
        world.splitOf[i],
        world.imageOf[i],
        world.questions[i],
        world.annotatorAnswers[i].join("|"),
        world.annotatorConfidences[i].join("|"),
        world.shownAnswer[i],
        world.concept[i],
        world.qtype[i],
        world.trueAnswer[i],
        world.knowledge[i],
      ].join("\u0000"),
    );
  for (const split of SPLITS) {
    const e = splitEmbeddings(world, split);
    hash.update(e.ids.join(","));
    for (const m of [e.image, e.text, e.joint]) hash.update(new Uint8Array(m.buffer, m.byteOffset, m.byteLength));
  }
  return hash.digest("hex");
}

describe("the default world", () => {
  it("is bit-identical to the world pinned before label noise and item quality existed", () => {
    const world = World.generate({});
    expect(world.fingerprint).toBe("8f41fdb229f4919ab863e45d07080879bb840545dfc860444b9e8227ee754ee0");
    // world.json's content (parameters as written, fingerprint, counts) and the backend id (cache keys).
    expect(
      createHash("sha256")
        .update(JSON.stringify(worldFileContent(world)))
        .digest("hex"),
    ).toBe("a5f3e5d493ed1fdc0f38e4fda5437fdea51b994eda9a8a1d7c269f0c99089bdb");
    expect(new SimVlm(world).id).toBe("sim:8f41fdb229f4919a:f3bbb315adea899f");
    expect(worldHash(world)).toBe("ee7b1d1ad2cf6a56ce8f623bc8449af4c12b2bb1ed2647b71f4184ce54cb0f28");
  });

  it("gives the answers and log-probabilities pinned before label noise and item quality existed", () => {
    const sim = SimVlm.fromParams({});
    const { world } = sim;
    const train = world.itemsOf("train");
    const rng = new Rng(7);
    const hash = createHash("sha256");
    for (const q of world.itemsOf("val").slice(0, 400)) {
      const demos = rng.sampleWithoutReplacement(train.length, rng.int(5)).map((r) => train[r]);
      const prompt = {
        query: { questionId: world.questionIds[q], imagePath: null, question: "" },
        demonstrations: demos.map((d) => ({
          questionId: world.questionIds[d],
          imagePath: null,
          question: "",
          answer: world.shownAnswer[d],
        })),
      };
      const { text } = sim.answer(prompt);
      hash.update(`${text}|${sim.logProb(prompt, text)}|${sim.logProb(prompt, world.shownAnswer[q])}\n`);
    }
    expect(hash.digest("hex")).toBe("bc8de8b84050cc649430fcd28d0b2913a6e734a0e4d79828b61da17221edf85d");
  });
});
