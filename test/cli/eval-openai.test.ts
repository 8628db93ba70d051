/**
 * `lever eval --vlm openai` against failing servers (the mock vLLM): an unreachable URL and a
 * server answering only 500 end in one error line within seconds; a server failing half the prompts
 * finishes, stores the failures, prints the summary and exits 2; a server dying mid-run trips the
 * circuit breaker, keeps the stored work, and the next run resumes it; empty completions are failed
 * predictions, retried by the next run.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selectSubset } from "../../src/data/splits.js";
import { Workspace } from "../../src/store/workspace.js";
import { type SimWorkspace, simWorkspace } from "../eval/sim-workspace.js";
import { expectUserError, runCli } from "../helpers/cli.js";
import { fnv1a, MockVllm } from "../helpers/mock-vllm.js";

let sim: SimWorkspace;
let wsDir: string;
let deadUrl: string;
const mocks: MockVllm[] = [];

async function startMock(options: Parameters<typeof MockVllm.start>[0] = {}): Promise<MockVllm> {
  const m = await MockVllm.start(options);
  mocks.push(m);
  return m;
}

beforeAll(async () => {
  sim = simWorkspace({ trainItems: 120, valItems: 30, concepts: 6 });
  wsDir = sim.ws.dir;
  sim.ws.close(); // the CLI opens its own connection
  const dead = await MockVllm.start();
  deadUrl = dead.url;
  await dead.close();
});
afterAll(async () => {
  await Promise.all(mocks.map((m) => m.close()));
});

/** `lever eval --vlm openai` on 20 queries × (zero, random@1): 40 predictions. Returns the result and seconds. */
async function evalOpenAi(url: string, ...extra: string[]) {
  const start = performance.now();
  const result = await runCli([
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
    "1",
    "--retriever",
    "zero,random",
    "--resamples",
    "200",
    "--vlm",
    "openai",
    "--base-url",
    url,
    "--model",
    "mock-vl",
    ...extra,
  ]);
  return { ...result, seconds: (performance.now() - start) / 1000 };
}

function predictions(run: string) {
  const ws = Workspace.open(wsDir, { create: false });
  try {
    const id = ws.listRuns({ kind: "eval" }).find((r) => r.name === run)!.id;
    return ws.getPredictions(id);
  } finally {
    ws.close();
  }
}

/** The lever-plus layout's query text of the last user message. */
function queryText(body: Record<string, unknown> | null): string {
  const messages = (body?.messages ?? []) as { content: string | { type: string; text?: string }[] }[];
  const content = messages.at(-1)?.content;
  return typeof content === "string" ? content : (content?.at(-1)?.text ?? "");
}

