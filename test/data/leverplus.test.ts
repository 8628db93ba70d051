import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  constructOrderFromFileName,
  datasetIndex,
  exportBeams,
  exportRollouts,
  importBeams,
  importRollouts,
  importSamplerPools,
  samplerFromFileName,
} from "../../src/data/leverplus/index.js";
import { parsePythonJson } from "../../src/data/leverplus/json.js";
import { parseBeamSet, parseRolloutSet, summarizeRolloutSet, toPromptOrder } from "../../src/data/trajectories.js";

// biome-ignore lint/suspicious/noExplicitAny: tests mutate and inspect raw fixture JSON freely
type Loose = any;

const FIXTURES = join(import.meta.dirname, "../fixtures/leverplus");
const fixture = (name: string): Record<string, unknown> => JSON.parse(readFileSync(join(FIXTURES, name), "utf8"));
const clone = <T>(value: T): T => structuredClone(value);

// Rows 0..7 = question ids 101, 205, 310, 422, 530, 611, 707, 899; rows 2 and 3 share image 3.
const datasetRows = fixture("dataset.json") as unknown as { question_id: number; image_id: number }[];
const items = datasetRows.map((r) => ({ questionId: String(r.question_id), imageId: String(r.image_id) }));
const okvqa = datasetIndex("okvqa-train", items);

describe("datasetIndex", () => {
  it("maps Python idx (row in question-id order) to question ids and refuses unsorted items", () => {
    expect(okvqa.ids[5]).toBe("611");
    expect(okvqa.rowOf.get("899")).toBe(7);
    expect(() => datasetIndex("x", [{ questionId: "10" }, { questionId: "9" }])).toThrow(
      /strictly increasing question-id order/,
    );
  });
});

