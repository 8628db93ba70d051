import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import { itemsHash } from "../../src/store/datasets.js";
import { MIGRATIONS, migrate, SCHEMA_VERSION } from "../../src/store/migrations.js";
import { readPoolSet, writePoolSet } from "../../src/store/sets.js";
import { Workspace } from "../../src/store/workspace.js";
import { LeverError } from "../../src/util/errors.js";
import { sqliteError, userError } from "../../src/util/files.js";
import { canonicalJson, sha256 } from "../../src/util/hash.js";
import { expectUserError, runCli } from "../helpers/cli.js";

function item(id: number, overrides: Partial<VqaItem> = {}): VqaItem {
  return {
    questionId: String(id),
    imageId: String(1000 + id),
    question: `What is ${id}?`,
    answers: Array.from({ length: 10 }, (_, i) => ({ answer: i < 6 ? `a${id}` : "other", confidence: "yes" })),
    answer: `a${id}`,
    questionType: "what is",
    answerType: "other",
    imagePath: null,
    ...overrides,
  };
}

const dataset = { name: "okvqa-train", split: "train", source: "vqa", files: [] };

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-ws-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("Workspace.open", () => {
  it("creates lever.db in WAL mode with foreign keys on and an artifacts folder", () => {
    const ws = Workspace.open(join(dir, "ws"));
    expect(existsSync(join(dir, "ws", "lever.db"))).toBe(true);
    expect(existsSync(join(dir, "ws", "artifacts"))).toBe(true);
    expect(ws.db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(ws.db.pragma("foreign_keys", { simple: true })).toBe(1);
    ws.close();
  });

  it("creates the vlm_cache table with exactly the agreed columns", () => {
    const ws = Workspace.open(dir);
    const cols = ws.db.prepare("PRAGMA table_info(vlm_cache)").all() as {
      name: string;
      type: string;
      notnull: number;
      pk: number;
    }[];
    expect(cols.map((c) => [c.name, c.type, c.notnull, c.pk])).toEqual([
      ["key", "TEXT", 0, 1],
      ["model", "TEXT", 1, 0],
      ["kind", "TEXT", 1, 0],
      ["response", "TEXT", 1, 0],
      ["created_at", "TEXT", 1, 0],
    ]);
    ws.close();
  });

  it("records every migration once and re-opening applies nothing new", () => {
    Workspace.open(dir).close();
    const ws = Workspace.open(dir);
    const rows = ws.db.prepare("SELECT version FROM schema_version ORDER BY version").pluck().all();
    expect(rows).toEqual(MIGRATIONS.map((m) => m.version));
    expect(rows[rows.length - 1]).toBe(SCHEMA_VERSION);
    ws.close();
  });

  it("refuses a database whose schema is newer than the code and leaves it untouched", () => {
    Workspace.open(dir).close();
    const raw = new BetterSqlite3(join(dir, "lever.db"));
    raw
      .prepare("INSERT INTO schema_version (version, description, applied_at) VALUES (?, 'future', 'now')")
      .run(SCHEMA_VERSION + 1);
    raw.close();
    expect(() => Workspace.open(dir)).toThrow(
      new RegExp(`schema version ${SCHEMA_VERSION + 1} is newer than this lever supports \\(${SCHEMA_VERSION}\\)`),
    );
    const check = new BetterSqlite3(join(dir, "lever.db"));
    expect(check.prepare("SELECT MAX(version) FROM schema_version").pluck().get()).toBe(SCHEMA_VERSION + 1);
    check.close();
  });

  it("refuses to create a workspace when create is false, naming the database file", () => {
    expect(() => Workspace.open(join(dir, "none"), { create: false })).toThrow(/none\/lever\.db: no lever workspace/);
    expect(existsSync(join(dir, "none"))).toBe(false);
  });

  it("reports a file that is not a SQLite database as a LeverError", () => {
    writeFileSync(join(dir, "lever.db"), "this is not sqlite, just text that is long enough to have a header....");
    expect(() => Workspace.open(dir)).toThrow(LeverError);
  });
});

describe("datasets and items", () => {
  it("round-trips items in question-id order (numeric, not lexical)", () => {
    const ws = Workspace.open(dir);
    const items = [item(10), item(9), item(100, { imagePath: "/x.jpg" }), item(2)];
    const record = ws.putDataset(dataset, items);
    expect(record.itemCount).toBe(4);
    const loaded = ws.loadItems("okvqa-train");
    expect(loaded.map((i) => i.questionId)).toEqual(["2", "9", "10", "100"]);
    expect(loaded[3]).toEqual(items[2]);
    expect(ws.getDataset("okvqa-train")).toEqual(record);
    expect(ws.listDatasets().map((d) => d.name)).toEqual(["okvqa-train"]);
    ws.close();
  });

  it("round-trips answers with confidences and raw answers present on some answers only", () => {
    const ws = Workspace.open(dir);
    const answers = [
      { answer: "a", confidence: "yes", raw: "A!" },
      { answer: "b" },
      { answer: "c", raw: "C" },
      ...Array.from({ length: 7 }, () => ({ answer: "a", confidence: "maybe" })),
    ];
    ws.putDataset(dataset, [item(1, { answers }), item(2, { answers: answers.map((a) => ({ answer: a.answer })) })]);
    const [one, two] = ws.loadItems("okvqa-train");
    expect(one.answers).toEqual(answers);
    expect(two.answers).toEqual(answers.map((a) => ({ answer: a.answer })));
    const stored = ws.db.prepare("SELECT answer_confidences, raw_answers FROM items WHERE question_id = '2'").get();
    expect(stored).toEqual({ answer_confidences: null, raw_answers: null });
    ws.close();
  });

  it("gives the same items hash whatever the input order and a different one for different content", () => {
    const ws = Workspace.open(dir);
    const a = ws.putDataset({ ...dataset, name: "a" }, [item(1), item(2)]);
    const b = ws.putDataset({ ...dataset, name: "b" }, [item(2), item(1)]);
    const c = ws.putDataset({ ...dataset, name: "c" }, [item(1), item(2, { answer: "changed" })]);
    const moved = ws.putDataset({ ...dataset, name: "d" }, [item(1, { imagePath: "/new/place.jpg" }), item(2)]);
    const confidence = item(2);
    confidence.answers[9] = { answer: confidence.answers[9].answer, confidence: "no" };
    const e = ws.putDataset({ ...dataset, name: "e" }, [item(1), confidence]);
    expect(a.itemsHash).toBe(b.itemsHash);
    expect(moved.itemsHash).toBe(a.itemsHash); // image location is not content
    expect(c.itemsHash).not.toBe(a.itemsHash);
    expect(e.itemsHash).not.toBe(a.itemsHash);
    expect(itemsHash([item(1), item(2)])).toBe(a.itemsHash);
    ws.close();
  });

  it("refuses an existing name unless replace, and replacing swaps the items", () => {
    const ws = Workspace.open(dir);
    ws.putDataset(dataset, [item(1), item(2)]);
    expect(() => ws.putDataset(dataset, [item(3)])).toThrow(/already exists \(use --replace/);
    expect(ws.loadItems("okvqa-train")).toHaveLength(2);
    ws.putDataset(dataset, [item(3)], { replace: true });
    expect(ws.loadItems("okvqa-train").map((i) => i.questionId)).toEqual(["3"]);
    ws.close();
  });

  it("writes nothing when an item is invalid (duplicate question id)", () => {
    const ws = Workspace.open(dir);
    expect(() => ws.putDataset(dataset, [item(1), item(2), item(1)])).toThrow(
      /record "1", field "questionId": duplicated/,
    );
    expect(ws.listDatasets()).toEqual([]);
    expect(ws.db.prepare("SELECT COUNT(*) FROM items").pluck().get()).toBe(0);
    ws.close();
  });

  it("rolls back the dataset row when an insert fails midway", () => {
    const ws = Workspace.open(dir);
    const bad = item(5);
    (bad as unknown as { question: null }).question = null; // violates NOT NULL on the 2nd insert
    expect(() => ws.putDataset(dataset, [item(1), bad])).toThrow();
    expect(ws.getDataset("okvqa-train")).toBeUndefined();
    expect(ws.db.prepare("SELECT COUNT(*) FROM items").pluck().get()).toBe(0);
    ws.close();
  });

  it("rejects dataset names that are unsafe in paths", () => {
    const ws = Workspace.open(dir);
    expect(() => ws.putDataset({ ...dataset, name: "../x" }, [])).toThrow(/field "name"/);
    ws.close();
  });

  it("names the missing dataset when loading unknown items", () => {
    const ws = Workspace.open(dir);
    expect(() => ws.loadItems("nope")).toThrow(/no dataset named "nope"/);
    ws.close();
  });

  it("stores embedding records per (dataset, kind) and drops them when the dataset is replaced", () => {
    const ws = Workspace.open(dir);
    ws.putDataset(dataset, [item(1)]);
    const e = {
      dataset: "okvqa-train",
      kind: "clip-b32",
      path: "emb/a.npy",
      sha256: "ab",
      rows: 1,
      dim: 4,
      dtype: "f32",
    };
    ws.putEmbedding(e);
    expect(ws.getEmbedding("okvqa-train", "clip-b32")).toMatchObject({ ...e, idsPath: null, details: {} });
    expect(() => ws.putEmbedding({ ...e, dataset: "missing" })).toThrow(/no dataset named "missing"/);
    ws.putDataset(dataset, [item(2)], { replace: true });
    expect(ws.getEmbedding("okvqa-train", "clip-b32")).toBeUndefined();
    ws.close();
  });
});

describe("artefacts", () => {
  it("writes artefacts atomically under artifacts/ and returns a relative path and the content sha256", () => {
    const ws = Workspace.open(dir);
    const ref = ws.writeArtifact("runs/r1/pools.json", [Buffer.from("ab"), Buffer.from("c")]);
    expect(ref).toEqual({ path: "runs/r1/pools.json", sha256: sha256("abc") });
    expect(readFileSync(ws.artifactPath(ref.path), "utf8")).toBe("abc");
    ws.close();
  });

  it("refuses artefact paths that leave the artifacts folder", () => {
    const ws = Workspace.open(dir);
    expect(() => ws.artifactPath("../lever.db")).toThrow(/leaves the artifacts folder/);
    expect(() => ws.artifactPath("/etc/passwd")).toThrow(/must be relative/);
    ws.close();
  });
});

describe("runs, stages, metrics", () => {
  it("creates runs with sequential readable ids, canonical config and its hash", () => {
    const ws = Workspace.open(dir);
    const a = ws.createRun({ kind: "eval", config: { b: 1, a: [1, 2] }, seed: 7 });
    const b = ws.createRun({ kind: "sft", config: { a: [1, 2], b: 1 }, seed: 7, parentRunId: a, name: "x" });
    expect([a, b]).toEqual(["eval-0001", "sft-0002"]);
    const ra = ws.getRun(a)!;
    const rb = ws.getRun(b)!;
    expect(ra.configHash).toBe(rb.configHash);
    // No process holds it: an unfinished run nobody works on reads as interrupted (runs.ts).
    expect(rb).toMatchObject({
      parentRunId: a,
      name: "x",
      status: "interrupted",
      seed: 7,
      config: { a: [1, 2], b: 1 },
    });
    expect(ws.listRuns({ configHash: ra.configHash }).map((r) => r.id)).toEqual([a, b]);
    ws.finishRun(a, "failed", "boom");
    expect(ws.getRun(a)).toMatchObject({ status: "failed", error: "boom" });
    expect(ws.listRuns({ status: "interrupted" }).map((r) => r.id)).toEqual([b]);
    expect(() => ws.createRun({ kind: "x", config: {}, seed: 1, parentRunId: "nope" })).toThrow(/no run "nope"/);
    ws.close();
  });

  it("refuses to complete a stage whose artefact is missing or differs from its recorded hash", () => {
    const ws = Workspace.open(dir);
    const run = ws.createRun({ kind: "sft", config: {}, seed: 1 });
    ws.beginStage(run, "train");
    const ref = ws.writeArtifact("ckpt.safetensors", "weights");
    writeFileSync(ws.artifactPath("ckpt.safetensors"), "weig"); // truncated by a crash
    expect(() => ws.completeStage(run, "train", [ref])).toThrow(/artefact sha256 is/);
    expect(() => ws.completeStage(run, "train", [{ path: "gone.bin", sha256: "x" }])).toThrow(/artefact is missing/);
    expect(ws.getStage(run, "train")?.status).toBe("running");
    ws.close();
  });

  it("tracks stage progress and logs metrics in order, keeping NaN visible", () => {
    const ws = Workspace.open(dir);
    const run = ws.createRun({ kind: "sft", config: {}, seed: 1 });
    ws.beginStage(run, "train");
    ws.updateStageProgress(run, "train", 3, 10);
    expect(ws.getStage(run, "train")).toMatchObject({ progressDone: 3, progressTotal: 10 });
    ws.logMetrics([
      { runId: run, stage: "train", step: 1, name: "loss", value: 2.5 },
      { runId: run, stage: "train", step: 2, name: "loss", value: Number.NaN },
      { runId: run, stage: "val", epoch: 0, name: "loss", value: 1.25 },
    ]);
    const train = ws.getMetrics(run, { stage: "train" });
    expect(train.map((m) => [m.step, m.value])).toEqual([
      [1, 2.5],
      [2, Number.NaN],
    ]);
    expect(ws.getMetrics(run, { name: "loss" })).toHaveLength(3);
    expect(() => ws.updateStageProgress(run, "other", 1, 2)).toThrow(/not running/);
    ws.close();
  });
});

describe("predictions", () => {
  it("upserts per (run, retriever, shot, question) and treats failures as not yet predicted", () => {
    const ws = Workspace.open(dir);
    const run = ws.createRun({ kind: "eval", config: {}, seed: 1 });
    const base = {
      runId: run,
      retriever: "random",
      shot: 2,
      demonstrations: ["5", "7"],
      promptHash: "h",
      rawAnswer: "Dog",
      answer: "dog",
      accuracy: 0.6,
      failure: null,
    };
    ws.putPredictions([
      { ...base, questionId: "10" },
      { ...base, questionId: "9", accuracy: null, answer: null, rawAnswer: null, failure: "timeout" },
    ]);
    expect(ws.hasPrediction(run, "random", 2, "10")).toBe(true);
    expect(ws.hasPrediction(run, "random", 2, "9")).toBe(false);
    expect([...ws.predictedQuestionIds(run, "random", 2)]).toEqual(["10"]);
    ws.putPredictions([{ ...base, questionId: "9", accuracy: 1 }]);
    const rows = ws.getPredictions(run, { retriever: "random", shot: 2 });
    expect(rows.map((r) => [r.questionId, r.accuracy, r.failure])).toEqual([
      ["9", 1, null],
      ["10", 0.6, null],
    ]);
    expect(rows[0].demonstrations).toEqual(["5", "7"]);
    expect(() => ws.putPredictions([{ ...base, questionId: "1", accuracy: 10.5 }])).toThrow(/accuracy must be in/);
    expect(ws.getPredictions(run)).toHaveLength(2);
    ws.close();
  });
});

describe("opening read-only, and concurrent writers", () => {
  it("reads a workspace opened read-only; a write through it says read-only; nothing is created without one", () => {
    const writer = Workspace.open(dir);
    writer.putDataset(dataset, [item(1), item(2)]);
    writer.close();
    const ws = Workspace.open(dir, { readOnly: true });
    expect(ws.readOnly).toBe(true);
    expect(ws.listDatasets().map((d) => d.itemCount)).toEqual([2]);
    let thrown: unknown;
    try {
      ws.putDataset({ ...dataset, name: "other" }, [item(3)]);
    } catch (error) {
      thrown = error;
    }
    expect(userError(thrown)?.message).toMatch(/^the workspace is read-only .*\(SQLITE_READONLY\)$/);
    expect((sqliteError(thrown, ws.dbFile) as Error).message).toMatch(/lever\.db: the workspace is read-only/);
    ws.close();
    expect(() => Workspace.open(join(dir, "none"), { readOnly: true })).toThrow(/none\/lever\.db: no lever workspace/);
    expect(existsSync(join(dir, "none"))).toBe(false);
  });

  it("upgrades an older workspace once when it is opened read-only but may be written", () => {
    const raw = new BetterSqlite3(join(dir, "lever.db"));
    migrate(raw, "lever.db", MIGRATIONS.slice(0, 1));
    raw.close();
    const ws = Workspace.open(dir, { readOnly: true });
    expect(ws.db.prepare("SELECT MAX(version) FROM schema_version").pluck().get()).toBe(SCHEMA_VERSION);
    expect(ws.listRuns()).toEqual([]);
    ws.close();
  });

  it("takes the write lock at the start of a transaction (BEGIN IMMEDIATE), so no reader-turned-writer is refused", () => {
    const ws = Workspace.open(dir);
    const other = new BetterSqlite3(join(dir, "lever.db"));
    other.pragma("busy_timeout = 0");
    const codeInside = ws.transaction(() => {
      ws.getDataset("x"); // only a read so far: a deferred transaction would hold no write lock yet
      try {
        other.exec("BEGIN IMMEDIATE");
        other.exec("ROLLBACK");
        return "free";
      } catch (error) {
        return (error as { code: string }).code;
      }
    });
    expect(codeInside).toBe("SQLITE_BUSY");
    other.close();
    ws.close();
  });
});

describe("no silent overwrite, no silent nonsense", () => {
  it("refuses an empty dataset", () => {
    const ws = Workspace.open(dir);
    expect(() => ws.putDataset(dataset, [])).toThrow(/field "items": dataset "okvqa-train" has no items/);
    expect(ws.listDatasets()).toEqual([]);
    ws.close();
  });

  it("never replaces a named artefact that a run read, even with replace; others are replaced with it", () => {
    const ws = Workspace.open(dir);
    const pools = (ids: string[]) => ({
      format: "lever.pools/1" as const,
      sampler: "random",
      settings: {},
      k: 2,
      seed: 0,
      indexDataset: "train",
      queryDataset: "train",
      pools: { q1: ids },
    });
    const ref = writePoolSet(ws, "p", pools(["a", "b"]));
    writePoolSet(ws, "p", pools(["a", "c"]), { replace: true }); // no run read it yet
    expect(readPoolSet(ws, "p").pools.q1).toEqual(["a", "c"]);
    const run = ws.createRun({ kind: "sft", config: {}, seed: 1 });
    ws.recordRunInputs(run, [{ path: ws.artifactPath(ref.path), sha256: "x" }]);
    expect(ws.runsReading(ref.path)).toEqual([run]);
    expect(() => writePoolSet(ws, "p", pools(["b", "c"]), { replace: true })).toThrow(
      /pools\/p\.json: artefact is an input of run sft-0001, so it is never replaced; write under another name/,
    );
    expect(() => writePoolSet(ws, "p", pools(["b", "c"]))).toThrow(/pass --replace/);
    writePoolSet(ws, "p", pools(["a", "c"])); // identical content: a no-op, allowed
    expect(() => writePoolSet(ws, "empty", { ...pools([]), pools: {} })).toThrow(/holds no pools/);
    ws.close();
  });
});

describe("stage items", () => {
  it("stores done values and failures per (run, stage, key), replaces by key and lists in question-id order", () => {
    const ws = Workspace.open(dir);
    const run = ws.createRun({ kind: "beams", config: {}, seed: 1 });
    ws.putStageItems([
      { runId: run, stage: "beams", key: "10", status: "done", value: { beams: [1, 2] } },
      { runId: run, stage: "beams", key: "9", status: "failed", error: "http-5xx: down" },
      { runId: run, stage: "other", key: "1", status: "done", value: 3 },
    ]);
    expect(ws.getStageItems(run, "beams")).toEqual([
      { runId: run, stage: "beams", key: "9", status: "failed", error: "http-5xx: down" },
      { runId: run, stage: "beams", key: "10", status: "done", value: { beams: [1, 2] } },
    ]);
    ws.putStageItems([{ runId: run, stage: "beams", key: "9", status: "done", value: null }]);
    expect(ws.getStageItems(run, "beams").map((r) => [r.key, r.status])).toEqual([
      ["9", "done"],
      ["10", "done"],
    ]);
    expect(() =>
      ws.putStageItems([{ runId: "beams-9999", stage: "beams", key: "1", status: "done", value: 1 }]),
    ).toThrow(/FOREIGN KEY/);
    ws.close();
  });
});

describe("paths inside the workspace and passwords in URLs, as stored", () => {
  it("stores workspace paths workspace-relative (a sibling folder with the same prefix stays absolute), URL passwords as ***", () => {
    const root = mkdtempSync(join(tmpdir(), "lever-stored-"));
    const ws = Workspace.open(join(root, "ws"));
    try {
      const inside = join(ws.dir, "artifacts", "runs", "x", "best.safetensors");
      const sibling = join(root, "ws2", "file.json");
      const config = {
        init: inside,
        retriever: `selector:${inside}@abc`,
        other: sibling,
        root: ws.dir,
        vlm: { baseUrls: ["http://lever:pa55word@host:8000/v1"] },
      };
      expect(ws.stored(config)).toEqual({
        init: "<workspace>/artifacts/runs/x/best.safetensors",
        retriever: "selector:<workspace>/artifacts/runs/x/best.safetensors@abc",
        other: sibling,
        root: "<workspace>",
        vlm: { baseUrls: ["http://lever:***@host:8000/v1"] },
      });
      const id = ws.createRun({ kind: "sft", config, seed: 0 });
      const run = ws.getRun(id)!;
      expect(run.config).toEqual({ ...config, vlm: { baseUrls: ["http://lever:***@host:8000/v1"] } });
      // The identity does not depend on where the workspace is, nor on the password.
      expect(run.configHash).toBe(ws.configHash(config));
      expect(ws.configHash({ ...config, vlm: { baseUrls: ["http://lever:other@host:8000/v1"] } })).toBe(run.configHash);
      ws.finishRun(id, "failed", "cannot reach http://lever:pa55word@host:8000");
      expect(ws.getRun(id)?.error).toBe("cannot reach http://lever:***@host:8000");
    } finally {
      ws.close();
    }
    for (const file of ["lever.db", "lever.db-wal"])
      if (existsSync(join(root, "ws", file)))
        expect(readFileSync(join(root, "ws", file)).includes("pa55word"), file).toBe(false);
    rmSync(root, { recursive: true, force: true });
  });
});

describe("schema step 4: an older workspace's absolute paths become workspace-relative", () => {
  it("rewrites run configs (and their hashes), datasets, items, predictions and stage records, so the workspace can be moved", () => {
    const root = mkdtempSync(join(tmpdir(), "lever-step4-"));
    const old = join(root, "ws");
    mkdirSync(join(old, "artifacts", "experiments", "stages"), { recursive: true });
    const raw = new BetterSqlite3(join(old, "lever.db"));
    migrate(raw, join(old, "lever.db"), MIGRATIONS.slice(0, 3));
    const ckpt = join(old, "artifacts", "runs", "sft-0001", "sft", "best.safetensors");
    const config = { init: ckpt, vlm: { baseUrls: ["http://u:pw@h"] }, other: "/data/coco" };
    const now = new Date().toISOString();
    raw
      .prepare(
        "INSERT INTO runs (id, kind, config, config_hash, seed, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      )
      .run("rce-0001", "rce", canonicalJson(config), sha256(canonicalJson(config)), 0, "done", now);
    const image = join(old, "experiments", "data", "x1", "images", "1.jpg");
    raw
      .prepare(
        "INSERT INTO datasets (name, split, source, files, item_count, items_hash, images, details, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      )
      .run(
        "d",
        "val",
        "synth",
        JSON.stringify([{ role: "q", path: join(old, "q.json"), sha256: "s", bytes: 1 }]),
        1,
        "h",
        join(old, "{image_id}.jpg"),
        "{}",
        now,
      );
    raw
      .prepare(
        "INSERT INTO items (dataset, question_id, image_id, question, answers, answer, question_type, answer_type, image_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      )
      .run("d", "1", "1", "q?", "[]", "a", "what", "other", image);
    raw
      .prepare(
        "INSERT INTO predictions (run, retriever, shot, question_id, demonstrations, prompt_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      )
      .run("rce-0001", `selector:${ckpt}`, 1, "1", "[]", "p", now);
    writeFileSync(
      join(old, "artifacts", "experiments", "stages", "rce-x.json"),
      JSON.stringify({ stage: "rce", id: "x", outputs: { runId: "rce-0001", bestFile: ckpt } }),
    );
    raw.close();

    Workspace.open(old).close(); // the upgrade
    const moved = join(root, "moved");
    renameSync(old, moved);
    const ws = Workspace.open(moved);
    try {
      const run = ws.getRun("rce-0001")!;
      const movedCkpt = join(moved, "artifacts", "runs", "sft-0001", "sft", "best.safetensors");
      expect(run.config).toEqual({ ...config, init: movedCkpt, vlm: { baseUrls: ["http://u:***@h"] } });
      expect(run.configHash).toBe(ws.configHash(run.config));
      expect(ws.getDataset("d")).toMatchObject({
        files: [{ path: join(moved, "q.json") }],
        images: join(moved, "{image_id}.jpg"),
      });
      expect(ws.loadItems("d")[0].imagePath).toBe(join(moved, "experiments", "data", "x1", "images", "1.jpg"));
      const predictions = ws.getPredictions("rce-0001");
      expect(predictions.map((p) => p.retriever)).toEqual([`selector:${movedCkpt}`]);
      expect(ws.hasPrediction("rce-0001", `selector:${movedCkpt}`, 1, "1")).toBe(true);
      const record = JSON.parse(readFileSync(join(moved, "artifacts", "experiments", "stages", "rce-x.json"), "utf8"));
      expect(record.outputs.bestFile).toBe("<workspace>/artifacts/runs/sft-0001/sft/best.safetensors");
    } finally {
      ws.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("a truncated stage record stops the upgrade with one line naming the record file, exit 2, nothing applied", async () => {
    const old = join(dir, "ws");
    const stages = join(old, "artifacts", "experiments", "stages");
    mkdirSync(stages, { recursive: true });
    const raw = new BetterSqlite3(join(old, "lever.db"));
    migrate(raw, join(old, "lever.db"), MIGRATIONS.slice(0, 3));
    raw.close();
    const record = join(stages, "rce-x.json");
    writeFileSync(record, '{"stage": "rce", "id": "x", "outputs": {"runId": "rce-0');
    const result = await runCli(["--workspace", old, "status"]);
    expectUserError(result, `${record}: not valid JSON (`);
    const check = new BetterSqlite3(join(old, "lever.db"), { readonly: true });
    expect(check.prepare("SELECT MAX(version) FROM schema_version").pluck().get()).toBe(3);
    check.close();
  });
});
