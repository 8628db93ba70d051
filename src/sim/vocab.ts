/**
 * Fixed vocabularies of the synthetic world: question types (VQAv2 `question_type` strings with their
 * answer type, question template and answer vocabulary), object names for concepts, and the surface
 * variants annotators use (number words, synonyms) so the official metric's normalisation matters.
 */

export type AnswerType = "yes/no" | "number" | "other";

export interface QuestionTypeSpec {
  /** VQAv2-style `question_type` (the question's first words). */
  questionType: string;
  answerType: AnswerType;
  /** Question text for an object name and a per-question variation index. */
  template: (object: string, variation: number) => string;
  /** Answer vocabulary shared by every concept, or "per-concept" (each concept draws its own subset). */
  vocab: readonly string[] | "per-concept";
  /** How many answers a (concept, type) cell concentrates its probability on. */
  cellSupport: number;
  /** Relative frequency of the type among questions (VQAv2: yes/no ≈ 38 %, number ≈ 12 %, other ≈ 50 %). */
  frequency: number;
}

const ADJECTIVES = ["open", "clean", "old", "wet", "empty", "large", "moving", "new", "full", "broken"];
const NUMBERS = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"];

export const QUESTION_TYPES: readonly QuestionTypeSpec[] = [
  {
    questionType: "what color is the",
    answerType: "other",
    template: (o) => `What color is the ${o}?`,
    vocab: ["white", "black", "red", "blue", "green", "yellow", "brown", "gray", "orange", "pink", "purple", "silver"],
    cellSupport: 4,
    frequency: 0.14,
  },
  {
    questionType: "is the",
    answerType: "yes/no",
    template: (o, v) => `Is the ${o} ${ADJECTIVES[v % ADJECTIVES.length]}?`,
    vocab: ["yes", "no"],
    cellSupport: 2,
    frequency: 0.2,
  },
  {
    questionType: "how many",
    answerType: "number",
    template: (o) => `How many ${o} are there?`,
    vocab: NUMBERS,
    cellSupport: 4,
    frequency: 0.12,
  },
  {
    questionType: "what is the",
    answerType: "other",
    template: (o) => `What is the ${o} made of?`,
    vocab: [
      "wood",
      "metal",
      "plastic",
      "glass",
      "stone",
      "paper",
      "cloth",
      "leather",
      "ceramic",
      "rubber",
      "concrete",
      "brick",
    ],
    cellSupport: 4,
    frequency: 0.09,
  },
  {
    questionType: "where is the",
    answerType: "other",
    template: (o) => `Where is the ${o}?`,
    vocab: [
      "kitchen",
      "street",
      "park",
      "beach",
      "table",
      "field",
      "living room",
      "airport",
      "office",
      "bathroom",
      "zoo",
      "sky",
    ],
    cellSupport: 4,
    frequency: 0.09,
  },
  {
    questionType: "is there a",
    answerType: "yes/no",
    template: (o) => `Is there a ${o} in the picture?`,
    vocab: ["yes", "no"],
    cellSupport: 2,
    frequency: 0.14,
  },
  {
    questionType: "what kind of",
    answerType: "other",
    template: (o) => `What kind of ${o} is this?`,
    vocab: "per-concept",
    cellSupport: 4,
    frequency: 0.1,
  },
  {
    questionType: "what sport is",
    answerType: "other",
    template: (o) => `What sport is played with the ${o}?`,
    vocab: [
      "tennis",
      "baseball",
      "soccer",
      "skiing",
      "surfing",
      "frisbee",
      "skateboarding",
      "snowboarding",
      "golf",
      "basketball",
    ],
    cellSupport: 3,
    frequency: 0.06,
  },
  {
    questionType: "what is the man doing",
    answerType: "other",
    template: (o) => `What is the man doing with the ${o}?`,
    vocab: [
      "eating",
      "sitting",
      "standing",
      "walking",
      "riding",
      "playing",
      "talking",
      "sleeping",
      "reading",
      "cooking",
      "running",
      "waiting",
    ],
    cellSupport: 4,
    frequency: 0.06,
  },
];

