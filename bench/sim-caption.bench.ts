/**
 * The caption simulator's baselines and speed (docs/simulator.md, "Caption world"): mean CIDEr-D
 * (corpus mode, ×100, pycocoevalcap's) of the greedy caption over the val images for zero-shot,
 * random, top-k by image–image and by image–caption cosine over the whole index at 1–4 shots (most
 * similar next to the query, each demonstration showing its first reference), and at one shot two
 * picks among the 32 nearest images: the demonstration whose prompt gives the query's first reference
 * the highest log-probability (what InfoScore beams maximise), and the one whose greedy caption scores
 * best (CIDEr-D with document frequencies of the index: an oracle). Then prompts/s.
 */
import { ciderScores, documentFrequency } from "../src/metrics/caption/cider.js";
import { tokenizeCaption } from "../src/metrics/caption/ptb-tokenize.js";
import type { CaptionImage } from "../src/metrics/caption/types.js";
import { captionSplitEmbeddings } from "../src/sim/caption/embed.js";
import type { CaptionWorldParamsInput } from "../src/sim/caption/params.js";
import { SimCaptionVlm } from "../src/sim/caption/vlm.js";
import { Rng } from "../src/util/rng.js";
import type { VlmPrompt } from "../src/vlm/types.js";
import { sized } from "./common.js";

type Picker = (q: number, shots: number) => number[];

export async function run(params: CaptionWorldParamsInput = sized({}, { trainItems: 40, valItems: 4 })): Promise<void> {
  const sim = SimCaptionVlm.fromParams(params);
  const world = sim.world;
  const train = world.itemsOf("train");
  const val = world.itemsOf("val");
  const tok = (s: string) => tokenizeCaption(s);
  const refs = new Map<number, string[]>();
  for (const i of [...train, ...val]) refs.set(i, world.references[i].map(tok));
  const trainEmb = captionSplitEmbeddings(world, sim.lexicon, "train");
  const valEmb = captionSplitEmbeddings(world, sim.lexicon, "val");
  const dim = trainEmb.dim;
  const ranked = (query: Float32Array, row: number, keys: Float32Array) => {
    const scores = train.map((_, j) => {
      let dot = 0;
      for (let k = 0; k < dim; k++) dot += query[row * dim + k] * keys[j * dim + k];
      return dot;
    });
    return train.map((_, j) => j).sort((a, b) => scores[b] - scores[a]);
  };
  const byImage = val.map((_, r) => ranked(valEmb.image, r, trainEmb.image));
  const byCaption = val.map((_, r) => ranked(valEmb.image, r, trainEmb.text));
  const prompt = (q: number, demos: number[]): VlmPrompt => ({
    query: { questionId: world.itemIds[q], imagePath: null, question: "" },
    demonstrations: demos.map((d) => ({
      questionId: world.itemIds[d],
      imagePath: null,
      question: "",
      answer: world.references[d][0],
    })),
  });
  const corpus = (captions: string[]) =>
    100 *
    ciderScores(val.map((q, r): CaptionImage => ({ hypothesis: tok(captions[r]), references: refs.get(q) ?? [] })))
      .corpus;
  const evaluate = (pick: Picker, shots: number) => corpus(val.map((q, r) => sim.caption(prompt(q, pick(r, shots)))));
  const rng = new Rng(7);
  const randomPick: Picker = (_r, shots) => rng.sampleWithoutReplacement(train.length, shots).map((j) => train[j]);
  const topk =
    (ranking: number[][]): Picker =>
    (r, shots) =>
      ranking[r]
        .slice(0, shots)
        .reverse()
        .map((j) => train[j]);
  const rows: [string, number[]][] = [
    ["zero-shot", [evaluate(() => [], 0)]],
    ["random", [1, 2, 3, 4].map((s) => evaluate(randomPick, s))],
    ["top-k image", [1, 2, 3, 4].map((s) => evaluate(topk(byImage), s))],
    ["top-k caption", [1, 2, 3, 4].map((s) => evaluate(topk(byCaption), s))],
  ];
  const df = documentFrequency(train.map((i) => refs.get(i) ?? []));
  const pool = (r: number) => byImage[r].slice(0, 32).map((j) => train[j]);
  const bestBy =
    (value: (q: number, d: number) => number): Picker =>
    (r) => {
      const q = val[r];
      let best = -1;
      let bestValue = Number.NEGATIVE_INFINITY;
      for (const d of pool(r)) {
        const v = value(q, d);
        if (v > bestValue) [best, bestValue] = [d, v];
      }
      return [best];
    };
  const logprob = bestBy((q, d) => sim.logProb(prompt(q, [d]), world.references[q][0]));
  const oracle = bestBy((q, d) => {
    const text = sim.caption(prompt(q, [d]));
    return ciderScores([{ hypothesis: tok(text), references: refs.get(q) ?? [] }], df).corpus;
  });
  rows.push(["best ref. logprob of 32", [evaluate(logprob, 1)]]);
  rows.push(["oracle of 32 (fixed df)", [evaluate(oracle, 1)]]);
  console.log("| method | 0 | 1 | 2 | 3 | 4 |\n| --- | --- | --- | --- | --- | --- |");
  for (const [name, values] of rows) {
    const cells =
      name === "zero-shot" ? [values[0].toFixed(1), "", "", "", ""] : ["", ...values.map((v) => v.toFixed(1))];
    while (cells.length < 5) cells.push("");
    console.log(`| ${name} | ${cells.join(" | ")} |`);
  }
  speed(sim, train, val);
}

function speed(sim: SimCaptionVlm, train: number[], val: number[]): void {
  const world = sim.world;
  const rng = new Rng(99);
  const prompts: VlmPrompt[] = Array.from({ length: sized(20_000, 100) }, () => ({
    query: { questionId: world.itemIds[val[rng.int(val.length)]], imagePath: null, question: "" },
    demonstrations: Array.from({ length: rng.int(5) }, () => {
      const d = train[rng.int(train.length)];
      return { questionId: world.itemIds[d], imagePath: null, question: "", answer: world.references[d][0] };
    }),
  }));
  let start = performance.now();
  for (const p of prompts) sim.caption(p);
  const generate = prompts.length / ((performance.now() - start) / 1000);
  start = performance.now();
  for (let i = 0; i < prompts.length; i++) sim.logProb(prompts[i], world.references[val[i % val.length]][0]);
  const score = prompts.length / ((performance.now() - start) / 1000);
  console.log(`\ngenerate ${Math.round(generate)} prompts/s, scoreAnswer ${Math.round(score)} prompts/s (0–4 shots)`);
}
