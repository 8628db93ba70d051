import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { execute } from "../../src/experiment/execute.js";
import { loadExperiment, parseSetOption } from "../../src/experiment/load.js";
import { plan } from "../../src/experiment/plan.js";
import {
  STAGE_TABLE,
  STAGES,
  type StageEntry,
  type StageName,
  TRAINING_STAGES,
  trainedOutputs,
} from "../../src/experiment/stages.js";
import { Workspace } from "../../src/store/workspace.js";
import { leverErrorOf } from "../helpers/errors.js";
import { experimentFiles } from "./helpers.js";

const { dir, write } = experimentFiles("lever-experiment-");

const BASE = `name: t
data:
  synth: { seed: 3, trainItems: 300, valItems: 60 }
pools: { sampler: mix, k: 16 }
beams: { anchors: "first:20", shots: 2 }
sft: { optim: { epochs: 1 } }
rollouts: { queries: "first:30", shots: 2 }
rce: { optim: { epochs: 1 } }
`;

describe("experiment files", () => {
  it("a list where one value is expected is a sweep; lists of list fields are not; grids expand in file order", () => {
    const file = write(
      "sweep.yaml",
      `${BASE}grpo:\n  kl: { beta: [0.12, 0.15, 0.18] }\n  seed: [1, 2, 3]\neval: { shots: [1, 2] }\n`,
    );
    const loaded = loadExperiment(file);
    expect(loaded.sweeps).toEqual([
      ["grpo", "kl", "beta"],
      ["grpo", "seed"],
    ]);
    expect(loaded.variants).toHaveLength(9);
    expect(loaded.variants[0].label).toBe("grpo.kl.beta=0.12, grpo.seed=1");
    expect(loaded.variants[8].label).toBe("grpo.kl.beta=0.18, grpo.seed=3");
    expect(loaded.variants[4].experiment.grpo?.kl.beta).toBe(0.15);
    expect(loaded.variants[4].experiment.eval.shots).toEqual([1, 2]); // a list field stays one value
    // A list of lists at a list field is a sweep.
    const shots = loadExperiment(write("shots.yaml", `${BASE}eval: { shots: [[1], [2, 4]] }\n`));
    expect(shots.variants.map((v) => v.experiment.eval.shots)).toEqual([[1], [2, 4]]);
  });

  it("--set overrides any key with a YAML value (and can make a sweep)", () => {
    expect(parseSetOption("grpo.kl.beta=[0.1, 0.2]")).toEqual({ path: ["grpo", "kl", "beta"], value: [0.1, 0.2] });
    const file = write("set.yaml", BASE);
    const loaded = loadExperiment(file, ["sft.optim.lr=0.001", "rce.seed=[5, 6]"]);
    expect(loaded.variants).toHaveLength(2);
    expect(loaded.variants[1].experiment.sft?.optim.lr).toBe(0.001);
    expect(loaded.variants[1].experiment.rce?.seed).toBe(6);
    expect(leverErrorOf(() => parseSetOption("noequals")).message).toMatch(/key\.path=value/);
  });

  it("refuses to sweep what all variants share (name, data, compare, report), naming the key", () => {
    const file = write("shared.yaml", BASE);
    for (const set of ["data.synth.seed=[1, 2]", "compare.test=[mcnemar, sign-flip]", "name=[a, b]"]) {
      const key = set.split("=")[0];
      const error = leverErrorOf(() => loadExperiment(file, [set]));
      expect(error.message).toMatch(new RegExp(`shared\\.yaml.*${key.replace(".", "\\.")} cannot be swept`));
    }
  });

  it("hostile or empty files are one LeverError, not a stack trace: alias bomb, huge grid, empty sweep, __proto__", () => {
    const laughs = ["a: &a [x, x, x, x, x, x, x, x, x]"];
    for (const [name, prev] of [
      ["b", "a"],
      ["c", "b"],
      ["d", "c"],
      ["e", "d"],
      ["f", "e"],
    ])
      laughs.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(", ")}]`);
    const bomb = write("bomb.yaml", `${laughs.join("\n")}\n`);
    expect(leverErrorOf(() => loadExperiment(bomb)).message).toMatch(/bomb\.yaml: YAML aliases expand too far/);
    const file = write("grid.yaml", BASE);
    const sets = ["pools.seed", "beams.seed", "sft.seed", "rollouts.seed", "rce.seed", "grpo.seed"].map(
      (key) => `${key}=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]`,
    );
    expect(leverErrorOf(() => loadExperiment(file, sets)).message).toMatch(
      /grid\.yaml: the sweeps make 1,000,000 variants \(pools\.seed: 10 × .*\); at most 1000/,
    );
    expect(loadExperiment(file, sets.slice(0, 3)).variants).toHaveLength(1000); // the limit itself is allowed
    const empty = write("empty.yaml", `${BASE}grpo:\n  seed: []\n`);
    expect(leverErrorOf(() => loadExperiment(empty)).message).toMatch(
      /empty\.yaml, field "grpo\.seed": an empty list sweeps over no values/,
    );
    expect(leverErrorOf(() => loadExperiment(file, ["sft.seed=[]"])).message).toMatch(/field "sft\.seed": an empty/);
    for (const set of ["__proto__.x=1", "sft.constructor.x=1", "sft.prototype=2"])
      expect(leverErrorOf(() => loadExperiment(file, [set])).message).toMatch(/not a setting/);
    expect(({} as Record<string, unknown>).x).toBeUndefined(); // nothing reached Object.prototype
    const json = write("proto.json", '{ "name": "t", "__proto__": { "x": 1 } }');
    expect(leverErrorOf(() => loadExperiment(json)).message).toMatch(/field "__proto__": not a setting/);
  });

  it("a compare.baseline no method will have is refused when planning, before any training", () => {
    const file = write("baseline.yaml", `${BASE}eval: { baselines: [zero, random] }\ngrpo: { seed: [1, 2] }\n`);
    const error = leverErrorOf(() => plan(loadExperiment(file, ["compare.baseline=rnadom"])));
    expect(error.message).toMatch(/baseline\.yaml, field "compare\.baseline": no method "rnadom" will be evaluated/);
    expect(error.message).toContain("selector:grpo_seed-1");
    const evalRun = `${loadExperiment(file).variants[0].experiment.name}-eval-${plan(loadExperiment(file)).variants[0].evalId}`;
    for (const ok of [
      "random",
      "rce",
      "selector:sft",
      "grpo_seed-2",
      "grpo",
      `${evalRun}/random`,
      `${evalRun}/selector:rce`,
    ])
      expect(() => plan(loadExperiment(file, [`compare.baseline=${ok}`])), ok).not.toThrow();
    // RUN/RETRIEVER: RUN must be this experiment's evaluation run, and RETRIEVER one it will evaluate.
    expect(leverErrorOf(() => plan(loadExperiment(file, ["compare.baseline=x-eval-1/random"]))).message).toBe(
      `${file}, field "compare.baseline": "x-eval-1" is not an evaluation run of this experiment (RUN/RETRIEVER names one by its name: ${evalRun})`,
    );
    expect(leverErrorOf(() => plan(loadExperiment(file, [`compare.baseline=${evalRun}/rnadom`]))).message).toMatch(
      /no method "rnadom" will be evaluated/,
    );
    // The training stages are the table's (`trains`): each is a method, no other stage is.
    expect(TRAINING_STAGES).toEqual(["sft", "rce", "grpo", "online"]);
    for (const stage of ["beams", "rollouts", "pools"])
      expect(leverErrorOf(() => plan(loadExperiment(file, [`compare.baseline=${stage}`]))).message, stage).toMatch(
        /will be evaluated/,
      );
    // A seed group is a row by its name only; "selector:grpo" is no method the comparison would find.
    expect(leverErrorOf(() => plan(loadExperiment(file, ["compare.baseline=selector:grpo"]))).message).toMatch(
      /no method "selector:grpo" will be evaluated/,
    );
  });

  it("one list of trained stages: a stage is a method (compare.baseline, evaluated checkpoint) iff the table says it trains", () => {
    const file = write("every-stage.yaml", `${BASE}grpo: {}\nonline: { online: { queries: "first:8" } }\n`);
    const planned = plan(loadExperiment(file)).variants[0].stages;
    expect(planned.map((s) => s.stage)).toEqual(STAGES);
    for (const s of planned) {
      const trains = (STAGE_TABLE[s.stage] as StageEntry<StageName>).trains === true;
      for (const name of [s.stage, `selector:${s.stage}`]) {
        const plans = () => plan(loadExperiment(file, [`compare.baseline=${name}`]));
        if (trains) expect(plans, name).not.toThrow();
        else expect(leverErrorOf(plans).message, name).toMatch(/no method ".*" will be evaluated/);
      }
      // The evaluation and the guard read a stage's checkpoint through the same list.
      const outputs = new Map([[`${s.stage}-${s.id}`, { runId: "r", bestFile: "best.safetensors" }]]);
      expect(trainedOutputs(s.stage, outputs, s.id) !== undefined, s.stage).toBe(trains);
    }
  });

  it("an optim.groupLr naming no parameter group is refused when the file is read, not when training starts", () => {
    const file = write("grouplr.yaml", BASE);
    expect(leverErrorOf(() => loadExperiment(file, ["sft.optim.groupLr={featurs: 100}"])).message).toMatch(
      /grouplr\.yaml, field "sft\.optim\.groupLr": unknown parameter group\(s\): featurs \(groups: .*features/,
    );
    expect(
      loadExperiment(file, ["sft.optim.groupLr={features: 10}"]).variants[0].experiment.sft?.optim.groupLr,
    ).toEqual({
      features: 10,
    });
  });

  it("validation errors name the file, the key and its line; unknown keys are rejected", () => {
    const bad = write("bad.yaml", `${BASE}grpo:\n  kl:\n    beta: -1\n`);
    expect(leverErrorOf(() => loadExperiment(bad)).message).toMatch(
      /bad\.yaml, field "grpo\.kl\.beta": Too small.*\(line 11\)/,
    );
    const typo = write("typo.yaml", `${BASE}sft:\n  optim: { epohcs: 3 }\n`);
    expect(leverErrorOf(() => loadExperiment(typo)).message).toMatch(
      /typo\.yaml.*Unrecognized key|duplicated|not valid YAML/,
    );
    const unknown = write("unknown.yaml", `${BASE}grpoo: {}\n`);
    expect(leverErrorOf(() => loadExperiment(unknown)).message).toMatch(
      /unknown\.yaml, field "grpoo": Unrecognized key.*\(line 9\)/,
    );
    const both = write("both.yaml", `name: t\ndata: {}\n`);
    expect(leverErrorOf(() => loadExperiment(both)).message).toMatch(
      /exactly one of data\.synth, data\.captionSynth, data\.import and data\.importCaptions/,
    );
  });

  it("prefix credit is refused when the file is read (offline grpo, sequence ratios), accepted in the online section", () => {
    const offline = write("credit.yaml", `${BASE}grpo:\n  online: { credit: prefix }\n`);
    expect(leverErrorOf(() => loadExperiment(offline)).message).toMatch(
      /credit\.yaml, field "grpo\.online\.credit": prefix credit .* use the online: section/,
    );
    const ratios = write(
      "ratios.yaml",
      `${BASE}online:\n  online: { credit: prefix }\n  loss: { ratioLevel: sequence }\n`,
    );
    expect(leverErrorOf(() => loadExperiment(ratios)).message).toMatch(/field "online\.loss\.ratioLevel": .*step/);
    const fine = write("fine.yaml", `${BASE}online:\n  online: { credit: prefix }\n`);
    expect(loadExperiment(fine).variants[0].experiment.online?.online.credit).toBe("prefix");
  });

  it("plans shared stages: a β × seed sweep runs every upstream stage once", () => {
    const file = write("plan.yaml", `${BASE}grpo:\n  kl: { beta: [0.1, 0.2] }\n  seed: [1, 2, 3]\n`);
    const p = plan(loadExperiment(file));
    const byStage = (stage: string) => p.unique.filter((u) => u.stage.stage === stage);
    for (const stage of ["data", "pools", "beams", "sft", "rollouts", "rce"]) {
      expect(byStage(stage), stage).toHaveLength(1);
      expect(byStage(stage)[0].variants).toHaveLength(6);
    }
    expect(byStage("grpo")).toHaveLength(6);
    expect(new Set(p.variants.map((v) => v.evalId)).size).toBe(1);
    expect(p.variants[0].stages.find((s) => s.stage === "grpo")?.label).toBe("grpo_beta-0.1_seed-1");
    // Changing an upstream setting changes every identity downstream of it, and only those.
    const other = plan(loadExperiment(file, ["sft.optim.lr=0.0002"]));
    const id = (pp: typeof p, stage: string) => pp.variants[0].stages.find((s) => s.stage === stage)?.id;
    for (const stage of ["data", "pools", "beams"]) expect(id(other, stage)).toBe(id(p, stage));
    for (const stage of ["sft", "rollouts", "rce", "grpo"]) expect(id(other, stage)).not.toBe(id(p, stage));
  });

  it("operational settings (concurrency, batch size, VLM cache and timeouts) change no identity", () => {
    const file = write("ops.yaml", `${BASE}grpo: { optim: { epochs: 1 } }\neval: { queries: all }\n`);
    const p = plan(loadExperiment(file));
    const ops = plan(
      loadExperiment(file, [
        "beams.concurrency=16",
        "rollouts.concurrency=32",
        "eval.concurrency=12",
        "eval.batchSize=8",
        "vlm.cache=on",
        "vlm.timeoutMs=120000",
      ]),
    );
    expect(ops.variants[0].stages).toEqual(p.variants[0].stages);
    expect(ops.variants[0].evalId).toBe(p.variants[0].evalId);
    // What changes a result does.
    const beams = plan(loadExperiment(file, ["beams.beamSize=3"]));
    expect(beams.variants[0].stages.find((s) => s.stage === "beams")?.id).not.toBe(
      p.variants[0].stages.find((s) => s.stage === "beams")?.id,
    );
    expect(plan(loadExperiment(file, ["eval.seed=1"])).variants[0].evalId).not.toBe(p.variants[0].evalId);
  });

  it("eval settings the chain sets itself (pool sampler, K, selector embedding) are rejected, not ignored", () => {
    for (const key of ["k: 16", "poolSampler: random", "selectorEmbedding: image", "retrievers: [zero]"]) {
      const file = write("evalk.yaml", `${BASE}eval: { ${key} }\n`);
      expect(leverErrorOf(() => loadExperiment(file)).message, key).toMatch(
        /field "eval\.[a-zA-Z]+": Unrecognized key/,
      );
    }
  });

  it("seed groups are the chain's (from the swept seeds): compare.seedGroups is rejected, not ignored", () => {
    const file = write("groups.yaml", `${BASE}compare: { seedGroups: ["g=a+b"] }\n`);
    expect(leverErrorOf(() => loadExperiment(file)).message).toMatch(
      /groups\.yaml, field "compare\.seedGroups": Unrecognized key/,
    );
  });

  it("after Ctrl-C (an aborted signal) no further stage starts", async () => {
    const ws = Workspace.open(join(dir, "ws-abort"));
    const controller = new AbortController();
    controller.abort();
    const lines: string[] = [];
    try {
      await expect(
        execute(ws, plan(loadExperiment(write("abort.yaml", BASE))), {
          log: (l) => lines.push(l),
          progress: null,
          signal: controller.signal,
        }),
      ).rejects.toThrow(
        /^stopped before the next stage; kept: 0 of \d+ stages done .*; run the same command again to resume/,
      );
      expect(lines).toEqual([]);
      expect(ws.listDatasets()).toEqual([]);
    } finally {
      ws.close();
    }
  });
});
