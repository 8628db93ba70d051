import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { execute } from "../../src/experiment/execute.js";
import { decide } from "../../src/experiment/guard.js";
import { loadExperiment } from "../../src/experiment/load.js";
import { plan } from "../../src/experiment/plan.js";
import type { PredictionRow } from "../../src/store/types.js";
import { Workspace } from "../../src/store/workspace.js";
import { experimentFiles } from "./helpers.js";

const { dir, write } = experimentFiles("lever-guard-");
const file = write(
  "guarded.yaml",
  `name: guarded
data:
  synth: { seed: 6, trainItems: 400, valItems: 60, embedding: { dim: 16 } }
pools: { sampler: joint-sim, k: 10 }
beams: { anchors: "random:40", shots: 2, beamSize: 2, budget: 5 }
sft: { model: { hidden: 16 }, optim: { epochs: 1, batchQueries: 8 } }
rollouts: { queries: "random:50", shots: 2, beamWidth: 2, temperatures: [1], samples: 2 }
rce: { model: { hidden: 16 }, optim: { epochs: 1, batchQueries: 8 } }
online:
  optim: { epochs: 1, batchQueries: 8 }
  online: { queries: "random:40", samples: 4 }
guard: { queries: "random:120" }
eval: { queries: all, shots: [1, 2], baselines: [random, topk-joint], resamples: 200 }
compare: { baseline: topk-joint, subsets: ["all"], resamples: 200 }
`,
);

async function runGuarded(sets: string[] = []) {
  const ws = Workspace.open(join(dir, "ws"));
  const lines: string[] = [];
  try {
    const report = await execute(ws, plan(loadExperiment(file, sets)), { log: (l) => lines.push(l), progress: null });
    const stored = ws.getPredictions(report.evalRuns[0]);
    const rows = (retriever: string) => stored.filter((r) => r.retriever === retriever);
    const guardRun = ws.listRuns({ kind: "eval" }).find((r) => r.name?.startsWith("guarded-guard-"));
    const guardRows = guardRun === undefined ? [] : ws.getPredictions(guardRun.id);
    return { report, lines, rows, guardRows, evalRows: stored };
  } finally {
    ws.close();
  }
}

const row = (retriever: string, shot: number, q: string, accuracy: number): PredictionRow => ({
  runId: "r",
  retriever,
  shot,
  questionId: q,
  demonstrations: [],
  promptHash: "h",
  rawAnswer: "a",
  answer: "a",
  accuracy,
  failure: null,
});

describe("the guard's decision", () => {
  it("keeps the selector at a shot where it beats the prior by more than the margin, else falls back", () => {
    // 4 questions: at shot 1 the selector is right on 3, the prior on 1 (+50 points); at shot 2 both on 2 (0).
    const rows = [
      ...[1, 1, 1, 0].map((a, i) => row("sel", 1, `q${i}`, a)),
      ...[1, 0, 0, 0].map((a, i) => row("topk-joint", 1, `q${i}`, a)),
      ...[1, 1, 0, 0].map((a, i) => row("sel", 2, `q${i}`, a)),
      ...[0, 0, 1, 1].map((a, i) => row("topk-joint", 2, `q${i}`, a)),
    ];
    const d = decide(rows, "sel", "topk-joint", 0, 0);
    expect(d.map((x) => [x.shot, x.difference, x.questions, x.keep])).toEqual([
      [1, 50, 4, true],
      [2, 0, 4, false], // a tie is not a gain: the prior stays
    ]);
    expect(decide(rows, "sel", "topk-joint", 60, 0).map((x) => x.keep)).toEqual([false, false]);
  });
});

describe("lever run's guard (a tiny synthetic world)", () => {
  it("validates the final selector on untrained training questions and writes the final method; a margin nobody meets falls back to top-k at every shot", async () => {
    const first = await runGuarded();
    const guardLines = first.lines.filter((l) => l.startsWith("guard online"));
    expect(guardLines[0]).toMatch(
      /^guard online: online vs topk-joint on random:120 of \d+ training questions no stage trained on$/,
    );
    expect(guardLines.filter((l) => / @[12]: [+-]\d+\.\d\d \[/.test(l))).toHaveLength(2);
    expect(first.report.comparison).toContain("final:online");
    expect(first.guardRows.length).toBeGreaterThan(0);
    // At each shot the final method's rows are the kept method's rows, question by question.
    const selector = [...new Set(first.guardRows.map((r) => r.retriever))].find((r) => r.startsWith("selector:"));
    expect(selector).toBeDefined();
    for (const shot of [1, 2]) {
      const kept = guardLines.some((l) => l.startsWith(`guard online @${shot}:`) && l.endsWith("selector kept"));
      const source = kept ? first.evalRows.filter((r) => r.retriever === selector) : first.rows("topk-joint");
      const bySource = new Map(source.filter((r) => r.shot === shot).map((r) => [r.questionId, r]));
      const final = first.rows("final:online").filter((r) => r.shot === shot);
      expect(final.length).toBe(bySource.size);
      for (const r of final)
        expect([r.demonstrations, r.accuracy]).toEqual([
          bySource.get(r.questionId)?.demonstrations,
          bySource.get(r.questionId)?.accuracy,
        ]);
    }

    // Every stage's training queries are left out of the guard's questions.
    const trained = new Set<string>();
    for (const kind of ["beams", "rollouts"])
      for (const f of readdirSync(join(dir, "ws", "artifacts", kind)).filter((n) => n.endsWith(".json")))
        for (const id of Object.keys(JSON.parse(readFileSync(join(dir, "ws", "artifacts", kind, f), "utf8")).queries))
          trained.add(id);
    expect(trained.size).toBeGreaterThan(40);
    for (const r of first.guardRows) expect(trained.has(r.questionId), r.questionId).toBe(false);

    const strict = await runGuarded(["guard.margin=100"]);
    expect(strict.lines).toContainEqual(
      "final:online = topk-joint at 1, 2 shot(s), where online did not beat it on the guard's questions; online elsewhere",
    );
    const final = strict.rows("final:online");
    const topk = strict.rows("topk-joint");
    expect(final.length).toBe(topk.length);
    const key = (r: PredictionRow) => `${r.shot}/${r.questionId}`;
    const topkBy = new Map(topk.map((r) => [key(r), r]));
    for (const r of final) {
      expect(r.accuracy).toBe(topkBy.get(key(r))?.accuracy);
      expect(r.demonstrations).toEqual(topkBy.get(key(r))?.demonstrations);
    }
  });
});
