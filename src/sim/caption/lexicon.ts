/**
 * Words and phrases of the caption world, and how the simulated VLM reads a caption. A caption is
 * lower-cased and split into words with punctuation dropped (as the PTB tokenizer does for CIDEr); a
 * word outside the lexicon gets id −1. Every phrase the grammar can produce (concept surfaces, openers,
 * connectors, prepositions, tails, the article "a", and the empty phrase) has an id; `parseCaption`
 * reads a caption left to right by longest phrase match and says what it shows: opener, tail, which
 * concepts it names in which role and register, where its second object is, its preposition.
 */
import {
  ATTRIBUTES,
  CONNECTORS,
  type ConceptSpec,
  OBJECTS,
  OPENERS,
  POSES,
  PREPOSITIONS,
  type Register,
  SCENES,
  TAILS,
} from "./vocab.js";

export const PHRASE_KINDS = [
  "empty",
  "article",
  "opener",
  "connector",
  "preposition",
  "tail",
  "scene",
  "object",
  "attribute",
  "pose",
] as const;
export type PhraseKind = (typeof PHRASE_KINDS)[number];
/** The concept kinds, in the order the world's per-kind arrays use. */
export const CONCEPT_KINDS = ["scene", "object", "attribute", "pose"] as const;
export type ConceptKind = (typeof CONCEPT_KINDS)[number];
export const CONCEPT_SPECS: Record<ConceptKind, readonly ConceptSpec[]> = {
  scene: SCENES,
  object: OBJECTS,
  attribute: ATTRIBUTES,
  pose: POSES,
};

export interface Phrase {
  kind: PhraseKind;
  /** Index in the kind's list (concept index for concept kinds, else the function phrase's index). */
  index: number;
  /** Surface register for concept kinds (0 otherwise). */
  register: Register;
  words: Int32Array;
  text: string;
}

export const EMPTY_PHRASE = 0;

export class Lexicon {
  readonly words: string[] = [];
  readonly phrases: Phrase[] = [];
  private readonly wordIds = new Map<string, number>();
  /** Phrase ids by their first word id. */
  private readonly byFirst = new Map<number, number[]>();
  private readonly ids = new Map<string, number>();

  constructor() {
    this.add("empty", 0, 0, "");
    this.add("article", 0, 0, "a");
    const functions = [
      ["opener", OPENERS],
      ["connector", CONNECTORS],
      ["preposition", PREPOSITIONS],
      ["tail", TAILS],
    ] as const;
    for (const [kind, texts] of functions) for (let i = 0; i < texts.length; i++) this.add(kind, i, 0, texts[i]);
    for (const kind of CONCEPT_KINDS)
      for (let i = 0; i < CONCEPT_SPECS[kind].length; i++)
        for (let r = 0; r < 3; r++) this.add(kind, i, r as Register, CONCEPT_SPECS[kind][i].surfaces[r]);
  }

  /** Id of the phrase of a kind, index and register (register 0 for function phrases). */
  phraseId(kind: PhraseKind, index: number, register: Register = 0): number {
    const id = this.ids.get(`${kind}|${index}|${register}`);
    if (id === undefined) throw new Error(`no phrase ${kind} ${index} ${register}`);
    return id;
  }

  /** Lower-cased words without punctuation, as ids (−1 for words outside the lexicon). */
  tokenize(text: string): Int32Array {
    const words = normaliseWords(text);
    return Int32Array.from(words, (w) => this.wordIds.get(w) ?? -1);
  }

  /** Phrase ids that start with word id `w`, longest first. */
  startingWith(w: number): readonly number[] {
    return this.byFirst.get(w) ?? [];
  }

  /** Whether phrase `id` occurs in `words` at `pos`. */
  matches(id: number, words: Int32Array, pos: number): boolean {
    const p = this.phrases[id].words;
    if (pos + p.length > words.length) return false;
    for (let k = 0; k < p.length; k++) if (words[pos + k] !== p[k]) return false;
    return true;
  }

