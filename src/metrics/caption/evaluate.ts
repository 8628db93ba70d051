/**
 * coco-caption's evaluation of a results file against an annotations file (salaniz/pycocoevalcap at
 * ad63453, eval.py `COCOEvalCap.evaluate` without METEOR and SPICE, which need Java): every caption
 * through the PTB tokenizer (ptb-tokenize.ts), then BLEU-1..4, ROUGE-L and CIDEr-D on the tokens.
 *
 * The images scored are those of the results file, in the annotations file's `images` order (what
 * `cocoEval.params['image_id'] = cocoRes.getImgIds()` gives); their references are every annotation
 * with that image_id, in file order. Refused, each as one LeverError naming file, record and field:
 * a result for an image twice, for an image not in the annotations' `images`, or for an image without
 * a reference caption; no results at all.
 */
import { LeverError } from "../../util/errors.js";
import { bleuScores } from "./bleu.js";
import { type CiderDfMode, ciderScores, type DocumentFrequency, documentFrequency } from "./cider.js";
import type { CaptionAnnotationsFile, CaptionResult } from "./coco-files.js";
import { tokenizeCaption } from "./ptb-tokenize.js";
import { rougeScores } from "./rouge.js";
import type { CaptionImage } from "./types.js";

export const CAPTION_METRICS = ["CIDEr-D", "BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "ROUGE-L"] as const;
export type CaptionMetric = (typeof CAPTION_METRICS)[number];
export type CaptionScores = Record<CaptionMetric, number>;

export interface CaptionEvaluation {
  df: CiderDfMode;
  /** Corpus scores on pycocoevalcap's scale (BLEU, ROUGE-L in [0, 1]; CIDEr-D in [0, 10]). */
  corpus: CaptionScores;
  /** image_id → that image's scores, same scale. */
  perImage: Record<string, CaptionScores>;
}

export interface EvaluateCaptionsOptions {
  /** corpus: df from the scored images' references; fixed: from `dfReferences` (default: every image of the annotations). */
  df?: CiderDfMode;
  dfReferences?: CaptionAnnotationsFile;
  files?: { results?: string; annotations?: string };
}

/** image_id → its reference captions, in annotation-file order. */
function referencesById(annotations: CaptionAnnotationsFile): Map<string, string[]> {
  const byId = new Map<string, string[]>();
  for (const annotation of annotations.annotations) {
    const id = String(annotation.image_id);
    const list = byId.get(id);
    if (list) list.push(annotation.caption);
    else byId.set(id, [annotation.caption]);
  }
  return byId;
}

/** The results as a map image_id → caption, after the checks the header lists. */
function checkedResults(
  results: readonly CaptionResult[],
  annotations: CaptionAnnotationsFile,
  references: Map<string, string[]>,
  options: EvaluateCaptionsOptions,
): Map<string, string> {
  const resultsFile = options.files?.results ?? "results";
  const annotationsFile = options.files?.annotations ?? "annotations";
  const imageIds = new Set(annotations.images.map((image) => String(image.id)));
  const captions = new Map<string, string>();
  results.forEach((result, index) => {
    const id = String(result.image_id);
    const where = { file: resultsFile, record: `#${index} (image_id ${id})`, field: "image_id" };
    if (!imageIds.has(id))
      throw new LeverError(`image is not in the images of the annotations file ${annotationsFile}`, where);
    if (!references.has(id))
      throw new LeverError(`image has no reference caption in the annotations file ${annotationsFile}`, where);
    if (captions.has(id)) throw new LeverError("duplicate result for this image", where);
    captions.set(id, result.caption);
  });
  if (captions.size === 0) throw new LeverError("no results to evaluate", { file: resultsFile });
  return captions;
}

/** Document frequencies of every image of a reference file, tokenized as the evaluation is. */
function fixedFrequencies(referenceFile: CaptionAnnotationsFile): DocumentFrequency {
  return documentFrequency(
    [...referencesById(referenceFile).values()].map((captions) => captions.map(tokenizeCaption)),
  );
}

/** Scores a COCO results file against its annotations as coco-caption does (see the header). */
export function evaluateCaptions(
  results: readonly CaptionResult[],
  annotations: CaptionAnnotationsFile,
  options: EvaluateCaptionsOptions = {},
): CaptionEvaluation {
  const df = options.df ?? "corpus";
  const references = referencesById(annotations);
  const captions = checkedResults(results, annotations, references, options);
  const ids = [...new Set(annotations.images.map((image) => String(image.id)))].filter((id) => captions.has(id));
  const images: CaptionImage[] = ids.map((id) => ({
    hypothesis: tokenizeCaption(captions.get(id) ?? ""),
    references: (references.get(id) ?? []).map(tokenizeCaption),
  }));
  const bleu = bleuScores(images);
  const rouge = rougeScores(images);
  const cider = ciderScores(images, df === "fixed" ? fixedFrequencies(options.dfReferences ?? annotations) : undefined);
  const scoresOf = (i: number | null): CaptionScores => ({
    "CIDEr-D": i === null ? cider.corpus : cider.perImage[i],
    "BLEU-1": i === null ? bleu.corpus[0] : bleu.perImage[0][i],
    "BLEU-2": i === null ? bleu.corpus[1] : bleu.perImage[1][i],
    "BLEU-3": i === null ? bleu.corpus[2] : bleu.perImage[2][i],
    "BLEU-4": i === null ? bleu.corpus[3] : bleu.perImage[3][i],
    "ROUGE-L": i === null ? rouge.corpus : rouge.perImage[i],
  });
  const perImage: Record<string, CaptionScores> = {};
  ids.forEach((id, i) => {
    perImage[id] = scoresOf(i);
  });
  return { df, corpus: scoresOf(null), perImage };
}
