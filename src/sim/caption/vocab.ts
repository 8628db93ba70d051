/**
 * The caption world's vocabulary (docs/simulator.md, "Caption world"): scenes, objects, attributes and
 * poses, each a latent *concept* with three surface words — [canonical COCO word, an annotator's
 * alternative, the simulated VLM's fancy word] — and the function phrases captions are built from
 * (openers, connectors, prepositions, chatty tails). No surface word is shared between two concepts or
 * two phrase kinds, so a caption's words say which concept (and which register) each one names.
 */

/** A latent concept and its surfaces: [canonical, alternative, fancy]. */
export interface ConceptSpec {
  surfaces: readonly [string, string, string];
  /** The concept perception confuses it with (index in the same list). */
  partner: number;
}

/** Object categories: people, animals, vehicles, food, furniture (what verbs they take). */
export const OBJECT_KINDS = ["person", "animal", "vehicle", "food", "furniture"] as const;

export interface ObjectSpec extends ConceptSpec {
  kind: (typeof OBJECT_KINDS)[number];
}

const o = (kind: ObjectSpec["kind"], partner: number, ...surfaces: [string, string, string]): ObjectSpec => ({
  kind,
  partner,
  surfaces,
});

export const OBJECTS: readonly ObjectSpec[] = [
  o("animal", 1, "dog", "puppy", "canine"), // 0
  o("animal", 0, "cat", "kitten", "feline"), // 1
  o("animal", 4, "horse", "pony", "equine"), // 2
  o("animal", 8, "sheep", "lamb", "ovine"), // 3
  o("animal", 2, "cow", "cattle", "bovine"), // 4
  o("animal", 0, "bear", "cub", "ursine"), // 5
  o("animal", 2, "giraffe", "calf", "ruminant"), // 6
  o("animal", 1, "bird", "seagull", "avian"), // 7
  o("person", 9, "man", "guy", "gentleman"), // 8
  o("person", 8, "woman", "lady", "female"), // 9
  o("person", 11, "boy", "kid", "youngster"), // 10
  o("person", 10, "girl", "child", "lass"), // 11
  o("vehicle", 13, "car", "vehicle", "automobile"), // 12
  o("vehicle", 12, "truck", "pickup", "lorry"), // 13
  o("vehicle", 15, "bus", "coach", "omnibus"), // 14
  o("vehicle", 14, "train", "locomotive", "railcar"), // 15
  o("vehicle", 12, "bicycle", "bike", "cycle"), // 16
  o("food", 18, "pizza", "pie", "flatbread"), // 17
  o("food", 17, "sandwich", "sub", "panini"), // 18
  o("food", 17, "cake", "dessert", "pastry"), // 19
  o("furniture", 21, "couch", "sofa", "settee"), // 20
  o("furniture", 20, "bed", "mattress", "bedstead"), // 21
  o("furniture", 23, "table", "desk", "tabletop"), // 22
  o("furniture", 22, "laptop", "computer", "notebook"), // 23
];

const c = (partner: number, ...surfaces: [string, string, string]): ConceptSpec => ({ partner, surfaces });

export const ATTRIBUTES: readonly ConceptSpec[] = [
  c(7, "white", "pale", "ivory"), // 0
  c(2, "black", "dark", "ebony"), // 1
  c(1, "brown", "tan", "chestnut"), // 2
  c(4, "red", "maroon", "scarlet"), // 3
  c(3, "blue", "navy", "azure"), // 4
  c(6, "green", "lime", "emerald"), // 5
  c(5, "yellow", "golden", "amber"), // 6
  c(0, "gray", "grey", "silver"), // 7
  c(9, "small", "little", "tiny"), // 8
  c(8, "large", "big", "enormous"), // 9
];

export const POSES: readonly ConceptSpec[] = [
  c(1, "sitting", "seated", "perched"), // 0
  c(0, "standing", "posing", "stationed"), // 1
  c(0, "laying", "lying", "reclining"), // 2
  c(1, "walking", "strolling", "ambling"), // 3
  c(1, "parked", "stopped", "stationary"), // 4
  c(3, "eating", "grazing", "feeding"), // 5
  c(3, "playing", "running", "frolicking"), // 6
];

/** Which poses an object kind takes (index into POSES). */
export const POSES_OF_KIND: Record<ObjectSpec["kind"], readonly number[]> = {
  person: [0, 1, 3, 6, 5],
  animal: [0, 1, 2, 3, 5, 6],
  vehicle: [4, 0],
  food: [0],
  furniture: [0],
};

export interface SceneSpec extends ConceptSpec {
  /** The preposition phrase (index into PREPOSITIONS) COCO annotators mostly use with it. */
  preposition: number;
}

const s = (preposition: number, partner: number, ...surfaces: [string, string, string]): SceneSpec => ({
  preposition,
  partner,
  surfaces,
});

export const SCENES: readonly SceneSpec[] = [
  s(0, 1, "beach", "shore", "seaside"), // 0
  s(0, 6, "street", "road", "avenue"), // 1
  s(1, 3, "field", "grass", "meadow"), // 2
  s(1, 2, "park", "yard", "greenery"), // 3
  s(1, 5, "kitchen", "counter", "galley"), // 4
  s(2, 4, "living room", "lounge", "sitting room"), // 5
  s(2, 1, "city", "town", "metropolis"), // 6
  s(2, 0, "snow", "slope", "snowscape"), // 7
  s(3, 2, "zoo", "enclosure", "menagerie"), // 8
  s(0, 8, "dirt", "sand", "terrain"), // 9
];

/** Preposition phrases before the scene ("on the beach"). */
export const PREPOSITIONS = ["on the", "in a", "in the", "at the", "near the"] as const;

/** Openers: the first three appear in COCO references; "the image shows" is the chat VLM's. */
export const OPENERS = ["there is", "this is", "a picture of", "the image shows", "in this image we can see"] as const;
/** The simulated VLM's zero-shot opener (index into OPENERS). */
export const VLM_OPENER = 3;

/** Connectors before a second object. */
export const CONNECTORS = ["and a", "with a", "next to a"] as const;

/** Chatty tails a chat VLM appends and COCO annotators almost never write. */
export const TAILS = ["in the background", "on a sunny day", "during the daytime"] as const;
/** The simulated VLM's zero-shot tail (index into TAILS). */
export const VLM_TAIL = 0;

/** Register of a surface: canonical COCO word, annotator alternative, the VLM's fancy word. */
export const REGISTERS = ["canonical", "alternative", "fancy"] as const;
export type Register = 0 | 1 | 2;