  private add(kind: PhraseKind, index: number, register: Register, text: string): void {
    const words = Int32Array.from(normaliseWords(text), (w) => this.wordId(w));
    const id = this.phrases.length;
    this.phrases.push({ kind, index, register, words, text });
    this.ids.set(`${kind}|${index}|${register}`, id);
    if (words.length === 0) return;
    const list = this.byFirst.get(words[0]) ?? [];
    list.push(id);
    list.sort((a, b) => this.phrases[b].words.length - this.phrases[a].words.length);
    this.byFirst.set(words[0], list);
  }

  private wordId(word: string): number {
    let id = this.wordIds.get(word);
    if (id === undefined) {
      id = this.words.length;
      this.words.push(word);
      this.wordIds.set(word, id);
    }
    return id;
  }
}

/** Lower case, punctuation dropped, split on whitespace. */
export function normaliseWords(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9\s]/g, " ")
    .split(/\s+/)
    .filter((w) => w !== "");
}

/** A concept a caption names: its kind, index, register, and the order it came in. */
export interface Mention {
  kind: ConceptKind;
  concept: number;
  register: Register;
}

/** What a caption shows, as the simulated VLM reads it. */
export interface ParsedCaption {
  words: Int32Array;
  /** Opener index or −1. */
  opener: number;
  /** Tail index or −1. */
  tail: number;
  /** Connector index before a second object, or −1. */
  connector: number;
  /** Preposition index or −1. */
  preposition: number;
  /** An attribute right before the first object. */
  attribute: boolean;
  /** A pose right after the first object. */
  pose: boolean;
  /** Second object: 0 none, 1 before the scene, 2 after it. */
  placement: 0 | 1 | 2;
  mentions: Mention[];
  /** Share of the mentions in each register (all 0 without mentions). */
  registerShare: [number, number, number];
}

/** Reads a caption by longest phrase match, left to right (unknown words are skipped). */
export function parseCaption(lexicon: Lexicon, text: string): ParsedCaption {
  const words = lexicon.tokenize(text);
  const out: ParsedCaption = {
    words,
    opener: -1,
    tail: -1,
    connector: -1,
    preposition: -1,
    attribute: false,
    pose: false,
    placement: 0,
    mentions: [],
    registerShare: [0, 0, 0],
  };
  let objects = 0;
  let sceneSeen = false;
  let previous: PhraseKind = "empty";
  let pos = 0;
  while (pos < words.length) {
    const id = lexicon.startingWith(words[pos]).find((p) => lexicon.matches(p, words, pos));
    if (id === undefined) {
      pos++;
      previous = "empty";
      continue;
    }
    const phrase = lexicon.phrases[id];
    pos += phrase.words.length;
    readPhrase(out, phrase, previous, objects, sceneSeen);
    if (phrase.kind === "object") objects++;
    if (phrase.kind === "scene") sceneSeen = true;
    previous = phrase.kind;
  }
  const n = out.mentions.length;
  for (const m of out.mentions) out.registerShare[m.register] += 1 / n;
  return out;
}

function readPhrase(
  out: ParsedCaption,
  phrase: Phrase,
  previous: PhraseKind,
  objects: number,
  sceneSeen: boolean,
): void {
  switch (phrase.kind) {
    case "opener":
      if (out.opener < 0 && objects === 0) out.opener = phrase.index;
      return;
    case "tail":
      out.tail = phrase.index;
      return;
    case "connector":
      if (out.connector < 0) out.connector = phrase.index;
      return;
    case "preposition":
      if (out.preposition < 0) out.preposition = phrase.index;
      return;
    case "article":
    case "empty":
      return;
    default:
      break;
  }
  const kind = phrase.kind as ConceptKind;
  out.mentions.push({ kind, concept: phrase.index, register: phrase.register });
  if (kind === "attribute" && objects === 0) out.attribute = true;
  if (kind === "pose" && objects === 1 && previous === "object") out.pose = true;
  if (kind === "object" && objects === 1 && out.placement === 0) out.placement = sceneSeen ? 2 : 1;
}
