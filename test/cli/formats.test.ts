import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeNpy } from "../../src/data/npy.js";
import { loadDatasetEmbedding } from "../../src/store/ingest/embeddings.js";
import { readBeamSet, readPoolSet, readRolloutSet } from "../../src/store/sets.js";
import { Workspace } from "../../src/store/workspace.js";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";
import { stubItem } from "../helpers/items.js";

const FIXTURES = join(import.meta.dirname, "../fixtures/leverplus");
const fixturePath = (name: string) => join(FIXTURES, name);
const fixture = (name: string): unknown => JSON.parse(readFileSync(fixturePath(name), "utf8"));

let dir: string;
let wsDir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-cli-formats-"));
  wsDir = join(dir, "ws");
  const rows = fixture("dataset.json") as { question_id: number; image_id: number }[];
  const items = rows.map((r) => stubItem(String(r.question_id), String(r.image_id)));
  const ws = Workspace.open(wsDir);
  ws.putDataset({ name: "okvqa-train", split: "train", source: "vqa", files: [] }, items);
  ws.close();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const lever = (...args: string[]) => runCli(["-w", wsDir, ...args]);
/** `lever -w <ws> …args`, which must succeed; returns stdout. */
const leverOk = (...args: string[]) => runCliOk(["-w", wsDir, ...args]);

/** `data import-beams FILE` / `data import-pools FILE` into the fixture dataset (queries from it too). */
const importBeams = (file: string) => ["data", "import-beams", file, "--dataset", "okvqa-train"];
const importPools = (file: string) => [
  "data",
  "import-pools",
  file,
  "--dataset",
  "okvqa-train",
  "--queries",
  "okvqa-train",
];

function withWorkspace<T>(fn: (ws: Workspace) => T): T {
  const ws = Workspace.open(wsDir, { create: false });
  try {
    return fn(ws);
  } finally {
    ws.close();
  }
}

