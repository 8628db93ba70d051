import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildProgram } from "../../src/cli/program.js";
import { fieldHelp, settingFields } from "../../src/config/settings.js";
import type { ComparisonResult } from "../../src/metrics/compare.js";
import { CompareSettingsSchema, ReportSettingsSchema } from "../../src/report/options.js";
import { simWorkspace } from "../eval/sim-workspace.js";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";
import { summaryCells } from "../helpers/summary.js";

let wsDir: string;
let worldFile: string;
let evalJson: { runId: string; summary: ComparisonResult };

const lever = (...args: string[]) => runCli(["--workspace", wsDir, ...args]);
const evalArgs = (seed: string) => [
  "--workspace",
  wsDir,
  "eval",
  "--dataset",
  "val",
  "--index",
  "train",
  "--queries",
  "first:20",
  "--shots",
  "1,2",
  "--retriever",
  "random,topk-image",
  "--world",
  worldFile,
  "--resamples",
  "200",
  "--seed",
  seed,
];

beforeAll(async () => {
  const sim = simWorkspace({ trainItems: 200, valItems: 30, concepts: 6 });
  wsDir = sim.ws.dir;
  worldFile = sim.worldFile;
  const run = sim.ws.createRun({ kind: "sft", config: { stage: "sft", dataset: "train" }, seed: 1, name: "tiny-sft" });
  sim.ws.logMetrics([0, 1, 2].map((step) => ({ runId: run, stage: "sft", step, name: "loss", value: 1 / (step + 1) })));
  sim.ws.finishRun(run, "done");
  sim.ws.close();
  evalJson = JSON.parse(await runCliOk([...evalArgs("0"), "--json"]));
  await runCliOk(evalArgs("1"));
});

describe("lever compare and lever report settings", () => {
  it("are flags generated from their schemas, with the description and default in --help", () => {
    const program = buildProgram();
    for (const [name, schema] of [
      ["compare", CompareSettingsSchema],
      ["report", ReportSettingsSchema],
    ] as const) {
      const command = program.commands.find((c) => c.name() === name)!;
      const help = command.helpInformation().replace(/\s+/g, " ");
      for (const field of settingFields(schema)) {
        expect(
          command.options.some((o) => o.long === `--${field.flag}`),
          `${name} --${field.flag}`,
        ).toBe(true);
        expect(help).toContain(fieldHelp(field).replace(/\s+/g, " ").slice(0, 40));
      }
      expect(command.options.some((o) => o.long === "--config")).toBe(true);
    }
  });

  it("can come from a settings file, flags overriding it", async () => {
    const file = join(wsDir, "..", "compare.json");
    writeFileSync(file, JSON.stringify({ subsets: ["all"], format: "csv", resamples: 150 }));
    const csv = await runCliOk(["--workspace", wsDir, "compare", evalJson.runId, "--config", file]);
    expect(csv.split("\n")[0]).toMatch(/^subset,questions,/);
    expect(csv.split("\n").filter((l) => l.startsWith("all,")).length).toBe(4);
    const table = await runCliOk([
      "--workspace",
      wsDir,
      "compare",
      evalJson.runId,
      "--config",
      file,
      "--format",
      "table",
    ]);
    expect(table).toContain("(150 resamples, seed 0)");
  });
});