/** Answers of "per-concept" types come from this list; each concept owns `PER_CONCEPT_VOCAB` of them. */
export const KIND_WORDS: readonly string[] = [
  "wild",
  "domestic",
  "electric",
  "vintage",
  "modern",
  "wooden",
  "plastic toy",
  "double decker",
  "passenger",
  "cargo",
  "sports",
  "city",
  "mountain",
  "racing",
  "pepperoni",
  "cheese",
  "vegetable",
  "chocolate",
  "fruit",
  "glazed",
  "teddy",
  "polar",
  "grizzly",
  "brown",
  "commercial",
  "military",
  "fishing",
  "sail",
  "steam",
  "diesel",
  "leather",
  "folding",
  "office",
  "rocking",
  "dining",
  "flat screen",
  "laptop",
  "desktop",
  "smart",
  "flip",
  "digital",
  "analog",
  "grandfather",
  "wall",
  "alarm",
  "chef",
  "pocket",
  "butter",
  "bread",
  "table",
  "ceramic",
  "glass",
  "paper",
  "stuffed",
  "persian",
  "siamese",
  "tabby",
  "labrador",
  "poodle",
  "husky",
];
export const PER_CONCEPT_VOCAB = 6;

/** The 80 COCO category names; concepts beyond 80 get generated names. */
const OBJECTS = [
  "person",
  "bicycle",
  "car",
  "motorcycle",
  "airplane",
  "bus",
  "train",
  "truck",
  "boat",
  "traffic light",
  "fire hydrant",
  "stop sign",
  "parking meter",
  "bench",
  "bird",
  "cat",
  "dog",
  "horse",
  "sheep",
  "cow",
  "elephant",
  "bear",
  "zebra",
  "giraffe",
  "backpack",
  "umbrella",
  "handbag",
  "tie",
  "suitcase",
  "frisbee",
  "skis",
  "snowboard",
  "sports ball",
  "kite",
  "baseball bat",
  "baseball glove",
  "skateboard",
  "surfboard",
  "tennis racket",
  "bottle",
  "wine glass",
  "cup",
  "fork",
  "knife",
  "spoon",
  "bowl",
  "banana",
  "apple",
  "sandwich",
  "orange",
  "broccoli",
  "carrot",
  "hot dog",
  "pizza",
  "donut",
  "cake",
  "chair",
  "couch",
  "potted plant",
  "bed",
  "dining table",
  "toilet",
  "tv",
  "laptop",
  "mouse",
  "remote",
  "keyboard",
  "cell phone",
  "microwave",
  "oven",
  "toaster",
  "sink",
  "refrigerator",
  "book",
  "clock",
  "vase",
  "scissors",
  "teddy bear",
  "hair drier",
  "toothbrush",
];
const SYLLABLES = ["ka", "lo", "mi", "ren", "to", "sa", "vu", "ne", "di", "pa", "zor", "qui"];

/** A readable, unique object name for concept `c`. */
export function conceptName(c: number): string {
  if (c < OBJECTS.length) return OBJECTS[c];
  let n = c - OBJECTS.length;
  let name = "";
  do {
    name += SYLLABLES[n % SYLLABLES.length];
    n = Math.floor(n / SYLLABLES.length);
  } while (n > 0);
  return `${name}tron`;
}

const NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];

/** Words annotators use instead of the canonical answer; they normalise to a different string. */
export const SYNONYMS: Readonly<Record<string, string>> = {
  gray: "grey",
  soccer: "football",
  "living room": "lounge",
  sitting: "resting",
  cloth: "fabric",
  "flat screen": "flatscreen",
  street: "road",
};

/**
 * Surface forms of the same answer that the official normalisation maps back to the canonical
 * string (capitals, number words, articles, a trailing period) — the "case variants" of the brief.
 */
export function normalisingVariants(canonical: string, answerType: AnswerType): string[] {
  const out = [canonical[0].toUpperCase() + canonical.slice(1), `${canonical}.`];
  if (answerType === "number") {
    const n = Number(canonical);
    if (Number.isInteger(n) && n >= 0 && n < NUMBER_WORDS.length) out.push(NUMBER_WORDS[n], NUMBER_WORDS[n]);
  } else if (answerType === "other") {
    out.push(`the ${canonical}`, `a ${canonical}`);
  }
  return out;
}
