import { type Command, Option } from "commander";
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

/** Registers `lever metric vqa`. */
export function register(program: Command): void {
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
