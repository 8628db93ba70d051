/**
 * The synthetic caption world (docs/simulator.md, "Caption world"). Each image shows a latent scene and
 * 1–3 objects (the first two of which captions name), each object with an attribute, and the main
 * object in a pose. 5–7 references per image are written by simulated annotators from a pool, each
 * with habits: how often they use the canonical COCO word for a concept, name the attribute or the
 * pose or the second object, where they put it, openers, prepositions. Each item has a hidden teacher
 * quality z: its FIRST reference (the one a demonstration shows by default) is written more
 * canonically and plainly when z > 0, and the simulated VLM follows it more (params.model.teacherWeight).
 * Each image also has a clarity per slot (scene, main object, its attribute, second object): how
 * surely the VLM perceives it. Everything comes from named `Rng` children of the seed, so
 * `CaptionWorld.generate(params)` rebuilds the identical world from `world.json`; the fingerprint is
 * sha256 over every item's id, references and latents.
 *
 * Item ids are image ids in string form (one caption item per image, as `lever data import-captions`
 * gives them). The latents are for src/sim/caption/ only; selectors see the embeddings (embed.ts).
 */
import { createHash } from "node:crypto";
import { Rng } from "../../util/rng.js";
import type { Split } from "../world.js";
import { SPLITS } from "../world.js";
import { type CaptionWorldParams, type CaptionWorldParamsInput, CaptionWorldParamsSchema } from "./params.js";
import {
  ATTRIBUTES,
  CONNECTORS,
  OBJECTS,
  OPENERS,
  POSES,
  POSES_OF_KIND,
  PREPOSITIONS,
  type Register,
  SCENES,
  TAILS,
  VLM_OPENER,
} from "./vocab.js";

/** Slots with a perception clarity, in the order of `clarity` rows. */
export const CLARITY_SLOTS = ["scene", "object", "attribute", "second"] as const;

/** One annotator's habits (rates in [0, 1]). */
export interface Annotator {
  canonical: number;
  attribute: number;
  pose: number;
  afterScene: number;
}

export class CaptionWorld {
  readonly itemIds: string[] = [];
  readonly splitOf: Split[] = [];
  readonly references: string[][] = [];
  /** Latents, one entry per item (train items first, then val). −1: no such object. */
  scene = new Int32Array(0);
  objects: Int32Array[] = [new Int32Array(0), new Int32Array(0), new Int32Array(0)];
  attributes: Int32Array[] = [new Int32Array(0), new Int32Array(0), new Int32Array(0)];
  pose = new Int32Array(0);
  /** Clarity of each slot, row-major [item, CLARITY_SLOTS.length]. */
  clarity = new Float64Array(0);
  /** Hidden teacher quality z ~ N(0, 1). */
  teacher = new Float64Array(0);
  /** The register the VLM prefers zero-shot, per concept kind and concept. */
  readonly zeroShotRegister: Record<"scene" | "object" | "attribute" | "pose", Register[]> = {
    scene: [],
    object: [],
    attribute: [],
    pose: [],
  };
  readonly annotators: Annotator[] = [];
  /** The objects typical of each scene. */
  readonly sceneObjects: number[][] = [];

  private readonly indexById = new Map<string, number>();
  private fingerprintValue = "";

  private constructor(readonly params: CaptionWorldParams) {}

  /** Builds the world for `input` (validated; defaults filled in). Deterministic in the parameters. */
  static generate(input: CaptionWorldParamsInput): CaptionWorld {
    const world = new CaptionWorld(CaptionWorldParamsSchema.parse(input));
    world.build();
    return world;
  }

  get size(): number {
    return this.itemIds.length;
  }

  get fingerprint(): string {
    return this.fingerprintValue;
  }

  /** Item index of an item (image) id, or −1. */
  indexOf(itemId: string): number {
    return this.indexById.get(itemId) ?? -1;
  }