describe("lever data import-beams / export-beams", () => {
  it("stores artifacts/beams/<name>.json and exports the identical Lever-Plus file", async () => {
    const out = await leverOk(...importBeams(fixturePath("beams.json")), "--out", "b1");
    expect(out).toContain("imported 3 beams of 2 queries (2 shots, construct_order left → prompt order nearest)");
    expect(out).toContain("artifacts/beams/b1.json");
    const set = withWorkspace((ws) => readBeamSet(ws, "b1"));
    expect(set.queries["310"].beams[0].selected).toEqual(["101", "530"]);
    expect(set.source).toMatchObject({ file: fixturePath("beams.json"), settings: { constructOrder: "left" } });

    const exported = join(dir, "beams-out.json");
    const res = await leverOk("data", "export-beams", "b1", "--out", exported);
    expect(res).toContain("wrote 3 beams of 2 queries");
    expect(JSON.parse(readFileSync(exported, "utf8"))).toEqual(fixture("beams.json"));
    // The same content again is fine; another file at --out is never overwritten silently.
    await leverOk("data", "export-beams", "b1", "--out", exported);
    writeFileSync(exported, "mine\n");
    expectUserError(
      await lever("data", "export-beams", "b1", "--out", exported),
      `${exported}: file exists with other content (pass --replace to overwrite it)`,
    );
    expect(readFileSync(exported, "utf8")).toBe("mine\n");
    await leverOk("data", "export-beams", "b1", "--out", exported, "--replace");
    expect(JSON.parse(readFileSync(exported, "utf8"))).toEqual(fixture("beams.json"));
  });

  it("takes construct_order from a Lever-Plus file name and derives a safe artefact name from it", async () => {
    const name = "vqa-okvqa-RandSampler-construct_order:right-beam_size:5.json";
    copyFileSync(fixturePath("beams-legacy.json"), join(dir, name));
    const out = await leverOk(...importBeams(join(dir, name)));
    expect(out).toContain("construct_order right → prompt order farthest");
    expect(out).toContain("artifacts/beams/vqa-okvqa-RandSampler-construct_order_right-beam_size_5.json");
  });

  it("refuses to overwrite an artefact with other content without --replace and rejects a bad --construct-order", async () => {
    await leverOk(...importBeams(fixturePath("beams.json")), "--out", "b1");
    // the same content again is a no-op; other content needs --replace
    await leverOk(...importBeams(fixturePath("beams.json")), "--out", "b1");
    expectUserError(
      await lever(...importBeams(fixturePath("beams-legacy.json")), "--out", "b1"),
      /artefact already exists with other content \(pass --replace/,
    );
    await leverOk(...importBeams(fixturePath("beams-legacy.json")), "--out", "b1", "--replace");
    expectUserError(
      await lever(...importBeams(fixturePath("beams.json")), "--construct-order", "up"),
      'field "--construct-order": must be one of left, right, got "up"',
    );
  });
});

describe("lever data import-rollouts / export-rollouts", () => {
  it("imports every flavour, prints a summary, and exports the identical file", async () => {
    for (const name of ["rl-v4.json", "rl-k64.json", "rl-balanced.json", "rl-old.json"]) {
      const out = name.replace(".json", "");
      await leverOk("data", "import-rollouts", fixturePath(name), "--dataset", "okvqa-train", "--out", out);
      const exported = join(dir, name);
      await leverOk("data", "export-rollouts", out, "--out", exported);
      expect(JSON.parse(readFileSync(exported, "utf8"))).toEqual(fixture(name));
    }
    const out = await leverOk(
      "data",
      "import-rollouts",
      fixturePath("rl-v4.json"),
      "--dataset",
      "okvqa-train",
      "--out",
      "again",
    );
    expect(out).toContain("imported 4 trajectories of 2 queries (1–3 per query, 0 with a fixed pool)");
    expect(out).toContain("mean VQA accuracy 0.550, 75.0% positive, 1 queries with both positives and negatives");
    expect(withWorkspace((ws) => readRolloutSet(ws, "rl-k64")).queries["310"].pool).toHaveLength(5);
  });

  it("fails with one line naming file, record and field, and stores nothing", async () => {
    const bad = fixture("rl-k64.json") as Record<
      string,
      { pointer_candidates: { pointer: number[]; pointer_global?: number[] }[] }
    >;
    bad["2"].pointer_candidates[0].pointer = [1, 9999];
    delete bad["2"].pointer_candidates[0].pointer_global;
    const file = join(dir, "rl.json");
    writeFileSync(file, JSON.stringify(bad));
    const result = await lever("data", "import-rollouts", file, "--dataset", "okvqa-train");
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `error: ${file}, record "2", field "pointer_candidates[0].pointer[1]": 9999 is outside the pool of 5\n`,
    );
    expect(existsSync(join(wsDir, "artifacts", "rollouts", "rl.json"))).toBe(false);
  });

  it("refuses impossible values and the query among its own candidates: exit 2, one line, nothing stored", async () => {
    type Raw = Record<string, { candidate_pool_ids?: number[]; pointer_candidates: Record<string, unknown>[] }>;
    const cases: [(d: Raw) => void, string][] = [
      [
        (d) => {
          d["2"].pointer_candidates[1].vqa_gt_prob = 3.5;
        },
        'record "2", field "pointer_candidates[1].vqa_gt_prob": must be in [0, 10/3]',
      ],
      [
        (d) => {
          d["5"].candidate_pool_ids = [3, 7, 5];
        },
        'record "5", field "candidate_pool_ids[2]": 5 is the query itself: a query is never its own candidate',
      ],
    ];
    for (const [mutate, message] of cases) {
      const bad = fixture("rl-k64.json") as Raw;
      mutate(bad);
      const file = join(dir, "rl.json");
      writeFileSync(file, JSON.stringify(bad));
      const result = await lever("data", "import-rollouts", file, "--dataset", "okvqa-train");
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(new RegExp(`^error: [^\n]*${message.replace(/[[\]().]/g, "\\$&")}[^\n]*\n$`));
      expect(existsSync(join(wsDir, "artifacts", "rollouts", "rl.json"))).toBe(false);
    }
  });

  it("names a missing dataset and a missing artefact", async () => {
    expectUserError(await lever("data", "import-rollouts", fixturePath("rl-old.json"), "--dataset", "nope"), /nope/);
    expectUserError(
      await lever("data", "export-rollouts", "missing", "--out", join(dir, "x.json")),
      /rollouts\/missing\.json: no such artefact/,
    );
  });
});

