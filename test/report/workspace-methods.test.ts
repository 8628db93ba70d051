import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { chooseBaseline, loadEvalMethods, resolveMethod } from "../../src/report/workspace-methods.js";
import { Workspace } from "../../src/store/workspace.js";

describe("loadEvalMethods", () => {
  it("orders zero, random, top-k, vote, the simulator's references, then selectors; vote is a method under test", () => {
    const ws = Workspace.open(join(mkdtempSync(join(tmpdir(), "lever-methods-")), "ws"));
    try {
      const item = { questionId: "1", imageId: "i1", question: "q?", questionType: "what", answerType: "other" };
      const answers = Array.from({ length: 10 }, () => ({ answer: "a" }));
      const q = ws.putDataset({ name: "q", split: "val", source: "synth", files: [] }, [
        { ...item, answers, answer: "a", imagePath: null },
      ]);
      const run = ws.createRun({
        kind: "eval",
        config: { format: "lever.eval/1", dataset: { name: "q", items: q.itemsHash }, index: { name: "ix" } },
        seed: 0,
      });
      const retrievers = ["selector:/c/sft.safetensors", "oracle", "vote", "informed", "topk-joint", "random", "zero"];
      ws.putPredictions(
        retrievers.map((retriever) => ({
          runId: run,
          retriever,
          shot: retriever === "zero" ? 0 : 1,
          questionId: "1",
          demonstrations: [],
          promptHash: "h",
          rawAnswer: "a",
          answer: "a",
          accuracy: 1,
          failure: null,
        })),
      );
      const loaded = loadEvalMethods(ws, [ws.getRun(run)!]);
      const { methods } = loaded;
      expect(methods.map((m) => m.label)).toEqual([
        "zero",
        "random",
        "topk-joint",
        "vote",
        "informed",
        "oracle",
        "selector:sft",
      ]);
      expect(methods.filter((m) => m.reference).map((m) => m.label)).toEqual(["informed", "oracle"]);
      // A selector by its short name or by the stage label an experiment gives it (compare.baseline: sft).
      const sft = methods.find((m) => m.label === "selector:sft")?.id;
      expect(sft).toBeDefined();
      for (const ref of ["selector:sft", "sft"]) expect(resolveMethod(ref, loaded, "--baseline")).toBe(sft);
      expect(chooseBaseline("sft", loaded).id).toBe(sft);
      expect(() => resolveMethod("rce", loaded, "--baseline")).toThrow(/no method "rce"/);
    } finally {
      ws.close();
    }
  });
});
