/**
 * The simulated captioning VLM's distribution over captions for one prompt (docs/simulator.md,
 * "Caption world"). A caption is a path through a small grammar graph; every edge emits one phrase:
 *
 *   [opener] a [attribute] object₁ [pose] ( [connector object₂] | ε ) preposition scene ( ε | [connector object₂] ) [tail]
 *
 * (the second object before the scene, after it, or not at all). Each slot's phrase distribution
 * mixes the zero-shot habit with what the demonstrations show, read from their shown caption TEXT
 * (src/sim/caption/lexicon.ts), each demonstration j weighing
 *
 *   w_j = (copyBase + relevance·max(0, cos(content_q, content_j))) · exp(σ_m·z_j − σ_m²/2) · decay^δ_j
 *
 * - style slots (opener, tail, attribute on/off, pose on/off, where the second object goes, the
 *   connector): p(x) = (α·prior(x) + Σ_j w_j·[j shows x]) / (α + Σ_j w_j);
 * - concepts (scene, object₁, its attribute, object₂): softmax of clarity_q·[true] + prime·Σ_j w_j·[j names
 *   it] − otherPenalty·[neither the true concept nor its look-alike] over the true concept, its look-alike
 *   and whatever the demonstrations name (perception noise that good demonstrations reduce);
 * - a concept's word: weights α·prior(r) + ρ·Σ_j w_j·share_j(r) + μ·Σ_{j naming it} w_j·[j's word has register r]
 *   over its three surfaces (canonical, alternative, fancy): demonstrations teach vocabulary;
 * - the preposition: α·prior + μ·Σ_{j of the same scene} w_j·[j's preposition].
 *
 * A near-duplicate demonstration (the query's scene and objects, content cosine ≥ copyThreshold) is, for a
 * fixed hash share copyProbability of (query, demonstration) pairs, copied verbatim: the distribution is
 * then copyMass on its exact words (shared among such demonstrations) plus (1 − copyMass) on the grammar.
 * `logProb(words)` is the log-probability of a caption under this mixture, summing over every path of
 * the grammar (forward algorithm), where any edge may also, at floorLogProb each, be left out or
 * produce any one word instead of its phrase, and any extra word may be inserted: so every caption,
 * whatever its words, has a finite score. `best()` is the greedy caption: the most probable grammar path, or the copy when that is more probable.
 */

import { CONCEPT_SPECS, type ConceptKind, EMPTY_PHRASE, type Lexicon, type ParsedCaption } from "./lexicon.js";
import type { CaptionModelParams } from "./params.js";
import { OPENERS, SCENES, TAILS, VLM_OPENER, VLM_TAIL } from "./vocab.js";
import type { CaptionWorld } from "./world.js";

/** A distribution over phrase ids (the empty phrase included when a slot is optional). */
export interface Dist {
  ids: number[];
  probs: number[];
}

interface Edge {
  from: number;
  to: number;
  weight: number;
  dist: Dist;
}

const NODES = 15;
const END = 14;

/** One demonstration as the model uses it: its item (latents) and its shown caption, parsed. */
export interface ModelDemo {
  item: number;
  parsed: ParsedCaption;
  text: string;
}

export class CaptionModel {
  readonly params: CaptionModelParams;
  private edges: Edge[] = [];
  private weights: number[] = [];
  /** Demonstrations copied verbatim, with their mass (empty: no copy). */
  copies: { demo: ModelDemo; mass: number }[] = [];
  private copyTotal = 0;
  private alpha = new Float64Array(0);

  constructor(
    readonly world: CaptionWorld,
    readonly lexicon: Lexicon,
    /** Normalised noise-free content vectors, row-major [items, dim]. */
    readonly content: Float64Array,
  ) {
    this.params = world.params.model;
  }

  /** Builds the caption distribution for query item q and demonstrations in prompt order. */
  evaluate(q: number, demos: readonly ModelDemo[]): void {
    const p = this.params;
    const n = demos.length;
    this.weights = demos.map((d, j) => {
      const teacher = Math.exp(p.teacherWeight * this.world.teacher[d.item] - p.teacherWeight ** 2 / 2);
      const similarity = Math.max(0, this.cosine(q, d.item));
      return (p.copyBase + p.relevance * similarity) * teacher * p.positionDecay ** (n - 1 - j);
    });
    this.buildEdges(q, demos);
    this.findCopies(q, demos);
  }