describe("lever data import-pools", () => {
  it("reads sampler and K from the cache file name and writes a valid pool set", async () => {
    const name = "okvqa-RandSampler-anchor_sample_num: 3:3.json";
    copyFileSync(fixturePath("sampler-pools.json"), join(dir, name));
    const out = await leverOk(...importPools(join(dir, name)));
    expect(out).toContain("imported 3 pools of K = 3 (sampler RandSampler)");
    const set = withWorkspace((ws) => readPoolSet(ws, "okvqa-RandSampler-anchor_sample_num_3_3"));
    expect(set.pools["310"]).toEqual(["101", "530", "707"]);
    expect(set.settings).toMatchObject({ importedFrom: "leverplus.sampler_cache", droppedConflicts: 0 });
  });

  it("needs --sampler when the file name does not tell it, and reports contract violations", async () => {
    const file = join(dir, "pools.json");
    writeFileSync(file, JSON.stringify({ "2": [0, 3, 4] }));
    expectUserError(await lever(...importPools(file)), /pass --sampler NAME/);
    expectUserError(await lever(...importPools(file), "--sampler", "S"), /shares image 3 with the query/);
    const dropped = await lever(...importPools(file), "--sampler", "S", "--drop-conflicts");
    expect(dropped.code).toBe(0);
    expect(dropped.stderr).toMatch(/^warning: \S*pools\.json: dropped 1 candidates/);
    expect(dropped.stdout).toContain("imported 1 pools of K = 2");
  });

  it("refuses to overwrite a pool set with other content, and --replace (which the refusal names) overwrites it", async () => {
    const file = join(dir, "pools.json");
    writeFileSync(file, JSON.stringify({ "2": [0, 1, 5] }));
    await leverOk(...importPools(file), "--sampler", "S");
    const [first] = Object.values(withWorkspace((ws) => readPoolSet(ws, "pools")).pools);
    writeFileSync(file, JSON.stringify({ "2": [1, 0, 5] }));
    expectUserError(
      await lever(...importPools(file), "--sampler", "S"),
      /pools\/pools\.json: artefact already exists with other content \(pass --replace to overwrite it\)/,
    );
    await leverOk(...importPools(file), "--sampler", "S", "--replace");
    expect(Object.values(withWorkspace((ws) => readPoolSet(ws, "pools")).pools)).toEqual([
      [first[1], first[0], first[2]],
    ]);
  });
});

describe("Lever-Plus files that are not what they claim", () => {
  it("names the file and byte offset of non-UTF-8 input, and refuses a file with no beams", async () => {
    const latin1 = join(dir, "beams-latin1.json");
    const text = readFileSync(fixturePath("beams.json"));
    const at = text.indexOf(0x7d); // replace the first "}" by a Latin-1 "é"
    writeFileSync(latin1, Buffer.concat([text.subarray(0, at), Buffer.from([0xe9]), text.subarray(at)]));
    expectUserError(
      await lever(...importBeams(latin1)),
      `error: ${latin1}: not valid UTF-8 (first bad byte at offset ${at})`,
    );
    const empty = join(dir, "beams-empty.json");
    writeFileSync(empty, "{}");
    expectUserError(
      await lever(...importBeams(empty), "--out", "none"),
      /field "queries": the beam set holds no beams/,
    );
    expect(existsSync(join(wsDir, "artifacts", "beams", "none.json"))).toBe(false);
  });
});