describe("beam data", () => {
  it("reads id_list as prompt order: the first selected ICD is the one next to the anchor", () => {
    const { set, warnings } = importBeams(fixture("beams.json"), okvqa, { file: "beams.json" });
    expect(warnings).toEqual([]);
    expect(set.promptOrder).toBe("nearest");
    // id_list [4, 0, 2]: row 0 (qid 101) was selected first, then row 4 (qid 530).
    expect(set.queries["310"].beams[0]).toEqual({
      selected: ["101", "530"],
      score: -2e-7,
      shotScores: [-1.09e-6, -2e-7],
    });
    expect(toPromptOrder(set.queries["310"].beams[0].selected, set.promptOrder)).toEqual(["530", "101"]);
    expect(set.queries["611"]).toEqual({
      beams: [{ selected: ["205", "899"], score: 0.25, shotScores: [0.5, 0.25] }],
      fewShotNum: 2,
    });
    expect(set.source).toMatchObject({
      format: "leverplus.beams",
      file: "beams.json",
      settings: { constructOrder: "left" },
    });
  });

  for (const name of ["beams.json", "beams-legacy.json"]) {
    it(`import → export reproduces ${name} exactly`, () => {
      const original = fixture(name);
      const { set } = importBeams(clone(original), okvqa);
      expect(exportBeams(set, okvqa)).toEqual(original);
      // …also after a trip through the stored JSON artefact.
      const stored = parseBeamSet(JSON.parse(JSON.stringify(set)), "beams/x.json");
      expect(exportBeams(stored, okvqa)).toEqual(original);
    });
  }

  it("construct_order right reads id_list as selection order, and the beams block catches the wrong choice", () => {
    const legacy = importBeams(fixture("beams-legacy.json"), okvqa, { constructOrder: "right" }).set;
    expect(legacy.promptOrder).toBe("farthest");
    expect(legacy.queries["101"].beams[0].selected).toEqual(["422", "205"]);
    expect(() => importBeams(fixture("beams.json"), okvqa, { file: "b.json", constructOrder: "right" })).toThrow(
      /b\.json, record "2", field "beams\[0\]\.shots": lists ICDs \[0, 4\] in selection order, but id_list\[0\] read with construct_order "right" gives \[4, 0\] \(is construct_order "left"\?\)/,
    );
    expect(
      constructOrderFromFileName("vqa-okvqa-Qwen-RandSampler-scorer:infoscore-construct_order:left-beam_size:5.json"),
    ).toBe("left");
    expect(constructOrderFromFileName("beams.json")).toBeUndefined();
  });

  const broken: [string, (data: Loose) => void, RegExp][] = [
    [
      "an anchor idx outside the dataset",
      (d) => {
        d["99"] = d["5"];
      },
      /record "99", field "\(key\)": 99 is outside dataset "okvqa-train" \(rows 0\.\.7\)/,
    ],
    [
      "an ICD idx outside the dataset",
      (d) => {
        d["5"].id_list[0][0] = 70;
        d["5"].beams = undefined;
      },
      /record "5", field "id_list\[0\]\[0\]": 70 is outside dataset/,
    ],
    [
      "a sequence that does not end with the anchor",
      (d) => {
        d["5"].id_list[0][2] = 3;
      },
      /field "id_list\[0\]\[2\]": ends with 3, but the last entry must be the anchor 5/,
    ],
    [
      "a wrong shot length",
      (d) => {
        d["5"].id_list[0] = [7, 5];
        delete d["5"].beams;
        delete d["5"].shot_scores;
      },
      /record "5", field "id_list\[0\]": has 1 ICDs but earlier beams have 2 \(wrong shot length\)/,
    ],
    [
      "a score count that differs from the beam count",
      (d) => {
        d["2"].score_list.pop();
      },
      /record "2", field "score_list": has 1 scores for 2 beams/,
    ],
    [
      "a non-numeric key",
      (d) => {
        d.meta = {};
      },
      /record "meta": top-level keys must be row numbers/,
    ],
    [
      "a missing id_list",
      (d) => {
        delete d["2"].id_list;
      },
      /record "2", field "id_list": is required but missing/,
    ],
    [
      "a final_score that contradicts score_list",
      (d) => {
        d["2"].beams[1].final_score = 1;
      },
      /field "beams\[1\]\.final_score": 1 differs from score_list\[1\]/,
    ],
    [
      "an ICD used twice",
      (d) => {
        d["5"].id_list[0] = [1, 1, 5];
        delete d["5"].beams;
      },
      /field "id_list\[0\]\[1\]": ICD 1 appears twice/,
    ],
    [
      "a beam holding its own anchor",
      (d) => {
        d["5"].id_list[0] = [5, 1, 5];
        delete d["5"].beams;
      },
      /^beams\.json, record "5", field "id_list\[0\]\[0\]": 5 is the anchor itself: a query is never its own demonstration \(SFT would learn from it\)$/,
    ],
  ];
  for (const [what, mutate, message] of broken) {
    it(`rejects ${what}, naming file, record and field`, () => {
      const data = fixture("beams.json");
      mutate(data);
      expect(() => importBeams(data, okvqa, { file: "beams.json" })).toThrow(message);
    });
  }

  it("names a NaN score written by Python's json.dump", () => {
    const text = readFileSync(join(FIXTURES, "beams.json"), "utf8").replace(
      '"score_list": [0.25]',
      '"score_list": [NaN]',
    );
    expect(() => importBeams(parsePythonJson(text, "beams.json"), okvqa, { file: "beams.json" })).toThrow(
      'beams.json, record "5", field "score_list[0]": is NaN (a number is required)',
    );
  });
});