  /** Latent content cosine of two items. */
  cosine(a: number, b: number): number {
    const dim = this.world.params.embedding.dim;
    let dot = 0;
    for (let k = 0; k < dim; k++) dot += this.content[a * dim + k] * this.content[b * dim + k];
    return dot;
  }

  /** log p(caption words) under the current prompt's distribution. */
  logProb(words: Int32Array): number {
    let total = (1 - this.copyTotal) * this.grammarProb(words);
    for (const c of this.copies) if (sameWords(c.demo.parsed.words, words)) total += c.mass;
    return Math.log(total);
  }

  /** The greedy caption text. */
  best(): string {
    const { prob, phrases } = this.bestPath();
    let copy: ModelDemo | null = null;
    let copyProb = (1 - this.copyTotal) * prob;
    for (const c of this.copies) {
      const p = Math.exp(this.logProb(c.demo.parsed.words));
      if (p >= copyProb) {
        copy = c.demo;
        copyProb = p;
      }
    }
    if (copy !== null) return copy.text.trim();
    return phrases
      .filter((id) => id !== EMPTY_PHRASE)
      .map((id) => this.lexicon.phrases[id].text)
      .join(" ");
  }

  /** Sum over grammar paths (forward algorithm), with insertions at floorLogProb per unknown word. */
  grammarProb(words: Int32Array): number {
    const width = words.length + 1;
    if (this.alpha.length < NODES * width) this.alpha = new Float64Array(NODES * width * 2);
    const alpha = this.alpha;
    alpha.fill(0, 0, NODES * width);
    alpha[0] = 1;
    const floor = Math.exp(this.params.floorLogProb);
    const phrases = this.lexicon.phrases;
    for (let u = 0; u < NODES; u++) {
      const row = u * width;
      for (let pos = 0; pos < words.length; pos++) alpha[row + pos + 1] += alpha[row + pos] * floor;
      for (const edge of this.edges) {
        if (edge.from !== u) continue;
        const target = edge.to * width;
        for (let pos = 0; pos < width; pos++) {
          const a = alpha[row + pos] * edge.weight;
          if (a === 0) continue;
          // The edge's phrase left out, or replaced by any one word: floorLogProb each.
          alpha[target + pos] += a * floor;
          if (pos < words.length) alpha[target + pos + 1] += a * floor;
          const { ids, probs } = edge.dist;
          for (let k = 0; k < ids.length; k++) {
            const phrase = phrases[ids[k]].words;
            if (phrase.length > 0 && (pos >= words.length || words[pos] !== phrase[0])) continue;
            if (!this.lexicon.matches(ids[k], words, pos)) continue;
            alpha[target + pos + phrase.length] += a * probs[k];
          }
        }
      }
    }
    return alpha[END * width + words.length];
  }

  /** The most probable grammar path (Viterbi over the graph) and its probability. */
  bestPath(): { prob: number; phrases: number[] } {
    const best = new Float64Array(NODES).fill(0);
    const choice: { edge: Edge | null; phrase: number }[] = Array.from({ length: NODES }, () => ({
      edge: null,
      phrase: EMPTY_PHRASE,
    }));
    best[END] = 1;
    for (let u = END - 1; u >= 0; u--)
      for (const edge of this.edges) {
        if (edge.from !== u) continue;
        const { ids, probs } = edge.dist;
        for (let k = 0; k < ids.length; k++) {
          const value = edge.weight * probs[k] * best[edge.to];
          if (value > best[u]) {
            best[u] = value;
            choice[u] = { edge, phrase: ids[k] };
          }
        }
      }
    const phrases: number[] = [];
    for (let u = 0; u !== END; ) {
      const c = choice[u];
      if (c.edge === null) break;
      phrases.push(c.phrase);
      u = c.edge.to;
    }
    return { prob: best[0], phrases };
  }

