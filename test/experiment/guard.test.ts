import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { execute } from "../../src/experiment/execute.js";
import { decide, finalRows, guardChoices } from "../../src/experiment/guard.js";
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
report: { enabled: false }
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
  it("chooses, among the candidates significantly better than the prior, the largest gain; else the prior", () => {
    // 200 questions; a method is right on question i when (i + offset) % 10 < its count. Shot 1: prior 2,
    // selector 6, vote 8 of each ten (+40, +60: both far above; the vote gains most). Shot 2: prior 5,
    // selector 6 (right where the prior is, and on 20 more: +10, significant), vote 4 (−10). Shot 3: selector
    // and vote right on 5 of each ten, other ones than the prior (+0). Shot 4: the selector right on one
    // question more than the prior (+0.5 points, an interval that holds 0: noise, not a gain).
    const right = (count: number, i: number, offset = 0) => ((i + offset) % 10 < count ? 1 : 0);
    const method = (name: string, shot: number, at: (i: number) => number) =>
      Array.from({ length: 200 }, (_, i) => row(name, shot, `q${String(i).padStart(3, "0")}`, at(i)));
    const rows = [
      ...method("topk-joint", 1, (i) => right(2, i)),
      ...method("sel", 1, (i) => right(6, i)),
      ...method("vote", 1, (i) => right(8, i)),
      ...method("topk-joint", 2, (i) => right(5, i)),
      ...method("sel", 2, (i) => right(6, i)),
      ...method("vote", 2, (i) => right(4, i)),
      ...method("topk-joint", 3, (i) => right(5, i)),
      ...method("sel", 3, (i) => right(5, i, 5)),
      ...method("vote", 3, (i) => right(5, i, 5)),
      ...method("topk-joint", 4, (i) => right(5, i)),
      ...method("sel", 4, (i) => (i === 7 ? 1 : right(5, i))),
      ...method("vote", 4, (i) => right(5, i)),
    ];
    const options = { selector: "sel", prior: "topk-joint", baselines: ["vote"], margin: 0, seed: 0 };
    const d = decide(rows, options);
    expect(d.map((x) => [x.shot, x.questions, x.candidates.map((c) => [c.retriever, c.difference]), x.choice])).toEqual(
      [
        [
          1,
          200,
          [
            ["sel", 40],
            ["vote", 60],
          ],
          "vote",
        ],
        [
          2,
          200,
          [
            ["sel", 10],
            ["vote", -10],
          ],
          "sel",
        ],
        [
          3,
          200,
          [
            ["sel", 0],
            ["vote", 0],
          ],
          "topk-joint",
        ],
        [
          4,
          200,
          [
            ["sel", 0.5],
            ["vote", 0],
          ],
          "topk-joint",
        ], // +0.5, but its interval holds 0: the prior stays
      ],
    );
    for (const x of d) for (const c of x.candidates) expect(c.lower).toBeLessThanOrEqual(c.difference);
    expect(d[1].candidates[0].lower).toBeGreaterThan(0);
    expect(d[3].candidates[0].lower).toBeLessThanOrEqual(0);
    // Without baselines: the selector or the prior.
    expect(decide(rows, { ...options, baselines: [] }).map((x) => x.choice)).toEqual([
      "sel",
      "sel",
      "topk-joint",
      "topk-joint",
    ]);
    // A margin on the interval's lower end: shot 1's vote (+60) clears 45, nothing else does.
    expect(decide(rows, { ...options, margin: 45 }).map((x) => x.choice)).toEqual([
      "vote",
      "topk-joint",
      "topk-joint",
      "topk-joint",
    ]);
    // The selector's name holds its checkpoint's path: another workspace's path gives the same intervals.
    const renamed = (name: string) => rows.map((r) => (r.retriever === "sel" ? { ...r, retriever: name } : r));
    const intervals = (name: string) =>
      decide(renamed(name), { ...options, selector: name }).map((x) => x.candidates.map((c) => [c.lower, c.upper]));
    expect(intervals("selector:/a/ws/online/best.safetensors")).toEqual(
      intervals("selector:/elsewhere/online/best.safetensors"),
    );
  });
});

describe("the final method's rows", () => {
  it("copies, at each shot, the rows of the retriever the guard chose, the prior where it did not decide", () => {
    const evalRows = [1, 2, 3].flatMap((shot) =>
      ["selector:/ck/online.safetensors@x", "vote", "topk-joint", "random"].map((r) => row(r, shot, "q0", shot / 10)),
    );
    const guard = {
      runId: "g",
      label: "online",
      selector: "selector:/ck/online.safetensors@x",
      prior: "topk-joint",
      decisions: [
        { shot: 1, questions: 1, candidates: [], choice: "vote" },
        { shot: 2, questions: 1, candidates: [], choice: "selector:/ck/online.safetensors@x" },
      ],
    };
    const final = finalRows(evalRows, guard, "selector:/ck/online.safetensors@x");
    expect(final.map((r) => [r.shot, r.retriever, r.accuracy])).toEqual([
      [1, "final:online", 0.1],
      [2, "final:online", 0.2],
      [3, "final:online", 0.3],
    ]);
    // Which source each row came from: the stored rows are distinguished by their retriever before copying.
    const sourced = finalRows(
      evalRows.map((r) => ({ ...r, rawAnswer: r.retriever })),
      guard,
      "selector:/ck/online.safetensors@x",
    );
    expect(sourced.map((r) => r.rawAnswer)).toEqual(["vote", "selector:/ck/online.safetensors@x", "topk-joint"]);
    // The evaluation must hold the prior and the vote; the selector is there anyway.
    expect(guardChoices(guard)).toEqual(["topk-joint", "vote"]);
  });
});

describe("lever run's guard (a tiny synthetic world)", () => {
  it("validates the final selector on untrained training questions and writes the final method; a margin nobody meets falls back to top-k at every shot", async () => {
    const first = await runGuarded();
    const guardLines = first.lines.filter((l) => l.startsWith("guard online"));
    expect(guardLines[0]).toMatch(
      /^guard online: online, vote vs topk-joint on random:120 of \d+ training questions no stage trained on$/,
    );
    const decisions = guardLines.filter((l) => / @[12]: online [+-]\d+\.\d\d \[.*\], vote [+-]\d+\.\d\d \[/.test(l));
    expect(decisions).toHaveLength(2);
    // The vote is not among the evaluation's baselines: it is evaluated only where the guard chose it.
    const chosen = (shot: number) => decisions.find((l) => l.includes(` @${shot}: `))?.split(" → ")[1];
    expect(first.report.comparison).toContain("final:online");
    expect(first.guardRows.length).toBeGreaterThan(0);
    // At each shot the final method's rows are the kept method's rows, question by question.
    const selector = [...new Set(first.guardRows.map((r) => r.retriever))].find((r) => r.startsWith("selector:"));
    expect(selector).toBeDefined();
    for (const shot of [1, 2]) {
      const choice = chosen(shot);
      const source =
        choice === "online"
          ? first.evalRows.filter((r) => r.retriever === selector)
          : first.rows(choice === "vote" ? "vote" : "topk-joint");
      expect(source.filter((r) => r.shot === shot).length, String(choice)).toBeGreaterThan(0);
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
      "final:online = topk-joint (the prior) at 1, 2 shots (each validated against topk-joint on the guard's questions)",
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