describe("RL data", () => {
  it("v4 strict: global pointers become question ids in selection (= prompt) order; _meta and query block are kept", () => {
    const { set } = importRollouts(fixture("rl-v4.json"), okvqa, { file: "rl.json" });
    expect(set.promptOrder).toBe("farthest");
    expect(set.meta?.vqa_model).toBe("Qwen/Qwen2.5-VL-3B-Instruct");
    const q = set.queries["310"];
    expect(q.pool).toBeUndefined();
    expect(q.info).toMatchObject({ question_id: 310, image_id: 3, question: "What sport is this?" });
    expect(q.trajectories[0]).toMatchObject({
      selected: ["101", "530"],
      genMethod: "beam",
      beamRank: 0,
      temperature: null,
      vqaAccScore: 1,
      vqaCorrect: 1,
      vqaGtProb: 0.031,
      evalMode: "vqaEval",
      evalFailed: false,
      extra: { pointer_pos: [0, 4] },
    });
    expect(q.trajectories[2]).toMatchObject({ selected: ["611", "899"], similarityScore: 0.83, evalSplitUsed: null });
  });

  it("k64: local pointers become pool positions; the pool and the selected ids agree with pointer_global", () => {
    const { set } = importRollouts(fixture("rl-k64.json"), okvqa);
    const q = set.queries["310"];
    expect(q.pool).toEqual(["530", "101", "707", "899", "205"]);
    expect(q.trajectories[0]).toMatchObject({ selected: ["101", "530"], positions: [1, 0] });
    expect(set.queries["611"].trajectories[0]).toMatchObject({
      selected: ["422", "101"],
      positions: [0, 2],
      extra: { _fix_failed: false },
    });
  });

  it("VQAv2 balanced minimal records and old files without a query block import", () => {
    const balanced = importRollouts(fixture("rl-balanced.json"), okvqa).set;
    expect(balanced.queries["205"].trajectories[1]).toEqual({
      selected: ["422", "707"],
      predAnswer: "blue",
      vqaAccScore: 0,
    });
    expect(balanced.queries["205"].info?.gt_answers_raw).toHaveLength(2);
    const old = importRollouts(fixture("rl-old.json"), okvqa).set;
    expect(old.queries["530"].info).toBeUndefined();
    expect(summarizeRolloutSet(old)).toMatchObject({
      queries: 1,
      trajectories: 2,
      perQuery: { min: 2, max: 2 },
      mixedQueries: 1,
    });
  });

  for (const name of ["rl-v4.json", "rl-k64.json", "rl-balanced.json", "rl-old.json"]) {
    it(`import → export reproduces ${name} exactly (also through the stored artefact)`, () => {
      const original = fixture(name);
      const { set } = importRollouts(clone(original), okvqa);
      expect(exportRollouts(set, okvqa)).toEqual(original);
      const stored = parseRolloutSet(JSON.parse(JSON.stringify(set)), "rollouts/x.json");
      expect(exportRollouts(stored, okvqa)).toEqual(original);
    });
  }

  it("accepts a Lever-Plus vqa_gt_prob above 1 (its mis-masked span allows up to 10/3)", () => {
    const data = fixture("rl-v4.json") as Loose;
    data["2"].pointer_candidates[0].vqa_gt_prob = 1.7;
    const { set } = importRollouts(data, okvqa, { file: "rl.json" });
    expect(set.queries["310"].trajectories[0].vqaGtProb).toBe(1.7);
  });

  it("rejects a stored artefact whose fields contradict each other, naming its own field names", () => {
    const { set } = importRollouts(fixture("rl-v4.json"), okvqa);
    const bad = structuredClone(set) as Loose;
    bad.queries["310"].trajectories[1].vqaCorrect = 1;
    expect(() => parseRolloutSet(bad, "rollouts/x.json")).toThrow(
      'rollouts/x.json, record "310", field "trajectories[1].vqaCorrect": is 1 but vqaAccScore is 0: no annotator gave that answer',
    );
    bad.queries["310"].trajectories[1].vqaCorrect = 0;
    bad.queries["310"].trajectories[1].logprobScore = 1e308;
    expect(() => parseRolloutSet(bad, "rollouts/x.json")).toThrow(
      'rollouts/x.json, record "310", field "trajectories[1].logprobScore": a log-probability must be ≤ 0',
    );
  });

  const broken: [string, string, (data: Loose) => void, RegExp | string][] = [
    [
      "a pointer outside the pool",
      "rl-k64.json",
      (d) => {
        d["2"].pointer_candidates[0].pointer[1] = 9999;
        delete d["2"].pointer_candidates[0].pointer_global;
      },
      'rl.json, record "2", field "pointer_candidates[0].pointer[1]": 9999 is outside the pool of 5',
    ],
    [
      "a global pointer outside the dataset",
      "rl-v4.json",
      (d) => {
        d["6"].pointer_candidates[0].pointer = [2, 8];
      },
      'rl.json, record "6", field "pointer_candidates[0].pointer[1]": 8 is outside dataset "okvqa-train" (rows 0..7)',
    ],
    [
      "a query idx outside the dataset",
      "rl-old.json",
      (d) => {
        d["8"] = d["4"];
      },
      /record "8", field "\(key\)": 8 is outside dataset/,
    ],
    [
      "a wrong shot length",
      "rl-v4.json",
      (d) => {
        d["2"].pointer_candidates[1].pointer = [6, 1, 3];
      },
      'rl.json, record "2", field "pointer_candidates[1].pointer": has 3 ICDs but earlier trajectories have 2 (wrong shot length)',
    ],
    [
      "a missing vqa_acc_score",
      "rl-balanced.json",
      (d) => {
        delete d["4"].pointer_candidates[0].vqa_acc_score;
      },
      'rl.json, record "4", field "pointer_candidates[0].vqa_acc_score": is required but missing',
    ],
    [
      "an accuracy above 1",
      "rl-balanced.json",
      (d) => {
        d["4"].pointer_candidates[0].vqa_acc_score = 1.5;
      },
      'rl.json, record "4", field "pointer_candidates[0].vqa_acc_score": must be in [0, 1]',
    ],
    ...[3.5, -4, 1e300].map((value): [string, string, (data: Loose) => void, string] => [
      `a vqa_gt_prob of ${value}`,
      "rl-v4.json",
      (d) => {
        d["2"].pointer_candidates[1].vqa_gt_prob = value;
      },
      'rl.json, record "2", field "pointer_candidates[1].vqa_gt_prob": must be in [0, 10/3]',
    ]),
    [
      "a positive logprob_score",
      "rl-v4.json",
      (d) => {
        d["2"].pointer_candidates[0].logprob_score = 1e308;
      },
      'rl.json, record "2", field "pointer_candidates[0].logprob_score": a log-probability must be ≤ 0',
    ],
    [
      "vqa_correct 1 with accuracy 0",
      "rl-v4.json",
      (d) => {
        d["2"].pointer_candidates[1].vqa_correct = 1;
      },
      'rl.json, record "2", field "pointer_candidates[1].vqa_correct": is 1 but vqa_acc_score is 0: no annotator gave that answer',
    ],
    [
      "vqa_correct 0 with accuracy 1",
      "rl-k64.json",
      (d) => {
        d["2"].pointer_candidates[0].vqa_correct = 0;
      },
      'rl.json, record "2", field "pointer_candidates[0].vqa_correct": is 0 but vqa_acc_score is 1',
    ],
    [
      "eval_failed with a score",
      "rl-v4.json",
      (d) => {
        d["6"].pointer_candidates[0].eval_failed = true;
      },
      'rl.json, record "6", field "pointer_candidates[0].eval_failed": is true, yet the trajectory has a score (vqa_acc_score 0.9); a failed evaluation has none',
    ],
    [
      "a null accuracy without eval_failed",
      "rl-v4.json",
      (d) => {
        d["6"].pointer_candidates[0].vqa_acc_score = null;
        delete d["6"].pointer_candidates[0].vqa_correct;
      },
      'rl.json, record "6", field "pointer_candidates[0].vqa_acc_score": is null but the trajectory is not marked eval_failed',
    ],
    [
      "a query with no trajectories",
      "rl-v4.json",
      (d) => {
        d["6"].pointer_candidates = [];
      },
      'rl.json, record "6", field "pointer_candidates": holds no trajectories',
    ],
    [
      "a pool holding the query itself",
      "rl-k64.json",
      (d) => {
        d["5"].candidate_pool_ids = [3, 7, 5];
      },
      'rl.json, record "5", field "candidate_pool_ids[2]": 5 is the query itself: a query is never its own candidate',
    ],
    [
      "a trajectory using the query as its own demonstration",
      "rl-balanced.json",
      (d) => {
        d["1"].pointer_candidates[2].pointer = [0, 1];
      },
      'rl.json, record "1", field "pointer_candidates[2].pointer[1]": 1 is the query itself: a query is never its own demonstration',
    ],
    [
      "pointer_global that contradicts the pool",
      "rl-k64.json",
      (d) => {
        d["2"].pointer_candidates[1].pointer_global = [6, 1];
      },
      'rl.json, record "2", field "pointer_candidates[1].pointer_global[1]": 1 differs from candidate_pool_ids[pointer[1]] = 7',
    ],
    [
      "a duplicate in the pool",
      "rl-k64.json",
      (d) => {
        d["5"].candidate_pool_ids = [3, 7, 3];
      },
      'rl.json, record "5", field "candidate_pool_ids[2]": 3 appears twice (also at [0])',
    ],
    [
      "a query block from another dataset",
      "rl-v4.json",
      (d) => {
        d["6"].query.question_id = 12345;
      },
      /field "query\.question_id": 12345 is not the question id of row 6 in dataset "okvqa-train" \(707\): wrong dataset\?/,
    ],
    [
      "a query_id that differs from its key",
      "rl-v4.json",
      (d) => {
        d["6"].query.query_id = 5;
      },
      /field "query\.query_id": 5 differs from the record key 6/,
    ],
    [
      "vqa_correct that is not 0/1",
      "rl-old.json",
      (d) => {
        d["4"].pointer_candidates[1].vqa_correct = 2;
      },
      /field "pointer_candidates\[1\]\.vqa_correct"/,
    ],
    [
      "a pointer_candidates list that is missing",
      "rl-old.json",
      (d) => {
        delete d["4"].pointer_candidates;
      },
      /record "4", field "pointer_candidates": is required but missing/,
    ],
  ];
  for (const [what, name, mutate, message] of broken) {
    it(`rejects ${what}, naming file, record and field`, () => {
      const data = fixture(name);
      mutate(data);
      expect(() => importRollouts(data, okvqa, { file: "rl.json" })).toThrow(message);
    });
  }

  it("names a NaN reward written by Python's json.dump", () => {
    const text = readFileSync(join(FIXTURES, "rl-old.json"), "utf8").replace(
      '"vqa_acc_score": 0.3',
      '"vqa_acc_score": NaN',
    );
    expect(() => importRollouts(parsePythonJson(text, "rl.json"), okvqa, { file: "rl.json" })).toThrow(
      'rl.json, record "4", field "pointer_candidates[1].vqa_acc_score": is NaN (a number is required)',
    );
  });

  it("--shots pins the trajectory length", () => {
    expect(() => importRollouts(fixture("rl-old.json"), okvqa, { file: "rl.json", shots: 3 })).toThrow(
      /has 2 ICDs but --shots is 3/,
    );
  });

  it("a stored artefact whose positions disagree with its pool is rejected on load", () => {
    const { set } = importRollouts(fixture("rl-k64.json"), okvqa);
    const bad = JSON.parse(JSON.stringify(set));
    bad.queries["310"].trajectories[0].positions = [0, 1];
    expect(() => parseRolloutSet(bad, "rollouts/x.json")).toThrow(
      'rollouts/x.json, record "310", field "trajectories[0].positions[0]": pool[0] is "530", not "101"',
    );
    delete bad.queries["310"].trajectories[0].vqaAccScore;
    expect(() => parseRolloutSet(bad, "rollouts/x.json")).toThrow(
      /record "310", field "trajectories\[0\]\.vqaAccScore"/,
    );
  });

  it("exports a nearest-ordered set with pointer in prompt order", () => {
    const { set } = importRollouts(fixture("rl-k64.json"), okvqa);
    const reversed = { ...set, promptOrder: "nearest" as const };
    const out = exportRollouts(reversed, okvqa) as Loose;
    expect(out["2"].pointer_candidates[0].pointer).toEqual([0, 1]);
    expect(out["2"].pointer_candidates[0].pointer_global).toEqual([4, 0]);
    // The order travels in _meta, so the import gives back the same selection order.
    expect(out._meta).toEqual({ ...set.meta, lever_prompt_order: "nearest" });
    const { set: back } = importRollouts(out, okvqa);
    const { source: _a, ...original } = reversed;
    const { source: _b, ...again } = back;
    expect(again).toEqual(original);
  });

  it("keeps failed trajectories (no accuracy, evalFailed) and our log-probability fields through export and import", () => {
    const { set } = importRollouts(fixture("rl-k64.json"), okvqa);
    const qid = okvqa.ids[2];
    const first = set.queries[qid].trajectories[0];
    const { vqaCorrect: _noScore, ...unscored } = first;
    const failed = { ...unscored, vqaAccScore: null, evalFailed: true, gtLogprob: null, sampleLogprob: null };
    const scored = { ...set.queries[qid].trajectories[1], gtLogprob: -0.25, sampleLogprob: -3.5 };
    const edited = {
      ...set,
      meta: undefined,
      queries: { [qid]: { ...set.queries[qid], trajectories: [failed, scored] } },
    };
    const out = exportRollouts(edited, okvqa) as Loose;
    expect(out["2"].pointer_candidates[0]).toMatchObject({ vqa_acc_score: null, eval_failed: true });
    expect(out["2"].pointer_candidates[1]).toMatchObject({ gt_logprob: -0.25, sample_logprob: -3.5 });
    const { set: back } = importRollouts(out, okvqa);
    expect(back.queries[qid].trajectories).toEqual([failed, scored]);
    expect(back.meta).toBeUndefined();
    const unmarked = structuredClone(edited) as Loose;
    delete unmarked.queries[qid].trajectories[0].evalFailed;
    expect(() => parseRolloutSet(unmarked, "r.json")).toThrow(
      `r.json, record "${qid}", field "trajectories[0].vqaAccScore": is null but the trajectory is not marked evalFailed`,
    );
  });
});

