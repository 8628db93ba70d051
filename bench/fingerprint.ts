/**
 * Output fingerprint of the whole chain: runs a small experiment (synthetic world → pools → beams →
 * SFT → rollouts → RCE → GRPO offline and online → evaluation → comparison) through a `lever` build's
 * CLI in a fresh workspace and hashes what it stored — every artefact file, the predictions, the
 * metrics, the per-item stage results, the VLM cache and the comparison — so that a refactoring can
 * be shown to change no output. It talks to the build only through its command line and reads the
 * workspace's SQLite database directly, so the same script fingerprints an older build:
 *
 *   node dist/bench/fingerprint.js --write before.json --lever /old/checkout/dist/src/cli/main.js
 *   node dist/bench/fingerprint.js --check before.json            # this build; exit 1 on a difference
 *   node dist/bench/fingerprint.js --check before.json --demo     # also `lever demo`'s tables
 *   (--root DIR: where the chain runs, default $TMPDIR/lever-fingerprint; compare fingerprints made at one root)
 *
 * Timestamps are left out, and the workspace's own path is replaced by `<ws>` before hashing, so
 * two runs in different directories compare equal. So are `lever run`'s identities (the `<id>` in a
 * stage record's name, in the `x<id>` of its artefacts, datasets and runs, in `<name>-eval-<id>` and
 * `<name>-guard-<id>`): they are names, which change with the way identities are written (issue 26,
 * point 1), not with outputs; each becomes `<id:stage>` and rows are hashed in sorted order, so an
 * order by name does not count either. Numbers are bit-identical only on the same machine and kernel
 * path (`lever doctor`).
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";

const EXPERIMENT = `name: fp
data:
  synth: { seed: 3, trainItems: 1200, valItems: 300 }
embedding: joint
pools: { sampler: mix, k: 16 }
vlm: { vlm: sim }
beams: { anchors: "random:120", shots: 2, beamSize: 3, budget: 6 }
sft:
  model: { prior: cosine }
  optim: { epochs: 2, lr: 0.0001 }
rollouts: { queries: "random:160", shots: 2 }
rce: { optim: { epochs: 1 }, reward: { mode: hybrid } }
grpo: { optim: { epochs: 2, lr: 0.0003 }, reward: { mode: hybrid } }
online:
  optim: { epochs: 1, lr: 0.0003 }
  reward: { mode: hybrid }
  online: { queries: "random:96", samples: 4 }
eval:
  queries: all
  shots: [1, 2]
  baselines: [zero, random, topk-joint, informed, oracle]
compare: { baseline: topk-joint, subsets: ["all"] }
`;

/**
 * Columns that record when something happened, not what; a run's config hash (its config, fingerprinted
 * itself, names the stages by their identities); and a prediction's prompt hash, which builds
 * before issue 26 made from each image's absolute path, so it differed between two workspaces holding
 * the same prompt (kept out so fingerprints stay comparable with theirs; the prompt's items are in
 * `demonstrations`).
 */
const SKIPPED_COLUMNS = new Set([
  "created_at",
  "started_at",
  "finished_at",
  "heartbeat_at",
  "applied_at",
  "config_hash",
  "prompt_hash",
]);

/** Tables fingerprinted row by row, in a fixed order (leases and the schema history say nothing about outputs). */
const TABLES: Record<string, string> = {
  datasets: "name",
  items: "dataset, question_id",
  embeddings: "dataset, kind",
  runs: "seq",
  stages: "run, name",
  metrics: "id",
  predictions: "run, retriever, shot, question_id",
  stage_items: "run, stage, key",
  vlm_cache: "key",
  run_inputs: "run, path",
};

type Fingerprint = Record<string, Record<string, string>>;

const sha = (text: string | Buffer) => createHash("sha256").update(text).digest("hex").slice(0, 16);

/**
 * A clock stopped at a fixed instant: a checkpoint records when it was written, and its sha256 (which
 * later artefacts, run configs and a selector's name record) would otherwise differ from run to run. It
 * does not advance at all, so how often a timer (a lease's heartbeat) read it on a loaded machine
 * cannot shift a later timestamp.
 */
const FIXED_CLOCK = `data:text/javascript,${encodeURIComponent(`
  const Real = Date; const t = Real.UTC(2026, 0, 1);
  globalThis.Date = class extends Real { constructor(...a) { if (a.length === 0) super(t); else super(...a); }
    static now() { return t; } };`)}`;