describe("lever embed import", () => {
  it("imports .npy + sidecar ids, normalises, and registers the embedding", async () => {
    const file = join(dir, "clip.npy");
    writeNpy(file, new Float32Array([3, 4, 0, 2]), [2, 2]);
    writeFileSync(join(dir, "clip.ids.json"), JSON.stringify([899, 101]));
    const out = await leverOk("embed", "import", file, "--dataset", "okvqa-train", "--kind", "image", "--normalize");
    expect(out).toContain('imported 2 × 2 image embeddings for "okvqa-train" (source <f4');
    expect(out).toContain("row norms: min 2.000, max 5.000, mean 3.500 → normalised to 1");
    expect(out).toContain("note: 6 of 8 dataset items have no row");
    const matrix = withWorkspace((ws) => loadDatasetEmbedding(ws, "okvqa-train", "image"));
    expect(matrix.ids).toEqual(["899", "101"]);
    expect(Array.from(matrix.data)).toEqual([0.6, 0.8, 0, 1].map(Math.fround));
  });

  it("re-importing a kind needs --replace (identical content is a no-op), and is refused once a run read it", async () => {
    const file = join(dir, "e.npy");
    const fill = (value: number) => writeNpy(file, new Float32Array(16).fill(value), [8, 2]);
    const embed = (kind: string, ...extra: string[]) =>
      lever("embed", "import", file, "--dataset", "okvqa-train", "--dataset-order", "--kind", kind, ...extra);
    fill(0.5);
    expect((await embed("joint")).code).toBe(0);
    expect((await embed("joint")).code).toBe(0); // same content
    expect((await embed("text")).code).toBe(0);
    fill(0.25);
    expectUserError(
      await embed("joint"),
      /field "--kind": dataset "okvqa-train" already has a "joint" embedding with other content \(pass --replace/,
    );
    expect((await embed("joint", "--replace")).code).toBe(0); // no run read it
    // A training run records the file it read; beams, rollouts and evaluation runs its sha256 in their config.
    const readers = withWorkspace((ws) => {
      const sft = ws.createRun({ kind: "sft", config: {}, seed: 1 });
      ws.recordRunInputs(sft, [{ path: ws.artifactPath("embeddings/okvqa-train/joint.npy"), sha256: "x" }]);
      const evalRun = ws.createRun({ kind: "eval", config: { embeddings: { "okvqa-train/text": "y" } }, seed: 1 });
      return { sft, evalRun };
    });
    fill(0.75);
    expectUserError(
      await embed("joint", "--replace"),
      `field "--replace": the "joint" embedding of dataset "okvqa-train" was read by run ${readers.sft}, so it is never replaced`,
    );
    expectUserError(
      await embed("text", "--replace"),
      `field "--replace": the "text" embedding of dataset "okvqa-train" was read by run ${readers.evalRun}, so it is never replaced`,
    );
    expect(withWorkspace((ws) => loadDatasetEmbedding(ws, "okvqa-train", "joint")).data[0]).toBe(0.25);
  });

  it("--dataset-order maps rows to the dataset's items; bad flags are refused", async () => {
    const file = join(dir, "lp.npy");
    writeNpy(file, new Float32Array(16).fill(0.5), [8, 2]);
    const out = await leverOk("embed", "import", file, "--dataset", "okvqa-train", "--dataset-order", "--json");
    expect(JSON.parse(out)).toMatchObject({ kind: "joint", rows: 8, idsSource: "dataset order", missingFromMatrix: 0 });
    expectUserError(
      await lever("embed", "import", file, "--dataset", "okvqa-train", "--kind", "audio"),
      /field "--kind": must be one of image, text, joint/,
    );
    expectUserError(
      await lever("embed", "import", file, "--dataset", "okvqa-train", "--ids", "x.json", "--dataset-order"),
      /either --ids or --dataset-order/,
    );
  });
});