  private buildEdges(q: number, demos: readonly ModelDemo[]): void {
    const w = this.world;
    const lex = this.lexicon;
    const hasSecond = w.objects[1][q] >= 0;
    const style = (prior: number[], shown: (d: ModelDemo) => number, use: (d: ModelDemo) => boolean = () => true) =>
      this.pseudoCount(prior, demos, shown, use);
    const p = this.params;
    const openerPrior = Array.from({ length: OPENERS.length + 1 }, (_, k) =>
      k === 0 ? 1 - p.zeroShotOpener : k - 1 === VLM_OPENER ? p.zeroShotOpener : 0,
    );
    const opener = style(openerPrior, (d) => d.parsed.opener + 1);
    const tailPrior = Array.from({ length: TAILS.length + 1 }, (_, k) =>
      k === 0 ? 1 - p.zeroShotTail : k - 1 === VLM_TAIL ? p.zeroShotTail : 0,
    );
    const tail = style(tailPrior, (d) => d.parsed.tail + 1);
    const attributeOn = style([1 - p.zeroShotAttribute, p.zeroShotAttribute], (d) => (d.parsed.attribute ? 1 : 0))[1];
    const poseOn = style([1 - p.zeroShotPose, p.zeroShotPose], (d) => (d.parsed.pose ? 1 : 0))[1];
    const placement = hasSecond
      ? style(
          [1 - p.zeroShotSecondObject, p.zeroShotSecondObject, 0],
          (d) => d.parsed.placement,
          (d) => w.objects[1][d.item] >= 0,
        )
      : [1, 0, 0];
    const connector = style(
      [0.2, 0.2, 0.6],
      (d) => d.parsed.connector,
      (d) => d.parsed.connector >= 0,
    );
    const optional = (on: number, dist: Dist): Dist => ({
      ids: [EMPTY_PHRASE, ...dist.ids],
      probs: [1 - on, ...dist.probs.map((x) => x * on)],
    });
    const fixed = (kind: "opener" | "tail" | "connector", probs: number[], offset: number): Dist => ({
      ids: probs.slice(offset).map((_, k) => lex.phraseId(kind, k)),
      probs: probs.slice(offset),
    });
    const openerDist: Dist = { ids: [EMPTY_PHRASE, ...fixed("opener", opener, 1).ids], probs: opener };
    const tailDist: Dist = { ids: [EMPTY_PHRASE, ...fixed("tail", tail, 1).ids], probs: tail };
    const connectorDist = fixed("connector", connector, 0);
    const scene = this.conceptDist("scene", w.scene[q], w.clarityOf(q, 0), demos);
    const object = this.conceptDist("object", w.objects[0][q], w.clarityOf(q, 1), demos);
    const attribute = this.conceptDist("attribute", w.attributes[0][q], w.clarityOf(q, 2), demos);
    const pose = this.conceptDist("pose", w.pose[q], Number.POSITIVE_INFINITY, demos);
    const second = hasSecond ? this.conceptDist("object", w.objects[1][q], w.clarityOf(q, 3), demos) : object;
    const preposition = this.prepositionDist(w.scene[q], demos);
    const pA = placement[1];
    const pB = placement[0] + placement[2] > 0 ? placement[2] / (placement[0] + placement[2]) : 0;
    const empty: Dist = { ids: [EMPTY_PHRASE], probs: [1] };
    const e = (from: number, to: number, dist: Dist, weight = 1): Edge => ({ from, to, weight, dist });
    this.edges = [
      e(0, 1, openerDist),
      e(1, 2, { ids: [lex.phraseId("article", 0)], probs: [1] }),
      e(2, 3, optional(attributeOn, attribute)),
      e(3, 4, object),
      e(4, 5, optional(poseOn, pose)),
      e(5, 6, connectorDist, pA),
      e(6, 7, second),
      e(7, 8, preposition),
      e(8, 13, scene),
      e(5, 9, empty, 1 - pA),
      e(9, 10, preposition),
      e(10, 11, scene),
      e(11, 12, connectorDist, pB),
      e(12, 13, second),
      e(11, 13, empty, 1 - pB),
      e(13, 14, tailDist),
    ];
  }

  /** (α·prior + Σ w_j·[shown_j = x]) / (α + Σ w_j) over the demonstrations `use` admits. */
  private pseudoCount(
    prior: number[],
    demos: readonly ModelDemo[],
    shown: (d: ModelDemo) => number,
    use: (d: ModelDemo) => boolean,
  ): number[] {
    const alpha = this.params.priorStrength;
    const out = prior.map((x) => alpha * x);
    let total = alpha;
    demos.forEach((d, j) => {
      if (!use(d)) return;
      out[shown(d)] += this.weights[j];
      total += this.weights[j];
    });
    return out.map((x) => x / total);
  }

