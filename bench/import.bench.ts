/**
 * Import benchmark (issue 2 requirement): a synthetic VQAv2-sized train split — 443,757 questions,
 * ten answers each, official file schema and realistic string lengths (~40 MB questions,
 * ~330 MB annotations) — must import in < 60 s with < 3 GiB peak RSS on a 2-core machine.
 * The files are generated into a temp dir (removed afterwards); the import runs through the real
 * CLI in a child process whose peak RSS is read from `process.resourceUsage().maxRSS`.
 * LEVER_BENCH_IMPORT_QUESTIONS=N scales the set down for a quick check.
 */
import { spawnSync } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Rng } from "../src/util/rng.js";
import { sized } from "./common.js";

const FULL_SIZE = 443_757;
const QUESTIONS_PER_IMAGE = 5.36; // VQAv2 train: 443,757 questions over 82,783 images

const NOUNS = ["man", "woman", "dog", "cat", "bus", "train", "table", "plate", "umbrella", "horse", "kite", "sign"];
const ADJECTIVES = ["red", "wooden", "open", "empty", "old", "wet", "large", "striped"];
const TEMPLATES: [string, string, "yes/no" | "number" | "other"][] = [
  ["what color is the", "What color is the {n}?", "other"],
  ["how many", "How many {n}s are in the picture?", "number"],
  ["is the", "Is the {n} {a}?", "yes/no"],
  ["what is the", "What is the {n} doing on the left side of the image?", "other"],
  ["are there", "Are there any {n}s visible?", "yes/no"],
  ["what is", "What is on the {n}?", "other"],
  ["where is the", "Where is the {n} sitting?", "other"],
  ["does the", "Does the {n} look {a}?", "yes/no"],
];

/** Pseudo-words from syllables: a large, realistic-length answer vocabulary. */
function vocabulary(rng: Rng, size: number): string[] {
  const syllables = ["ba", "ker", "lo", "mi", "tan", "gre", "son", "ple", "ri", "dow", "ca", "nel", "sta", "tion"];
  const words = new Set<string>();
  while (words.size < size) {
    const parts = 1 + rng.int(3);
    let w = "";
    for (let i = 0; i < parts; i++) w += syllables[rng.int(syllables.length)];
    words.add(
      rng.int(6) === 0 ? `${w} ${syllables[rng.int(syllables.length)]}${syllables[rng.int(syllables.length)]}` : w,
    );
  }
  return [...words];
}

class ChunkWriter {
  private parts: string[] = [];
  private size = 0;
  private readonly fd: number;
  constructor(path: string) {
    this.fd = openSync(path, "w");
  }
  write(text: string): void {
    this.parts.push(text);
    this.size += text.length;
    if (this.size > 1 << 20) this.flush();
  }
  flush(): void {
    writeSync(this.fd, this.parts.join(""));
    this.parts = [];
    this.size = 0;
  }
  close(): void {
    this.flush();
    closeSync(this.fd);
  }
}

/** Writes the two official files (python json.dump spacing, as the real ones are). */
export function generate(dir: string, count: number): { questions: string; annotations: string } {
  const rng = new Rng(2014);
  const words = vocabulary(rng.child("vocabulary"), 3000);
  const questionsPath = join(dir, "v2_OpenEnded_mscoco_train2014_questions.json");
  const annotationsPath = join(dir, "v2_mscoco_train2014_annotations.json");
  const q = new ChunkWriter(questionsPath);
  const a = new ChunkWriter(annotationsPath);
  const info =
    '{"description": "This is v2.0 of the VQA dataset.", "url": "http://visualqa.org", "version": "2.0", "year": 2017, "contributor": "VQA Team", "date_created": "2017-04-26 17:07:13"}';
  const license =
    '{"url": "http://creativecommons.org/licenses/by/4.0/", "name": "Creative Commons Attribution 4.0 International License"}';
  q.write(`{"info": ${info}, "task_type": "Open-Ended", "data_type": "mscoco", "license": ${license}, `);
  q.write('"data_subtype": "train2014", "questions": [');
  a.write(`{"info": ${info}, "license": ${license}, "data_subtype": "train2014", "annotations": [`);
  const draw = rng.child("items");
  let imageId = 9;
  let k = 0;
  for (let i = 0; i < count; i++) {
    if (i === 0 || draw.next() < 1 / QUESTIONS_PER_IMAGE) {
      imageId += 1 + draw.int(13);
      k = 0;
    }
    const questionId = imageId * 1000 + k++;
    const [qtype, template, atype] = TEMPLATES[draw.int(TEMPLATES.length)];
    const question = template
      .replace("{n}", NOUNS[draw.int(NOUNS.length)])
      .replace("{a}", ADJECTIVES[draw.int(ADJECTIVES.length)]);
    const pool =
      atype === "yes/no"
        ? ["yes", "no"]
        : atype === "number"
          ? ["1", "2", "3", "4", "5", "10"]
          : [words[draw.int(words.length)], words[draw.int(words.length)], words[draw.int(words.length)]];
    const answers: string[] = [];
    for (let j = 0; j < 10; j++) answers.push(draw.next() < 0.65 ? pool[0] : pool[draw.int(pool.length)]);
    const sep = i === 0 ? "" : ", ";
    q.write(`${sep}{"image_id": ${imageId}, "question": ${JSON.stringify(question)}, "question_id": ${questionId}}`);
    const answerJson = answers
      .map(
        (ans, j) =>
          `{"answer": ${JSON.stringify(ans)}, "answer_confidence": "${draw.int(5) === 0 ? "maybe" : "yes"}", "answer_id": ${j + 1}}`,
      )
      .join(", ");
    a.write(
      `${sep}{"question_type": "${qtype}", "multiple_choice_answer": ${JSON.stringify(pool[0])}, "answers": [${answerJson}], "image_id": ${imageId}, "answer_type": "${atype}", "question_id": ${questionId}}`,
    );
  }
  q.write("]}");
  a.write('], "data_type": "mscoco"}');
  q.close();
  a.close();
  return { questions: questionsPath, annotations: annotationsPath };
}