describe("sampler-cache pools", () => {
  it("imports {anchor idx: [K idx]} as a PoolSet keyed by question ids, in cache order", () => {
    const { set, dropped } = importSamplerPools(fixture("sampler-pools.json"), okvqa, okvqa, {
      sampler: "RandSampler",
      file: "pools.json",
    });
    expect(dropped).toBe(0);
    expect(set).toMatchObject({
      format: "lever.pools/1",
      sampler: "RandSampler",
      k: 3,
      seed: 42,
      indexDataset: "okvqa-train",
      queryDataset: "okvqa-train",
    });
    expect(set.pools).toEqual({
      "310": ["101", "530", "707"],
      "611": ["205", "899", "101"],
      "101": ["899", "707", "611"],
    });
  });

  it("refuses the query itself or a same-image item in its pool, or drops them on request", () => {
    const selfPool = { "5": [5, 1, 0] };
    expect(() => importSamplerPools(selfPool, okvqa, okvqa, { sampler: "S", file: "p.json" })).toThrow(
      'p.json, record "5", field "[0]": candidate 5 (question 611) is the query itself; the pool contract forbids it',
    );
    const sameImage = { "2": [0, 3, 4] }; // row 3 shares image 3 with row 2
    expect(() => importSamplerPools(sameImage, okvqa, okvqa, { sampler: "S", file: "p.json" })).toThrow(
      /field "\[1\]": candidate 3 \(question 422\) shares image 3 with the query/,
    );
    const result = importSamplerPools({ ...sameImage, "5": [1, 7, 0] }, okvqa, okvqa, {
      sampler: "S",
      onConflict: "drop",
    });
    expect(result.dropped).toBe(1);
    // Every pool is cut to the shortest (2), keeping the sampler's order, so the set keeps exactly K each.
    expect(result.set.k).toBe(2);
    expect(result.set.pools).toEqual({ "310": ["101", "530"], "611": ["205", "899"] });
    expect(result.set.settings).toMatchObject({ droppedConflicts: 1, originalK: 3 });
    expect(result.warnings[0]).toMatch(/dropped 1 candidates .* every pool cut to K = 2 \(was 3\)/);
  });

  it("rejects pools of the wrong size, duplicates and rows outside the index dataset", () => {
    expect(() =>
      importSamplerPools({ "2": [0, 4, 6], "5": [1, 7] }, okvqa, okvqa, { sampler: "S", file: "p.json" }),
    ).toThrow('p.json, record "5": pool has 2 candidates, expected K = 3 (the size of the first pool)');
    expect(() => importSamplerPools({ "2": [0, 4, 0] }, okvqa, okvqa, { sampler: "S", file: "p.json" })).toThrow(
      /field "\[2\]": 0 appears twice/,
    );
    expect(() => importSamplerPools({ "2": [0, 40, 1] }, okvqa, okvqa, { sampler: "S", file: "p.json" })).toThrow(
      /field "\[1\]": 40 is outside dataset/,
    );
  });

  it("maps anchors through the query dataset and candidates through the index dataset", () => {
    const val = datasetIndex("okvqa-val", [
      { questionId: "9001", imageId: "900" },
      { questionId: "9002", imageId: "3" },
    ]);
    const { set } = importSamplerPools({ "0": [2, 3], "1": [0, 1] }, okvqa, val, { sampler: "S", k: 2 });
    expect(set.pools).toEqual({ "9001": ["310", "422"], "9002": ["101", "205"] });
    // Val row 1 has image 3 like train rows 2 and 3: a same-image leak across splits is caught too.
    expect(() => importSamplerPools({ "1": [2, 0] }, okvqa, val, { sampler: "S", k: 2 })).toThrow(/shares image 3/);
  });

  it("reads sampler name and K from Lever-Plus cache file names (colons and spaces included)", () => {
    expect(samplerFromFileName("okvqa-RandSampler-anchor_sample_num: 800:64.json")).toEqual({
      sampler: "RandSampler",
      k: 64,
    });
    expect(samplerFromFileName("pools.json")).toEqual({});
  });
});

describe("parsePythonJson", () => {
  it("accepts NaN, Infinity and -Infinity outside strings and leaves strings alone", () => {
    const value = parsePythonJson(
      '{"a": NaN, "b": [Infinity, -Infinity], "c": "NaN and Infinity", "d": "q\\"NaN"}',
      "f.json",
    ) as Loose;
    expect(value.a).toBeNaN();
    expect(value.b).toEqual([Infinity, -Infinity]);
    expect(value.c).toBe("NaN and Infinity");
    expect(value.d).toBe('q"NaN');
  });

  it("reports syntax errors with the file, line and column", () => {
    expect(() => parsePythonJson('{\n  "a": 1,\n  "b": }', "f.json")).toThrow(
      /^f\.json: not valid JSON: .* at line 3, column 8/,
    );
  });
});