function lever(cli: string, ws: string, args: string[]): string {
  const argv = ["--import", FIXED_CLOCK, cli, ...args, "--workspace", ws];
  const r = spawnSync(process.execPath, argv, { encoding: "utf8", maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`lever ${args.join(" ")} exited ${r.status}:\n${r.stderr}`);
  return r.stdout;
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );
}

/** `lever run`'s identities in the workspace, each with its placeholder: the stages' (from their records' names), the evaluation's and the guard's (from their runs' names). */
function identities(ws: string): Map<string, string> {
  const ids = new Map<string, string>();
  const records = join(ws, "artifacts", "experiments", "stages");
  for (const name of existsSync(records) ? readdirSync(records) : []) {
    const m = /^([a-z]+)-([0-9a-f]{10})\.json$/.exec(name);
    if (m !== null) ids.set(m[2], `<id:${m[1]}>`);
  }
  const db = new Database(join(ws, "lever.db"), { readonly: true });
  for (const name of db.prepare("SELECT name FROM runs WHERE name IS NOT NULL").pluck().all() as string[]) {
    const m = /-(eval|guard)-([0-9a-f]{10})$/.exec(name);
    if (m !== null) ids.set(m[2], `<id:${m[1]}>`);
  }
  db.close();
  return ids;
}

/**
 * What says nothing about the outputs: the workspace's path, ISO timestamps (a checkpoint's
 * `createdAt`) and therefore the raw sha256 of a file that holds one — a recorded hash of a workspace
 * file becomes `<sha:its path>` — and `lever run`'s identities (`identities`).
 */
function normaliser(ws: string): (text: string) => string {
  const ids = identities(ws);
  const byHash = new Map<string, string>();
  for (const file of files(join(ws, "artifacts"))) {
    const hex = createHash("sha256").update(readFileSync(file)).digest("hex");
    byHash.set(hex, `<sha:${relative(ws, file)}>`);
    byHash.set(hex.slice(0, 12), `<sha12:${relative(ws, file)}>`); // a selector's retriever name: PATH@sha12
  }
  return (text) =>
    text
      .split(ws)
      .join("<ws>")
      .replace(/summary-[0-9a-f]{12}\.json/g, "summary.json")
      .replace(/"seconds":\s*[0-9.e+-]+/g, '"seconds": 0')
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>")
      // A stage record's hash of an artefact's first and last bytes: the artefact is fingerprinted itself.
      .replace(/"head": "[0-9a-f]{64}"/g, '"head": "<head>"')
      .replace(/\b[0-9a-f]{64}\b|@[0-9a-f]{12}\b/g, (hex) =>
        hex.startsWith("@") ? `@${byHash.get(hex.slice(1)) ?? hex.slice(1)}` : (byHash.get(hex) ?? hex),
      )
      .replace(/summary-[0-9a-f]{12}\.json/g, "summary.json")
      .replace(/[0-9a-f]{10}/g, (hex) => ids.get(hex) ?? hex);
}

const prefixed = (prefix: string, record: Record<string, string>) =>
  Object.fromEntries(Object.entries(record).map(([k, v]) => [`${prefix}${k}`, v]));

function fingerprintWorkspace(ws: string): Fingerprint {
  const norm = normaliser(ws);
  const out: Fingerprint = { files: {}, tables: {} };
  for (const file of files(join(ws, "artifacts")).sort()) {
    // latin1 keeps every byte, so a path inside a binary header (a checkpoint's metadata) is replaced too.
    // An evaluation summary is named by a hash of its retrievers, which name checkpoints by path.
    const key = norm(relative(ws, file).replace(/summary-[0-9a-f]+\.json$/, "summary.json"));
    const bytes = readFileSync(file);
    if (file.endsWith(".safetensors")) {
      // Weights and header apart: a setting recorded in a checkpoint's config changes only its header.
      const end = 8 + Number(bytes.readBigUInt64LE(0));
      out.files[`${key}#header`] = sha(norm(bytes.subarray(8, end).toString("latin1")));
      out.files[`${key}#tensors`] = sha(bytes.subarray(end));
    } else out.files[key] = sha(Buffer.from(norm(bytes.toString("latin1")), "latin1"));
  }
  const db = new Database(join(ws, "lever.db"), { readonly: true });
  for (const [table, order] of Object.entries(TABLES)) {
    const rows = db.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all() as Record<string, unknown>[];
    const kept = rows.map((row) => norm(JSON.stringify(Object.entries(row).filter(([k]) => !SKIPPED_COLUMNS.has(k)))));
    out.tables[table] = sha(kept.sort().join("\n"));
    out.tables[`${table}.rows`] = String(rows.length);
  }
  db.close();
  return out;
}