/** Runs the compiled CLI in a child process; returns wall time, peak RSS and output. */
function runCli(args: string[]): { seconds: number; cpuSeconds: number; maxRssMiB: number; stdout: string } {
  const here = dirname(fileURLToPath(import.meta.url));
  const main = join(here, "..", "src", "cli", "main.js");
  const driver = `
    process.argv = [process.argv[0], ${JSON.stringify(main)}, ...JSON.parse(process.env.LEVER_BENCH_ARGS)];
    process.on("exit", () => {
      const r = process.resourceUsage();
      process.stderr.write("\\nBENCH_MAX_RSS_KB=" + r.maxRSS + " BENCH_CPU_US=" + (r.userCPUTime + r.systemCPUTime) + "\\n");
    });
    await import(${JSON.stringify(new URL(`file://${main}`).href)});
  `;
  const start = process.hrtime.bigint();
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", driver], {
    env: { ...process.env, LEVER_BENCH_ARGS: JSON.stringify(args) },
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const usage = /BENCH_MAX_RSS_KB=(\d+) BENCH_CPU_US=(\d+)/.exec(child.stderr ?? "");
  if (child.status !== 0 || usage === null) {
    throw new Error(`lever ${args.join(" ")} failed (${child.status}):\n${child.stderr}`);
  }
  return { seconds, cpuSeconds: Number(usage[2]) / 1e6, maxRssMiB: Number(usage[1]) / 1024, stdout: child.stdout };
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

export async function run(): Promise<void> {
  const count = Number(process.env.LEVER_BENCH_IMPORT_QUESTIONS ?? sized(FULL_SIZE, 100));
  const dir = mkdtempSync(join(tmpdir(), "lever-bench-import-"));
  try {
    const genStart = Date.now();
    const files = generate(dir, count);
    const genSeconds = (Date.now() - genStart) / 1000;
    const coco = join(dir, "coco");
    mkdirSync(join(coco, "train2014"), { recursive: true }); // no images: every path is checked and missing
    const ws = join(dir, "ws");
    const imported = runCli([
      "--workspace",
      ws,
      "data",
      "import",
      "--format",
      "vqa",
      "--questions",
      files.questions,
      "--annotations",
      files.annotations,
      "--images",
      coco,
      "--split",
      "train",
      "--name",
      "vqav2-train",
    ]);
    const inspected = runCli(["--workspace", ws, "data", "inspect", "vqav2-train", "--json"]);
    const summary = JSON.parse(inspected.stdout) as { items: number };
    if (summary.items !== count) throw new Error(`imported ${summary.items} items, expected ${count}`);
    const rows: [string, string][] = [
      ["questions", String(count)],
      ["questions file", mib(statSync(files.questions).size)],
      ["annotations file", mib(statSync(files.annotations).size)],
      ["generate files (s)", genSeconds.toFixed(1)],
      ["import wall time (s)", imported.seconds.toFixed(1)],
      ["import CPU time, user+sys (s)", imported.cpuSeconds.toFixed(1)],
      ["import peak RSS", `${imported.maxRssMiB.toFixed(0)} MiB`],
      ["import questions/s", Math.round(count / imported.seconds).toLocaleString("en-US")],
      ["lever.db size", mib(statSync(join(ws, "lever.db")).size + walSize(ws))],
      ["inspect (load all items) wall time (s)", inspected.seconds.toFixed(1)],
      ["inspect CPU time (s)", inspected.cpuSeconds.toFixed(1)],
      ["machine load average (1 min) at end", loadavg()[0].toFixed(1)],
      ["inspect peak RSS", `${inspected.maxRssMiB.toFixed(0)} MiB`],
      [
        "requirement (< 60 s, < 3 GiB)",
        count < FULL_SIZE
          ? "n/a (scaled down)"
          : imported.seconds < 60 && imported.maxRssMiB < 3072
            ? "met"
            : "NOT MET",
      ],
    ];
    const width = Math.max(...rows.map((r) => r[0].length));
    for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function walSize(ws: string): number {
  try {
    return statSync(join(ws, "lever.db-wal")).size;
  } catch {
    return 0;
  }
}
