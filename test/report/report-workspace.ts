/**
 * A small hand-made workspace for report tests: a query dataset (one question carries HTML; questions
 * 100–101 are yes/no, 102–103 number, the rest other), an index dataset, one evaluation run (random and
 * topk-image at 1 and 2 shots, one failed call; its stage stored a summary counting 30 VLM calls and 2
 * cache hits) and one training run with per-step and per-epoch metrics and a stored health.json.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HEALTH_FILE, healthFileContent } from "../../src/data/health-file.js";
import type { VqaItem } from "../../src/data/item.js";
import type { PredictionRow } from "../../src/store/types.js";
import { Workspace } from "../../src/store/workspace.js";

export const HOSTILE_QUESTION = '<script>alert("x")</script> what is <b>this</b>?';

function item(questionId: string, imageId: string, question: string, answer: string, answerType = "other"): VqaItem {
  return {
    questionId,
    imageId,
    question,
    answers: Array.from({ length: 10 }, (_, i) => ({ answer: i < 7 ? answer : "other" })),
    answer,
    questionType: "what",
    answerType,
    imagePath: null,
  };
}

export interface ReportWorkspace {
  dir: string;
  evalRun: string;
  trainRun: string;
}

/** Accuracies per retriever and shot over the 8 query questions (null = failed call). */
export const ACCURACIES: Record<string, Record<number, (number | null)[]>> = {
  random: { 1: [0, 1, 0, 0, 1, 0, 0, 0], 2: [0, 1, 0, 0.6, 1, 0, 0, 0] },
  "topk-image": { 1: [1, 1, 0, 1, 1, 0, 1, null], 2: [1, 1, 1, 1, 1, 0, 1, 0.3] },
};

export function reportWorkspace(): ReportWorkspace {
  const dir = join(mkdtempSync(join(tmpdir(), "lever-report-")), "ws");
  const ws = Workspace.open(dir);
  try {
    const queries = Array.from({ length: 8 }, (_, i) =>
      item(
        String(100 + i),
        `img${Math.floor(i / 2)}`,
        i === 0 ? HOSTILE_QUESTION : `question ${i}?`,
        `a${i}`,
        ["yes/no", "yes/no", "number", "number"][i] ?? "other",
      ),
    );
    const index = Array.from({ length: 10 }, (_, i) =>
      item(String(i + 1), `ix${i}`, `index question ${i}?`, `ans${i}`),
    );
    const q = ws.putDataset({ name: "q", split: "val", source: "synth", files: [] }, queries);
    ws.putDataset({ name: "ix", split: "train", source: "synth", files: [] }, index);

    const evalRun = ws.createRun({
      kind: "eval",
      config: {
        format: "lever.eval/1",
        dataset: { name: "q", items: q.itemsHash },
        index: { name: "ix" },
        queries: "all",
      },
      seed: 0,
    });
    const rows: PredictionRow[] = [];
    for (const [retriever, byShot] of Object.entries(ACCURACIES))
      for (const [shot, accuracies] of Object.entries(byShot))
        for (const [i, accuracy] of accuracies.entries())
          rows.push({
            runId: evalRun,
            retriever,
            shot: Number(shot),
            questionId: String(100 + i),
            demonstrations: Array.from({ length: Number(shot) }, (_, k) =>
              String(retriever === "random" ? ((i + k) % 10) + 1 : ((i + 2 * k) % 10) + 1),
            ),
            promptHash: "h",
            rawAnswer: accuracy === null ? null : `<i>raw ${i}</i>`,
            answer: accuracy === null ? null : accuracy === 1 ? `a${i}` : "<wrong>",
            accuracy,
            failure: accuracy === null ? "HTTP 500 <html>" : null,
          });
    ws.putPredictions(rows);
    ws.beginStage(evalRun, "eval");
    const summary = ws.writeArtifact(
      `eval/${evalRun}/summary-000000000000.json`,
      JSON.stringify({ format: "lever.eval-summary/2", vlm: { calls: 30, cacheHits: 2 } }),
    );
    ws.completeStage(evalRun, "eval", [summary]);
    ws.finishRun(evalRun, "done");

    const trainRun = ws.createRun({
      kind: "sft",
      config: { stage: "sft", dataset: "ix", lr: 0.001 },
      seed: 42,
      name: "sft-a",
    });
    ws.beginStage(trainRun, "sft");
    ws.logMetrics(
      Array.from({ length: 20 }, (_, s) => [
        { runId: trainRun, stage: "sft", step: s, epoch: Math.floor(s / 10), name: "loss", value: 2 / (s + 1) },
        { runId: trainRun, stage: "sft", step: s, epoch: Math.floor(s / 10), name: "gradNorm", value: 1 + (s % 3) },
      ]).flat(),
    );
    ws.logMetrics(
      [0, 1].map((epoch) => ({ runId: trainRun, stage: "sft", epoch, name: "epoch.valLoss", value: 1.5 - epoch / 4 })),
    );
    // A stage summary (no step, no epoch), as data generation logs them; logged again by a resumed stage.
    ws.logMetrics([{ runId: trainRun, stage: "sft", name: "vlm.calls", value: 645 }]);
    ws.logMetrics([{ runId: trainRun, stage: "sft", name: "vlm.calls", value: 1290 }]);
    const health = ws.writeArtifact(
      `runs/${trainRun}/${HEALTH_FILE}`,
      healthFileContent([
        { epoch: 1, code: "low-advantage-std", message: "advantage std 0.006 < 0.01: almost no learning signal" },
      ]),
    );
    ws.completeStage(trainRun, "sft", [health]);
    ws.finishRun(trainRun, "done");
    return { dir, evalRun, trainRun };
  } finally {
    ws.close();
  }
}
