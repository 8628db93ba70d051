import { type Command, Option } from "commander";
import { CIDER_DF_MODES, type CiderDfMode } from "../metrics/caption/cider.js";
import {
  CaptionAnnotationsFileSchema,
  CaptionResultsFileSchema,
  readCaptionFile,
} from "../metrics/caption/coco-files.js";
import { CAPTION_METRICS, type CaptionEvaluation, evaluateCaptions } from "../metrics/caption/evaluate.js";
import { evaluateVqa, VQA_VARIANTS, type VqaEvaluation, type VqaVariant } from "../metrics/vqa.js";
import {
  readVqaFile,
  VqaAnnotationsFileSchema,
  VqaQuestionsFileSchema,
  VqaResultsFileSchema,
} from "../metrics/vqa-files.js";
import { LeverError } from "../util/errors.js";
import { group, printJson } from "./common.js";

const VARIANT_DESCRIPTIONS: Record<VqaVariant, string> = {
  official: "official (GT-Vision-Lab/VQA vqaEval.py a013f00: answers normalised only when the 10 GT answers disagree)",
  "always-normalize": "always-normalize (OpenFlamingo / Lever-Plus copy: GT and prediction always normalised)",
};

/** Registers `lever metric vqa` and `lever metric caption`. */
export function register(program: Command): void {
  registerVqa(program);
  registerCaption(program);
}

function registerVqa(program: Command): void {
  group(program, "metric", "score predictions with the official metrics")
    .command("vqa")
    .description("VQA accuracy of an official-format results file ([{question_id, answer}])")
    .requiredOption("--results <file>", "results JSON: [{question_id, answer}]")
    .requiredOption("--questions <file>", "official questions JSON ({questions: [...]})")
    .requiredOption("--annotations <file>", "official annotations JSON ({annotations: [...]})")
    .addOption(new Option("--variant <name>", "normalisation rule").choices(VQA_VARIANTS).default("official"))
    .option("--json", "print one JSON object (percent, 2 decimals, as the official tool)")
    .option("--require-all", "fail unless every question of the questions file has a result")
    .action(
      (opts: {
        results: string;
        questions: string;
        annotations: string;
        variant: VqaVariant;
        json?: boolean;
        requireAll?: boolean;
      }) => {
        const results = readVqaFile(opts.results, VqaResultsFileSchema);
        const questions = readVqaFile(opts.questions, VqaQuestionsFileSchema, "questions");
        const annotations = readVqaFile(opts.annotations, VqaAnnotationsFileSchema, "annotations");
        const evaluation = evaluateVqa(results, questions, annotations, {
          variant: opts.variant,
          files: { results: opts.results, questions: opts.questions, annotations: opts.annotations },
        });
        const scored = Object.keys(evaluation.perQuestion).length;
        const asked = new Set(questions.questions.map((q) => String(q.question_id))).size;
        if (scored < asked) {
          const message = `scored ${scored} of the ${asked} questions (${asked - scored} have no result in ${opts.results})`;
          if (opts.requireAll)
            throw new LeverError(`${message}; every question needs a result`, { file: opts.results });
          process.stderr.write(`warning: ${opts.questions}: ${message}; --require-all makes this an error\n`);
        }
        if (opts.json) {
          const { variant, overall, perAnswerType, perQuestionType, perQuestion } = evaluation;
          printJson({ variant, overall, perAnswerType, perQuestionType, perQuestion });
        } else {
          process.stdout.write(formatVqaReport(evaluation));
        }
      },
    );
}

function registerCaption(program: Command): void {
  group(program, "metric", "score predictions with the official metrics")
    .command("caption")
    .description("CIDEr-D, BLEU-1..4 and ROUGE-L of a COCO results file ([{image_id, caption}]), as coco-caption")
    .requiredOption("--results <file>", "results JSON: [{image_id, caption}]")
    .requiredOption(
      "--annotations <file>",
      "official captions JSON ({images: [...], annotations: [{image_id, caption, id}]})",
    )
    .addOption(
      new Option(
        "--df <mode>",
        "CIDEr-D document frequencies: corpus (the scored images' references, as coco-caption) or fixed (every image of --df-references)",
      )
        .choices(CIDER_DF_MODES)
        .default("corpus"),
    )
    .option(
      "--df-references <file>",
      "captions JSON whose images give the fixed document frequencies (default: --annotations)",
    )
    .option("--json", "print one JSON object: corpus and per-image scores on pycocoevalcap's scale (not ×100)")
    .action(
      (opts: { results: string; annotations: string; df: CiderDfMode; dfReferences?: string; json?: boolean }) => {
        if (opts.dfReferences !== undefined && opts.df !== "fixed")
          throw new LeverError("--df-references needs --df fixed (corpus frequencies come from the scored images)");
        const results = readCaptionFile(opts.results, CaptionResultsFileSchema);
        const annotations = readCaptionFile(opts.annotations, CaptionAnnotationsFileSchema, "annotations");
        const dfReferences =
          opts.dfReferences === undefined
            ? undefined
            : readCaptionFile(opts.dfReferences, CaptionAnnotationsFileSchema, "annotations");
        const evaluation = evaluateCaptions(results, annotations, {
          df: opts.df,
          dfReferences,
          files: { results: opts.results, annotations: opts.annotations },
        });
        if (opts.json) printJson({ scale: "pycocoevalcap (fractions; CIDEr-D up to 10)", ...evaluation });
        else process.stdout.write(formatCaptionReport(evaluation));
      },
    );
}

/** The corpus scores, ×100 as captioning papers print them (coco-caption itself prints the raw values). */
export function formatCaptionReport(evaluation: CaptionEvaluation): string {
  const df =
    evaluation.df === "corpus"
      ? "corpus (the scored images' references, as coco-caption)"
      : "fixed (every image of the reference file)";
  const lines = [
    `Images evaluated: ${Object.keys(evaluation.perImage).length}`,
    "Tokenizer: PTBTokenizer (CoreNLP 3.4.1 rules), lower-cased, pycocoevalcap's punctuation removed",
    `CIDEr-D document frequencies: ${df}`,
    "Scores ×100 (as papers print them; --json gives pycocoevalcap's raw values):",
    ...CAPTION_METRICS.map((metric) => `${metric}: ${(100 * evaluation.corpus[metric]).toFixed(2)}`),
    "",
  ];
  return lines.join("\n");
}

/** The official demo's report layout (vqaEvalDemo.py), preceded by the variant and the question count. */
export function formatVqaReport(evaluation: VqaEvaluation): string {
  const lines = [
    `Variant: ${VARIANT_DESCRIPTIONS[evaluation.variant]}`,
    `Questions evaluated: ${Object.keys(evaluation.perQuestion).length}`,
    "",
    `Overall Accuracy is: ${evaluation.overall.toFixed(2)}`,
    "",
    "Per Question Type Accuracy is the following:",
    ...Object.entries(evaluation.perQuestionType).map(([type, acc]) => `${type} : ${acc.toFixed(2)}`),
    "",
    "Per Answer Type Accuracy is the following:",
    ...Object.entries(evaluation.perAnswerType).map(([type, acc]) => `${type} : ${acc.toFixed(2)}`),
    "",
  ];
  return lines.join("\n");
}
