/**
 * The caption chain through the OpenAI-compatible client, against the mock vLLM server: beams score
 * a whole reference caption (every token, through `prompt_logprobs`), rollouts store the caption's
 * CIDEr-D (index document frequencies) and its reference's log-probability, and evaluation sends the
 * caption prompt (the task's instruction, "Caption: <reference>" after each demonstration image, 20
 * tokens) — with vLLM beam search when asked — and stores pycocoevalcap's corpus-mode CIDEr-D.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ciderScores, documentFrequency } from "../../src/metrics/caption/cider.js";
import { tokenizeCaption } from "../../src/metrics/caption/ptb-tokenize.js";
import { readRolloutSet } from "../../src/store/sets.js";
import { Workspace } from "../../src/store/workspace.js";
import { CAPTION_TASK } from "../../src/task/caption.js";
import { runCliOk } from "../helpers/cli.js";
import { MockVllm } from "../helpers/mock-vllm.js";

const CAPTION = "A small dog sitting on a couch.";
let mock: MockVllm;
let root: string;
let ws: string;
const openai = () => ["--vlm", "openai", "--base-url", mock.url, "--model", "mock-vl", "--max-retries", "0"];
const lever = (...args: string[]) => runCliOk(["--workspace", ws, ...args]);

type Body = { messages: { role: string; content: unknown }[]; [key: string]: unknown };
/** Chat request bodies the mock received since log position `from`. */
const bodies = (from: number) =>
  mock.log
    .slice(from)
    .filter((r) => r.path === "/v1/chat/completions")
    .map((r) => r.body as Body);

beforeAll(async () => {
  mock = await MockVllm.start({ answer: () => CAPTION });
  root = mkdtempSync(join(tmpdir(), "lever-caption-openai-"));
  ws = join(root, "ws");
  await lever(
    ...["data", "synth", "--task", "caption", "--items", "60", "--val-items", "12", "--dim", "16", "--seed", "3"],
    ...["--out", join(root, "world"), "--import", "cap"],
  );
  await lever(
    "pools",
    "--queries",
    "cap-train",
    "--index",
    "cap-train",
    "--sampler",
    "image-sim",
    "--k",
    "4",
    "--out",
    "p",
  );
});

afterAll(async () => {
  await mock.close();
  rmSync(root, { recursive: true, force: true });
});

describe("the caption chain through the OpenAI-compatible client", () => {
  it("beams score every token of the anchor's reference caption", async () => {
    const before = mock.log.length;
    await lever(
      ...["beams", "--dataset", "cap-train", "--pools", "p", "--anchors", "first:2", "--shots", "1"],
      ...["--beam-size", "1", "--budget", "2", "--prior-embedding", "image", "--out", "b", "--quiet", ...openai()],
    );
    const open = Workspace.open(ws);
    const anchors = open.loadItems("cap-train").slice(0, 2);
    open.close();
    const scored = bodies(before).filter((b) => b?.continue_final_message === true);
    const finals = new Set(scored.map((b) => String(b.messages[b.messages.length - 1].content)));
    for (const anchor of anchors) {
      expect(finals).toContain(anchor.answer);
      // every token of the caption carries a log-probability (the mock's truth for that content)
      const truth = mock.truth.get(anchor.answer);
      expect(truth?.answerLogprobs.length).toBeGreaterThan(3);
    }
  });

  it("rollouts store CIDEr-D against the references (index df) and the shown reference's log-probability", async () => {
    await lever(
      ...["rollouts", "--dataset", "cap-train", "--pools", "p", "--queries", "first:3", "--shots", "1"],
      ...["--retrieval", "1", "--random", "1", "--embedding", "image", "--out", "r", "--quiet", ...openai()],
    );
    const open = Workspace.open(ws);
    const items = open.loadItems("cap-train");
    const set = readRolloutSet(open, "r");
    open.close();
    const df = documentFrequency(items.map((i) => i.answers.map((a) => tokenizeCaption(a.answer))));
    for (const [queryId, q] of Object.entries(set.queries)) {
      const query = items.find((i) => i.questionId === queryId)!;
      const expected = ciderScores(
        [{ hypothesis: tokenizeCaption(CAPTION), references: query.answers.map((a) => tokenizeCaption(a.answer)) }],
        df,
      ).perImage[0];
      for (const t of q.trajectories) {
        expect(t.predAnswer).toBe(CAPTION);
        expect(t.vqaAccScore).toBe(expected);
        expect(t.gtLogprob).toBeLessThan(0);
        // One scoring request per trajectory: the shown reference only ("all" means it for captions).
        expect(t.vqaGtProb ?? null).toBeNull();
      }
    }
  });

  it("eval sends the caption prompt with vLLM beam search and stores corpus-mode CIDEr-D", async () => {
    const before = mock.log.length;
    await lever(
      ...["eval", "--dataset", "cap-val", "--index", "cap-train", "--retriever", "topk-image,zero"],
      ...["--shots", "0,1", "--beam-search", "3", ...openai()],
    );
    const sent = bodies(before).filter((b) => b.use_beam_search === true);
    expect(sent.length).toBeGreaterThan(0);
    for (const b of sent) {
      expect(b).toMatchObject({ use_beam_search: true, best_of: 3, max_tokens: 20, n: 1 });
      const system = b.messages[0];
      expect(system.role).toBe("system");
      expect([CAPTION_TASK.prompt.systemPrompt, CAPTION_TASK.prompt.zeroShotSystemPrompt]).toContain(system.content);
      const parts = b.messages[1].content as { type: string; text?: string }[];
      const texts = parts.filter((p) => p.type === "text").map((p) => p.text);
      expect(texts[texts.length - 1]).toBe("Caption:");
      for (const demo of texts.slice(0, -1)) expect(demo).toMatch(/^Caption: \S/);
    }
    const open = Workspace.open(ws);
    const val = open.loadItems("cap-val");
    const [run] = open.listRuns().filter((r) => r.kind === "eval");
    const rows = open.getPredictions(run.id, { retriever: "topk-image", shot: 1 });
    open.close();
    const byId = new Map(rows.map((r) => [r.questionId, r]));
    const { perImage } = ciderScores(
      val.map((item) => ({
        hypothesis: tokenizeCaption(byId.get(item.questionId)?.answer ?? ""),
        references: item.answers.map((a) => tokenizeCaption(a.answer)),
      })),
    );
    for (const [k, item] of val.entries()) expect(byId.get(item.questionId)?.accuracy).toBe(perImage[k]);
  });
});