  /** Belief over concepts of a kind (true one, look-alike, demonstrated ones) × their words. */
  private conceptDist(kind: ConceptKind, truth: number, clarity: number, demos: readonly ModelDemo[]): Dist {
    const p = this.params;
    const spec = CONCEPT_SPECS[kind];
    const evidence = new Map<number, number>();
    demos.forEach((d, j) => {
      const named = new Set<number>();
      for (const m of d.parsed.mentions) if (m.kind === kind) named.add(m.concept);
      for (const concept of named) evidence.set(concept, (evidence.get(concept) ?? 0) + this.weights[j]);
    });
    const look = spec[truth].partner;
    const candidates = new Set<number>([truth, ...(Number.isFinite(clarity) ? [look] : []), ...evidence.keys()]);
    const concepts = [...candidates];
    const logits = concepts.map((x) => {
      const base = x === truth ? (Number.isFinite(clarity) ? clarity : 50) : x === look ? 0 : -p.otherPenalty;
      return base + p.prime * (evidence.get(x) ?? 0);
    });
    const top = Math.max(...logits);
    const expd = logits.map((l) => Math.exp(l - top));
    const sum = expd.reduce((a, b) => a + b, 0);
    const ids: number[] = [];
    const probs: number[] = [];
    concepts.forEach((x, k) => {
      const belief = expd[k] / sum;
      if (belief < 1e-12) return;
      const words = this.surfaceDist(kind, x, demos);
      for (let r = 0; r < 3; r++) {
        ids.push(this.lexicon.phraseId(kind, x, r as 0 | 1 | 2));
        probs.push(belief * words[r]);
      }
    });
    return { ids, probs };
  }

  /** Probabilities of a concept's three words. */
  private surfaceDist(kind: ConceptKind, concept: number, demos: readonly ModelDemo[]): number[] {
    const p = this.params;
    const preferred = this.world.zeroShotRegister[kind][concept];
    const weights = [0, 1, 2].map(
      (r) => p.priorStrength * (r === preferred ? p.zeroShotPreference : (1 - p.zeroShotPreference) / 2),
    );
    demos.forEach((d, j) => {
      const wj = this.weights[j];
      for (let r = 0; r < 3; r++) weights[r] += p.registerTeach * wj * d.parsed.registerShare[r];
      for (const m of d.parsed.mentions)
        if (m.kind === kind && m.concept === concept) {
          weights[m.register] += p.conceptTeach * wj;
          break;
        }
    });
    const total = weights[0] + weights[1] + weights[2];
    return weights.map((x) => x / total);
  }

  /** The scene's usual preposition (or "near the", the VLM's) and what same-scene demonstrations use. */
  private prepositionDist(scene: number, demos: readonly ModelDemo[]): Dist {
    const p = this.params;
    const count = this.lexicon.phrases.filter((ph) => ph.kind === "preposition").length;
    const weights = new Array<number>(count).fill(0);
    weights[SCENES[scene].preposition] += p.priorStrength * 0.6;
    weights[count - 1] += p.priorStrength * 0.4;
    demos.forEach((d, j) => {
      if (this.world.scene[d.item] === scene && d.parsed.preposition >= 0)
        weights[d.parsed.preposition] += p.conceptTeach * this.weights[j];
    });
    const total = weights.reduce((a, b) => a + b, 0);
    return {
      ids: weights.map((_, k) => this.lexicon.phraseId("preposition", k)),
      probs: weights.map((x) => x / total),
    };
  }

  /** Near duplicates the VLM copies (by a fixed hash of the pair). */
  private findCopies(q: number, demos: readonly ModelDemo[]): void {
    const p = this.params;
    const w = this.world;
    const copied = demos.filter((d) => {
      const j = d.item;
      if (w.scene[j] !== w.scene[q] || w.objects[0][j] !== w.objects[0][q] || w.objects[1][j] !== w.objects[1][q])
        return false;
      if (this.cosine(q, j) < p.copyThreshold) return false;
      return pairUniform(q, j) < p.copyProbability;
    });
    this.copyTotal = copied.length > 0 ? p.copyMass : 0;
    this.copies = copied.map((demo) => ({ demo, mass: p.copyMass / copied.length }));
  }
}

function sameWords(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false;
  return true;
}

/** A fixed uniform number in [0, 1) for an ordered pair of items. */
export function pairUniform(a: number, b: number): number {
  let h = Math.imul(a + 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x7f4a7c15, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) / 4294967296;
}