/**
 * The chain runs at one fixed path (`--root`): an evaluation's bootstrap and permutation streams are
 * keyed by the method's id, which names its checkpoint by path, so two fingerprints compare only when
 * made at the same root, and two cannot run at the same root at once.
 */
const DEFAULT_ROOT = join(tmpdir(), "lever-fingerprint");

function runChain(cli: string, root: string, withDemo: boolean): Fingerprint {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  try {
    const ws = join(root, "ws");
    const file = join(root, "fp.yaml");
    writeFileSync(file, EXPERIMENT);
    lever(cli, ws, ["run", file, "--quiet"]);
    const fp = fingerprintWorkspace(ws);
    const evalRun = readdirSync(join(ws, "artifacts", "eval")).sort()[0];
    const db = new Database(join(ws, "lever.db"), { readonly: true });
    const names = db.prepare("SELECT name FROM datasets ORDER BY name").pluck().all() as string[];
    db.close();
    const [train, val] = ["-train", "-val"].map((end) => names.find((n) => n.endsWith(end)) as string);
    const world = join(ws, "experiments", "data", train.slice(0, -"-train".length), "world.json");
    const evalArgs = ["eval", "--dataset", val, "--index", train, "--queries", "first:120", "--world", world];
    const standalone = [...evalArgs, "--retriever", "random,topk-joint", "--shots", "1,2", "--json"];
    const compareOut = lever(cli, ws, ["compare", evalRun, "--baseline", "topk-joint", "--format", "json"]);
    const evalOut = lever(cli, ws, standalone);
    const norm = normaliser(ws); // after the commands: it knows the hashes of the files they wrote
    fp.commands = {
      "compare --json": sha(norm(compareOut)),
      "eval --json": sha(norm(evalOut)),
    };
    Object.assign(fp.tables, prefixed("after-eval.", fingerprintWorkspace(ws).tables));
    if (withDemo) {
      const demoWs = join(root, "demo");
      lever(cli, demoWs, ["demo", "--quiet"]);
      const comparison = readFileSync(join(demoWs, "artifacts", "experiments", "demo", "comparison.md"), "utf8");
      fp.demo = { "comparison.md": sha(comparison), ...fingerprintWorkspace(demoWs).tables };
    }
    return fp;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

function diff(before: Fingerprint, now: Fingerprint): string[] {
  const lines: string[] = [];
  for (const group of new Set([...Object.keys(before), ...Object.keys(now)]))
    for (const key of new Set([...Object.keys(before[group] ?? {}), ...Object.keys(now[group] ?? {})])) {
      const a = before[group]?.[key];
      const b = now[group]?.[key];
      if (a !== b) lines.push(`${group} ${key}: ${a ?? "(none)"} → ${b ?? "(none)"}`);
    }
  return lines;
}

function main(argv: string[]): number {
  const flag = (name: string) => {
    const i = argv.indexOf(name);
    return i < 0 ? undefined : argv[i + 1];
  };
  const here = dirname(fileURLToPath(import.meta.url));
  const cli = resolve(flag("--lever") ?? join(here, "..", "src", "cli", "main.js"));
  statSync(cli);
  const fp = runChain(cli, resolve(flag("--root") ?? DEFAULT_ROOT), argv.includes("--demo"));
  const write = flag("--write");
  if (write !== undefined) writeFileSync(write, `${JSON.stringify(fp, null, 2)}\n`);
  const check = flag("--check");
  if (check === undefined) {
    if (write === undefined) console.log(JSON.stringify(fp, null, 2));
    return 0;
  }
  const before = JSON.parse(readFileSync(check, "utf8")) as Fingerprint;
  if (!argv.includes("--demo")) delete before.demo;
  const changed = diff(before, fp);
  for (const line of changed) console.log(line);
  console.log(changed.length === 0 ? "fingerprint: identical" : `fingerprint: ${changed.length} difference(s)`);
  return changed.length === 0 ? 0 : 1;
}

process.exitCode = main(process.argv.slice(2));