describe("lever compare", () => {
  it("gives lever eval --json's interval and verdict for every row against the same baseline (one engine)", async () => {
    const result: ComparisonResult = JSON.parse(
      await runCliOk(["--workspace", wsDir, "compare", evalJson.runId, "--json", "--resamples", "200"]),
    );
    expect(result.baseline).toBe(`${evalJson.runId}/random`);
    expect(evalJson.summary.baseline).toBe(result.baseline);
    expect(result.settings).toEqual(evalJson.summary.settings);
    const table = result.tables.find((t) => t.label === "all")!;
    expect(table.questions).toBe(20);
    const [mine] = evalJson.summary.tables;
    expect(mine.label).toBe("all");
    // Every number of every cell: accuracy and its interval, Δ and its interval, p, Holm's p, the verdict, MDE.
    expect(table.rows).toEqual(mine.rows);
    expect(table.comparisons).toBe(mine.comparisons);
    const compared = summaryCells(evalJson.summary).filter((c) => c.comparison !== null);
    expect(compared.map((c) => `${c.retriever}@${c.shot}`)).toEqual(["topk-image@1", "topk-image@2"]);
    for (const c of compared) expect(c.comparison!.ci.upper).toBeGreaterThan(c.comparison!.ci.lower);
    // --json is --format json.
    const formatJson = await runCliOk(["--workspace", wsDir, "compare", evalJson.runId, "--format", "json"]);
    expect(await runCliOk(["--workspace", wsDir, "compare", evalJson.runId, "--json"])).toBe(formatJson);
    expectUserError(await lever("compare", evalJson.runId, "--json", "--format", "csv"), 'field "--json"');
  });

  it("prints per-subset tables with the baseline marked, and notes subsets larger than the questions", async () => {
    const { code, stdout } = await lever("compare", evalJson.runId, "--subsets", "10,all,100", "--resamples", "200");
    expect(code).toBe(0);
    expect(stdout).toContain("== first 10 questions (10, question-id order) ==");
    expect(stdout).toContain("== all questions (20, question-id order) ==");
    expect(stdout).toMatch(/\nrandom \(baseline\)\s+\d+\.\d\d \[/);
    expect(stdout).toMatch(/\ntopk-image\s+1\s+20\s+0\s+[+-]?\d/);
    expect(stdout).toContain('note: subset "first 100" skipped: only 20 questions were evaluated');
  });

  it("aggregates a seed group across runs and writes CSV", async () => {
    const csv = (
      await runCliOk([
        "--workspace",
        wsDir,
        "compare",
        "eval-0002",
        "eval-0003",
        "--baseline",
        "eval-0002/random",
        "--seed-group",
        "topk=eval-0002/topk-image+eval-0003/topk-image",
        "--subsets",
        "all",
        "--format",
        "csv",
        "--resamples",
        "200",
      ])
    ).split("\n");
    const header = csv[0].split(",");
    const rows = csv
      .slice(1)
      .filter(Boolean)
      .map((line) => Object.fromEntries(line.split(",").map((v, i) => [header[i], v])));
    expect(rows.map((r) => `${r.row}@${r.shot}`)).toEqual([
      "eval-0002/random@1",
      "eval-0002/random@2",
      "topk@1",
      "topk@2",
      "eval-0003/random@1",
      "eval-0003/random@2",
    ]);
    const topk = rows.find((r) => r.row === "topk")!;
    expect(topk).toMatchObject({ seeds: "2", test: "sign-flip", baseline: "eval-0002/random", pairs: "20" });
  });

  it("reports bad input as one line naming the problem, with exit code 2", async () => {
    expectUserError(await lever("compare", "nope"), 'no run "nope"');
    expectUserError(await lever("compare", "tiny-sft"), "is a sft run, not an evaluation run");
    expectUserError(await lever("compare", evalJson.runId, "--subsets", "0"), 'field "--subsets"');
    expectUserError(
      await lever("compare", evalJson.runId, "--resamples", "1e8"),
      'error: field "--resamples": at most 1000000 (1e6): more only takes longer, the intervals no longer move',
    );
    expectUserError(await lever("compare", evalJson.runId, "--format", "xml"), 'field "--format"');
    expectUserError(await lever("compare", evalJson.runId, "--baseline", "oracle"), 'no method "oracle"');
    expectUserError(
      await lever("compare", "eval-0002", "eval-0003", "--baseline", "random"),
      "matches several methods",
    );
    expectUserError(
      await lever("compare", evalJson.runId, "--seed-group", `g=${evalJson.runId}/random`),
      'field "--seed-group"',
    );
    expectUserError(
      await lever("compare", evalJson.runId, "--seed-group", `g=${evalJson.runId}/random+nope`),
      'no method "nope"',
    );
  });
});

describe("lever report", () => {
  it("writes the HTML file atomically where asked and prints its path", async () => {
    const out = join(wsDir, "..", "my-report.html");
    const stdout = await runCliOk([
      "--workspace",
      wsDir,
      "report",
      evalJson.runId,
      "tiny-sft",
      "--out",
      out,
      "--resamples",
      "200",
      "--examples",
      "2",
      "--title",
      "Selector <study>",
    ]);
    expect(stdout).toBe(`${out}\n`);
    const html = readFileSync(out, "utf8");
    expect(html).toContain("<title>Selector &lt;study&gt;</title>");
    expect(html).toMatch(/<section id="training">[\s\S]*<svg /);
    expect(html).toMatch(/<section id="comparison">[\s\S]*<table>/);
    expect((html.match(/<div class="example">/g) ?? []).length).toBe(2);
    // Another file at --out is never overwritten silently.
    writeFileSync(out, "mine\n");
    const args = ["--workspace", wsDir, "report", evalJson.runId, "--out", out, "--resamples", "200"];
    expectUserError(await runCli(args), `${out}: file exists with other content (pass --replace to overwrite it)`);
    expect(readFileSync(out, "utf8")).toBe("mine\n");
    await runCliOk([...args, "--replace"]);
    expect(readFileSync(out, "utf8")).toContain("<html");
  });

  it("defaults to reports/<run ids>.html in the workspace; --json gives the path and the model", async () => {
    const stdout = await runCliOk(["--workspace", wsDir, "report", evalJson.runId, "--resamples", "200", "--json"]);
    const result = JSON.parse(stdout);
    expect(result.path).toBe(join(wsDir, "reports", `${evalJson.runId}.html`));
    expect(existsSync(result.path)).toBe(true);
    expect(result.bytes).toBe(readFileSync(result.path).length);
    expect(result.model.format).toBe("lever.report/2");
    expect(result.model.comparison.baseline).toBe(`${evalJson.runId}/random`);
  });

  it("refuses unknown runs and bad options", async () => {
    expectUserError(await lever("report", "nope"), 'no run "nope"');
    expectUserError(await lever("report", evalJson.runId, "--examples", "-1"), 'field "--examples"');
  });
});
