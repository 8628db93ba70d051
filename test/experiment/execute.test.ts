import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { execute, labelledStream } from "../../src/experiment/execute.js";
import { loadExperiment } from "../../src/experiment/load.js";
import { plan } from "../../src/experiment/plan.js";
import { Workspace } from "../../src/store/workspace.js";
import { experimentFiles } from "./helpers.js";

const { dir, write } = experimentFiles("lever-runner-");
const file = write(
  "tiny.yaml",
  `name: tiny
data:
  synth: { seed: 4, trainItems: 300, valItems: 60, embedding: { dim: 16 } }
pools: { sampler: mix, k: 12 }
beams: { anchors: "first:24", shots: 2, beamSize: 2, budget: 6 }
sft: { model: { hidden: 16 }, optim: { epochs: 1, batchQueries: 8 } }
rollouts: { queries: "first:30", shots: 2, beamWidth: 2, temperatures: [1], samples: 2 }
rce: { model: { hidden: 16 }, optim: { epochs: 1, batchQueries: 8 } }
grpo:
  optim: { epochs: 1, batchQueries: 8 }
  kl: { beta: [0, 0.2] }
  seed: [1, 2]
online:
  optim: { epochs: 1, batchQueries: 8 }
  online: { queries: "first:24", samples: 4 }
eval: { queries: all, shots: [1, 2], baselines: [zero, random, topk-joint], resamples: 200 }
compare: { baseline: topk-joint, subsets: ["all"], resamples: 200 }
guard: { queries: "random:60" }
`,
);

async function runTiny(sets: string[] = []) {
  // "+" and "=" in the workspace's path reach the selectors' method ids: seed groups are passed to the
  // comparison as data, never as NAME=A+B text that such an id would break.
  const ws = Workspace.open(join(dir, "ws+seeds=2"));
  const lines: string[] = [];
  try {
    const p = plan(loadExperiment(file, sets));
    const report = await execute(ws, p, { log: (l) => lines.push(l), progress: null });
    return { report, lines };
  } finally {
    ws.close();
  }
}

describe("lever run (a tiny synthetic world, every stage)", () => {
  it("a β × seed sweep runs the upstream stages once, evaluates every variant, groups seeds, writes the report; a rerun reuses everything; an upstream change reruns what depends on it", async () => {
    const first = await runTiny();
    const c = first.report.counts;
    for (const stage of ["data", "pools", "beams", "sft", "rollouts", "rce", "online"] as const)
      expect(c[stage], stage).toEqual({ run: 1, reused: 3 });
    expect(c.grpo).toEqual({ run: 4, reused: 0 });
    expect(first.report.evalRuns).toHaveLength(1);
    // One eval run: the baselines plus sft, rce, four GRPO variants and online, labelled by what was swept.
    expect(first.report.comparison).toContain("selector:grpo_beta-0.2_seed-2");
    expect(first.report.comparison).toContain("selector:online");
    // The seeds of one β form one row (mean ± sd over the seeds).
    expect(first.report.comparison).toMatch(/grpo_beta-0\.2 .*over 2 seeds/);
    // In a sweep the log names each stage's variant: its label and which variants it serves.
    expect(first.lines).toContainEqual(
      expect.stringMatching(/^grpo [0-9a-f]{10} grpo_beta-0\.2_seed-2 \(variant 4 of 4\): running$/),
    );
    expect(first.lines).toContainEqual(
      expect.stringMatching(/^sft [0-9a-f]{10} sft \(variants 1, 2, 3, 4 of 4, shared\): running$/),
    );
    expect(first.report.reportPath).not.toBeNull();
    expect(existsSync(first.report.reportPath as string)).toBe(true);
    const html = readFileSync(first.report.reportPath as string, "utf8");
    expect(html).toContain("<svg");
    // Curves and stage summaries name runs by their stage label, not by the stage's identity tag.
    expect(html).toMatch(/<td>beams \(beams-\d+\)<\/td><td>beams<\/td><td>vlm\.calls<\/td>/);
    expect(html).toContain(">grpo_beta-0.2_seed-2<");
    expect(html).not.toMatch(/<td>x[0-9a-f]{10}<\/td>/);

    // The reruns write no report (rendering its curves took most of the time): the report of this
    // workspace's runs is checked above, and no assertion below reads one.
    const again = await runTiny(["report.enabled=false"]);
    for (const [stage, n] of Object.entries(again.report.counts)) expect(n.run, stage).toBe(0);
    // 7 shared stages and the 4 GRPO variants, each found done.
    expect(again.lines.filter((l) => l.endsWith("done earlier, reused") || l.includes("reused by")).length).toBe(11);

    // A changed SFT setting reruns SFT and everything downstream of it, nothing upstream.
    const changed = await runTiny(["sft.optim.lr=0.0003", "report.enabled=false"]);
    const k = changed.report.counts;
    for (const stage of ["data", "pools", "beams"] as const) expect(k[stage].run, stage).toBe(0);
    for (const stage of ["sft", "rollouts", "rce", "online"] as const) expect(k[stage].run, stage).toBe(1);
    expect(k.grpo.run).toBe(4);
    // The comparison holds this execution's methods only, not the earlier checkpoints' rows of the shared
    // evaluation run: the same rows as the first time, under the same labels.
    const rowsOf = (table: string | null) =>
      (table ?? "")
        .split("\n")
        .filter((l) => l.startsWith("selector:"))
        .map((l) => l.split(/\s+/)[0]);
    expect(changed.report.evalRuns).toEqual(first.report.evalRuns);
    expect(new Set(rowsOf(changed.report.comparison))).toEqual(new Set(rowsOf(first.report.comparison)));
  }, 180_000);
});

describe("a sweep's progress", () => {
  it("starts every progress line with the variant's stage label, on a terminal and in a log", () => {
    for (const isTTY of [true, false]) {
      const written: string[] = [];
      const stream = { isTTY, write: (t: string) => written.push(t) > 0 } as unknown as NodeJS.WritableStream;
      const labelled = labelledStream(stream, "grpo_beta-0.2_seed-1");
      expect((labelled as { isTTY?: boolean }).isTTY).toBe(isTTY);
      labelled.write(isTTY ? "\rgrpo epoch 1/2 [###   ]" : "grpo epoch 1/2 50%\n");
      expect(written).toEqual([
        isTTY ? "\r[grpo_beta-0.2_seed-1] grpo epoch 1/2 [###   ]" : "[grpo_beta-0.2_seed-1] grpo epoch 1/2 50%\n",
      ]);
    }
  });
});