describe("lever eval against failing VLM servers", () => {
  it("an unreachable URL: one error line naming it, exit 2, in seconds", async () => {
    const result = await evalOpenAi(deadUrl, "--run", "dead");
    expectUserError(
      result,
      new RegExp(`^error: cannot reach the VLM server at ${deadUrl} \\(connection failed: .*ECONNREFUSED`),
    );
    expect(result.seconds).toBeLessThan(30);
    expect(result.seconds).toBeLessThan(5); // one retry after 0.5 s, in practice
  });

  it("a server answering only 500: one error line naming it, exit 2, in seconds", async () => {
    const broken = await startMock();
    broken.failAll = { kind: "status", status: 500 };
    const result = await evalOpenAi(broken.url, "--run", "http500");
    expectUserError(result, `error: the VLM server at ${broken.url} failed GET /v1/models: http-5xx: HTTP 500`);
    expect(result.seconds).toBeLessThan(30);
    expect(broken.requests).toBe(2);
  });

  it("a server failing half the prompts: finishes, stores the failures, prints the summary, exits 2; a rerun retries them", async () => {
    const half = await startMock();
    const fails = (text: string) => text.includes("Short answer:") && fnv1a(text) % 2 === 0;
    half.faultFor = (path, body) =>
      path === "/v1/chat/completions" && fails(queryText(body)) ? { kind: "status", status: 500 } : null;
    // Short retry pauses keep the test quick; the behaviour is the default's.
    const result = await evalOpenAi(half.url, "--run", "half", "--backoff-base-ms", "10");
    expect(result.code, result.stderr).toBe(2);
    const rows = predictions("half");
    expect(rows.length).toBe(40);
    const failed = rows.filter((r) => r.failure !== null);
    expect(failed.length).toBeGreaterThan(5);
    expect(failed.length).toBeLessThan(35);
    expect(failed.every((r) => r.accuracy === null && r.failure?.startsWith("http-5xx: HTTP 500"))).toBe(true);
    // Exactly the prompts the server fails, in both cells (their query text is the same).
    const queries = selectSubset(
      sim.world.itemsOf("val").map((i) => ({ questionId: sim.world.questionIds[i], question: sim.world.questions[i] })),
      "first:20",
      0,
    );
    const failing = queries.filter((q) => fails(`Question:${q.question} Short answer:`)).map((q) => q.questionId);
    for (const retriever of ["zero", "random"])
      expect(
        failed
          .filter((r) => r.retriever === retriever)
          .map((r) => r.questionId)
          .sort(),
      ).toEqual([...failing].sort());
    const byCell = (retriever: string) => failed.filter((r) => r.retriever === retriever).length;
    // stdout: the table of what succeeded; stderr: the run line, the summary, one error line.
    expect(result.stdout).toMatch(/^Accuracy: official VQA accuracy \(%\)/);
    const lines = result.stderr.trimEnd().split("\n");
    expect(lines.filter((l) => l.startsWith("error: "))).toHaveLength(1);
    expect(lines.at(-1)).toBe(
      `error: record "${rows[0].runId}": ${failed.length} of 40 predictions failed (left out of the accuracies above); rerun the same command to retry them`,
    );
    const cells = [
      byCell("random") > 0 ? `random@1 ${byCell("random")}` : null,
      byCell("zero") > 0 ? `zero@0 ${byCell("zero")}` : null,
    ].filter((c) => c !== null);
    expect(lines.at(-2)).toBe(`failed predictions: http-5xx ${failed.length}; in ${cells.join(", ")}`);
    expect(result.stderr).toMatch(/40 predictions planned, 0 already stored, 40 evaluated, \d+ failed/);
    expect(result.seconds).toBeLessThan(30);

    half.faultFor = null; // the server recovers: the rerun sends only the failed prompts
    half.clearLog();
    const rerun = await evalOpenAi(half.url, "--run", "half", "--backoff-base-ms", "10");
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toMatch(
      new RegExp(`\\(resumed\\): 40 predictions planned, ${40 - failed.length} already stored`),
    );
    expect(half.count("/v1/chat/completions")).toBe(failed.length + 1); // + the preflight's
    expect(predictions("half").every((r) => r.failure === null)).toBe(true);

    // Nothing left to send: the table comes from the workspace, without asking the (now broken) server.
    half.failAll = { kind: "status", status: 500 };
    half.clearLog();
    const complete = await evalOpenAi(half.url, "--run", "half");
    expect(complete.code, complete.stderr).toBe(0);
    expect(half.requests).toBe(0);
  });

  it("a server answering some prompts with an empty completion: failed predictions (not accuracy 0), exit 2, a rerun retries them", async () => {
    let silent = true;
    const userText = (messages: { role: string; content: unknown }[]) => queryText({ messages });
    const quiet = (text: string) => text.includes("Short answer:") && fnv1a(text) % 3 === 0;
    const m = await startMock({ answer: (messages) => (silent && quiet(userText(messages)) ? "" : "yes") });
    // Another generation setting, so no answer cached by the tests above is served.
    const result = await evalOpenAi(m.url, "--run", "silent", "--max-tokens", "4");
    expect(result.code, result.stderr).toBe(2);
    const failed = predictions("silent").filter((r) => r.failure !== null);
    expect(failed.length).toBeGreaterThan(2);
    for (const r of failed) {
      expect(r.accuracy).toBeNull();
      expect(r.failure).toBe("empty-answer: the server generated an empty completion");
    }
    expect(result.stderr).toContain(`failed predictions: empty-answer ${failed.length}; in `);
    silent = false; // the rerun retries exactly the failed prompts
    m.clearLog();
    const rerun = await evalOpenAi(m.url, "--run", "silent", "--max-tokens", "4");
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(m.count("/v1/chat/completions")).toBe(failed.length + 1); // + the preflight's
    expect(predictions("silent").every((r) => r.failure === null && r.rawAnswer === "yes")).toBe(true);
  });

  it("a server dying mid-run: the breaker stops the run in one line, stored work stays, the rerun resumes", async () => {
    const dying = await startMock();
    let answered = 0;
    dying.faultFor = (path) =>
      path === "/v1/chat/completions" && ++answered > 13 ? { kind: "status", status: 500 } : null; // 1 preflight + 12
    const result = await evalOpenAi(
      dying.url,
      "--run",
      "dying",
      "--breaker-ms",
      "1000",
      "--batch-size",
      "8",
      "--cache",
      "off",
    );
    // The progress line, then one error line.
    expect(result.code, result.stderr).toBe(2);
    const lines = result.stderr.trimEnd().split("\n");
    expect(lines.filter((l) => l.startsWith("error: "))).toHaveLength(1);
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^error: stopped: the VLM endpoint has been failing for [\\d.]+ s with no successful answer \\(breakerMs 1000\\); ` +
          `last failure: ${dying.url} \\(http-5xx: HTTP 500 .*\\)\\. 12 of 40 predictions are stored; rerun the same command to resume$`,
      ),
    );
    expect(result.seconds).toBeLessThan(30);
    const kept = predictions("dying");
    const succeeded = kept.filter((r) => r.failure === null).length;
    expect(succeeded).toBe(12);

    dying.faultFor = null;
    dying.clearLog();
    const rerun = await evalOpenAi(dying.url, "--run", "dying", "--batch-size", "8", "--cache", "off");
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toMatch(/\(resumed\): 40 predictions planned, 12 already stored, 28 evaluated, 0 failed/);
    expect(dying.count("/v1/chat/completions")).toBe(28 + 1);
  });

  it("a password in --base-url is sent as basic auth, and never stored in lever.db nor printed", async () => {
    const password = "s3cret-Pa55";
    const withPassword = (url: string) => url.replace("http://", `http://lever:${password}@`);
    const dead = await evalOpenAi(withPassword(deadUrl), "--run", "dead-password");
    expectUserError(dead, /^error: cannot reach the VLM server at http:\/\/127\.0\.0\.1:\d+ /);
    expect(dead.stderr + dead.stdout).not.toContain(password);

    const server = await startMock();
    const ok = await evalOpenAi(withPassword(server.url), "--run", "password");
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr + ok.stdout).not.toContain(password);
    const basic = `Basic ${Buffer.from(`lever:${password}`).toString("base64")}`;
    expect(server.log.length).toBeGreaterThan(0);
    for (const request of server.log) expect(request.headers.authorization).toBe(basic);
    for (const file of readdirSync(wsDir).filter((f) => f.startsWith("lever.db")))
      expect(readFileSync(join(wsDir, file)).includes(password), file).toBe(false);
  });
});