  /** Item indices of a split, in image-id order. */
  itemsOf(split: Split): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.size; i++) if (this.splitOf[i] === split) out.push(i);
    return out;
  }

  clarityOf(item: number, slot: number): number {
    return this.clarity[item * CLARITY_SLOTS.length + slot];
  }

  private build(): void {
    const p = this.params;
    const rng = new Rng(p.seed).child("caption-world");
    this.drawHabits(rng.child("habits"));
    const drafts: Draft[] = [];
    let nextImageId = 0;
    for (const split of SPLITS) {
      const count = split === "train" ? p.trainItems : p.valItems;
      nextImageId = this.drawSplit(rng.child(`images:${split}`), split, count, nextImageId, drafts) + 1000;
    }
    const column = (f: (d: Draft) => number) => Int32Array.from(drafts, f);
    this.scene = column((d) => d.scene);
    this.objects = [0, 1, 2].map((k) => column((d) => d.objects[k] ?? -1));
    this.attributes = [0, 1, 2].map((k) => column((d) => d.attributes[k] ?? -1));
    this.pose = column((d) => d.pose);
    this.teacher = Float64Array.from(drafts, (d) => d.teacher);
    this.clarity = Float64Array.from(drafts.flatMap((d) => d.clarity));
    this.writeReferences(rng.child("references"));
    const hash = createHash("sha256");
    drafts.forEach((d, i) => {
      this.indexById.set(this.itemIds[i], i);
      hash.update(
        `${this.itemIds[i]}|${d.scene}|${d.objects.join(",")}|${d.attributes.join(",")}|${d.pose}|${d.teacher}|${d.clarity.join(",")}|${this.references[i].join("|")}\n`,
      );
    });
    this.fingerprintValue = hash.digest("hex");
  }

  /** The VLM's zero-shot words, the annotator pool, each scene's typical objects. */
  private drawHabits(rng: Rng): void {
    const p = this.params;
    const a = p.annotators;
    const sizes = { scene: SCENES.length, object: OBJECTS.length, attribute: ATTRIBUTES.length, pose: POSES.length };
    for (const kind of ["scene", "object", "attribute", "pose"] as const)
      for (let k = 0; k < sizes[kind]; k++)
        this.zeroShotRegister[kind].push(rng.next() < p.model.zeroShotFancy ? 2 : 0);
    const between = (lo: number, hi: number) => lo + (hi - lo) * rng.next();
    for (let k = 0; k < a.pool; k++)
      this.annotators.push({
        canonical: between(a.canonicalMin, a.canonicalMax),
        attribute: between(a.attributeMin, a.attributeMax),
        pose: between(a.poseMin, a.poseMax),
        afterScene: between(0, a.afterSceneMax),
      });
    for (let s = 0; s < p.scenes; s++)
      this.sceneObjects.push(rng.sampleWithoutReplacement(p.objects, Math.min(p.objectsPerScene, p.objects)));
  }

  /** Draws one split's images and latents; returns the last image id used. */
  private drawSplit(rng: Rng, split: Split, count: number, firstImageId: number, drafts: Draft[]): number {
    const p = this.params;
    let imageId = firstImageId;
    for (let made = 0; made < count; made++) {
      imageId += 1 + rng.int(20);
      const scene = rng.int(p.scenes);
      const n = rng.next() < p.secondObjectRate ? (rng.next() < p.thirdObjectRate ? 3 : 2) : 1;
      const objects: number[] = [];
      while (objects.length < n) {
        const typical = this.sceneObjects[scene];
        const object = rng.next() < p.sceneFocus ? typical[rng.int(typical.length)] : rng.int(p.objects);
        if (!objects.includes(object)) objects.push(object);
      }
      const attributes = objects.map(() => rng.int(p.attributes));
      const poses = POSES_OF_KIND[OBJECTS[objects[0]].kind];
      const pose = poses[rng.int(poses.length)];
      const teacher = rng.normal();
      const clarity = [0, 1, 2, 3].map(() => p.perceptionMean + p.perceptionSd * rng.normal());
      drafts.push({ scene, objects, attributes, pose, teacher, clarity });
      this.itemIds.push(String(imageId));
      this.splitOf.push(split);
    }
    return imageId;
  }

  /** 5–7 references per image by distinct annotators of the pool; the first shaped by teacher quality. */
  private writeReferences(rng: Rng): void {
    const a = this.params.annotators;
    for (let i = 0; i < this.size; i++) {
      const r = rng.child(i);
      let count = 5;
      if (r.next() < a.extraReferenceRate) count += r.next() < a.extraReferenceRate ? 2 : 1;
      this.references.push(this.drawReferences(i, r, count));
    }
  }

  /**
   * Fresh references of item i, as the world would write them again: `count` distinct annotators of the
   * pool drawn from `rng`, the first shaped by the item's teacher quality (`writeReferences` draws them so).
   * Also what a retriever that knows the world but not the image's actual references scores against
   * (the informed ceiling, src/sim/caption/oracle.ts).
   */
  drawReferences(i: number, rng: Rng, count: number): string[] {
    const pool = this.params.annotators.pool;
    const writers = rng.sampleWithoutReplacement(pool, Math.min(count, pool));
    while (writers.length < count) writers.push(rng.int(pool));
    return writers.map((w, k) => this.writeCaption(rng, i, this.annotators[w], k === 0));
  }

  /** One annotator's caption of item i (the first reference shifted by the item's teacher quality). */
  private writeCaption(rng: Rng, i: number, who: Annotator, first: boolean): string {
    const a = this.params.annotators;
    const shift = first ? this.params.teacherSpread * this.teacher[i] : 0;
    const canonical = logistic(logit(who.canonical) + shift);
    const openerRate = logistic(logit(a.openerRate) - shift);
    const surface = (list: readonly { surfaces: readonly string[] }[], k: number) => {
      const u = rng.next();
      const register = u < canonical ? 0 : rng.next() < a.fancyRate ? 2 : 1;
      return list[k].surfaces[register];
    };
    const words: string[] = [];
    if (rng.next() < openerRate) words.push(OPENERS[rng.int(VLM_OPENER)]);
    words.push("a");
    if (rng.next() < who.attribute) words.push(surface(ATTRIBUTES, this.attributes[0][i]));
    words.push(surface(OBJECTS, this.objects[0][i]));
    if (rng.next() < who.pose) words.push(surface(POSES, this.pose[i]));
    const second = this.objects[1][i];
    const mentionSecond = second >= 0 && rng.next() < a.secondObject;
    const after = rng.next() < who.afterScene;
    const secondPhrase = () => `${CONNECTORS[rng.int(CONNECTORS.length)]} ${surface(OBJECTS, second)}`;
    if (mentionSecond && !after) words.push(secondPhrase());
    const scene = this.scene[i];
    const usual = SCENES[scene].preposition;
    words.push(PREPOSITIONS[rng.next() < a.prepositionVariation ? rng.int(PREPOSITIONS.length) : usual]);
    words.push(surface(SCENES, scene));
    if (mentionSecond && after) words.push(secondPhrase());
    if (rng.next() < a.tailRate) words.push(TAILS[rng.int(TAILS.length)]);
    let text = words.join(" ");
    if (rng.next() < a.capitalise) text = text[0].toUpperCase() + text.slice(1);
    if (rng.next() < a.period) text += ".";
    return text;
  }
}

interface Draft {
  scene: number;
  objects: number[];
  attributes: number[];
  pose: number;
  teacher: number;
  clarity: number[];
}

const logit = (p: number) => Math.log(Math.max(1e-9, p) / Math.max(1e-9, 1 - p));
const logistic = (x: number) => 1 / (1 + Math.exp(-x));
