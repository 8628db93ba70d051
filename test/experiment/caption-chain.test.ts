/**
 * The caption chain end to end on the simulator: examples/caption-demo.yaml with every stage shrunk
 * (a tiny caption world), so the example itself is what runs. Every stage runs on caption data, the
 * evaluation scores CIDEr-D (the mean of its stored per-image scores is pycocoevalcap's corpus number
 * of the same captions), the comparison uses the sign-flip test, and the report reads in CIDEr.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { execute } from "../../src/experiment/execute.js";
import { loadExperiment } from "../../src/experiment/load.js";
import { plan } from "../../src/experiment/plan.js";
import { ciderScores } from "../../src/metrics/caption/cider.js";
import { tokenizeCaption } from "../../src/metrics/caption/ptb-tokenize.js";
import { Workspace } from "../../src/store/workspace.js";
import { experimentFiles } from "./helpers.js";

const { dir } = experimentFiles("lever-caption-chain-");
const example = new URL("../../examples/caption-demo.yaml", import.meta.url).pathname;
const TINY = [
  "data.captionSynth.trainItems=120",
  "data.captionSynth.valItems=40",
  "data.captionSynth.embedding.dim=16",
  "pools.k=8",
  "beams.anchors=first:20",
  "beams.shots=2",
  "beams.beamSize=2",
  "beams.budget=4",
  "sft.model.hidden=16",
  "sft.optim.epochs=1",
  "rollouts.queries=first:24",
  "rollouts.shots=2",
  "rce.optim.epochs=1",
  "grpo.optim.epochs=1",
  "online.optim.epochs=1",
  "online.online.queries=first:16",
  "online.online.samples=2",
  "eval.shots=[1, 2]",
  "eval.baselines=[zero, random, topk-image, topk-text, topk-joint, consensus, informed, oracle]",
  "eval.resamples=200",
  "compare.resamples=200",
  "guard.queries=first:20",
];

describe("lever run examples/caption-demo.yaml (a tiny caption world, every stage)", () => {
  it("trains and evaluates on captions, scores CIDEr-D as pycocoevalcap, compares by sign-flip, reports in CIDEr", async () => {
    const ws = Workspace.open(join(dir, "ws"));
    try {
      const lines: string[] = [];
      const report = await execute(ws, plan(loadExperiment(example, TINY)), {
        log: (l) => lines.push(l),
        progress: null,
      });
      for (const stage of ["data", "pools", "beams", "sft", "rollouts", "rce", "grpo", "online"] as const)
        expect(report.counts[stage].run, stage).toBe(1);
      expect(report.comparison).toContain("consensus");
      expect(report.comparison).toContain("selector:online");
      expect(report.comparison).toContain("(flip)");
      expect(report.comparison).toContain("paired sign-flip test");
      expect(report.comparison).not.toContain("McNemar:");
      // The caption simulator's informed ceiling and oracle are references (outside the Holm family).
      expect(report.comparison).toMatch(/^oracle +1 .* ref/m);
      expect(report.comparison).toMatch(/^informed +1 .* ref/m);

      // The stored per-image scores are pycocoevalcap's corpus-mode CIDEr-D of the stored captions.
      const [evalRun] = report.evalRuns;
      const config = ws.getRun(evalRun)?.config as { dataset: { name: string } };
      const items = new Map(ws.loadItems(config.dataset.name).map((i) => [i.questionId, i]));
      const rows = ws
        .getPredictions(evalRun, { retriever: "topk-image", shot: 1 })
        .sort((a, b) => a.questionId.localeCompare(b.questionId));
      expect(rows.length).toBe(40);
      const images = rows.map((r) => ({
        hypothesis: tokenizeCaption(r.answer ?? ""),
        references: items.get(r.questionId)!.answers.map((a) => tokenizeCaption(a.answer)),
      }));
      const { perImage } = ciderScores(images);
      for (const [k, r] of rows.entries()) expect(r.accuracy).toBe(perImage[k]);
      const mean = (retriever: string) => {
        const scored = ws.getPredictions(evalRun, { retriever, shot: 1 }).map((r) => r.accuracy ?? 0);
        return scored.reduce((a, b) => a + b, 0) / scored.length;
      };
      expect(mean("oracle")).toBeGreaterThan(mean("topk-image") + 0.3);

      const html = readFileSync(report.reportPath as string, "utf8");
      expect(html).toContain("CIDEr ×100");
      expect(html).toContain("highest CIDEr among");
    } finally {
      ws.close();
    }
  }, 240_000);
});
