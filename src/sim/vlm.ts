/**
 * Backend `sim`: the simulated VLM (docs/simulator.md). It reads prompts like a VLM would — the query and
 * the demonstrations' answers as shown — and looks up latents only in its own world, by question
 * id. `generate` returns the mode of the answer distribution (greedy, deterministic), sometimes
 * with trailing text that answer post-processing removes; `scoreAnswer` returns log p(answer) from
 * the same distribution (sim-model.ts has the formula).
 */
import { readFileSync } from "node:fs";
import type { z } from "zod";
import { LeverError } from "../util/errors.js";
import { hashValue } from "../util/hash.js";
import {
  type CallOptions,
  type GenerateResult,
  type Outcome,
  type ScoreResult,
  type Vlm,
  type VlmPrompt,
  vlmFailure,
} from "../vlm/types.js";
import { AnswerModel, pairHash } from "./model.js";
import { type WorldParamsInput, WorldParamsSchema } from "./params.js";
import { World } from "./world.js";
import { worldFileRecord, worldFileSchema } from "./world-file.js";

export const WORLD_FILE_FORMAT = "lever.synth-world/1";

/** `world.json` of a VQA world (src/sim/world-file.ts). */
export const WorldFileSchema = worldFileSchema(WORLD_FILE_FORMAT, WorldParamsSchema);
export type WorldFile = z.infer<typeof WorldFileSchema>;

export function worldFileContent(world: World): WorldFile {
  return worldFileRecord(WORLD_FILE_FORMAT, world);
}

/**
 * Trailing text a completion-style VLM emits after its answer; each is removed by the reference
 * post-processor (text before the first "Question"/"Answer"/"Short", then before the first ", ";
 * src/metrics/postprocess.ts, docs/provenance.md#postprocess).
 */
const DECORATIONS = ["\nQuestion:", " Short answer:", ", Answer:", "\nQuestion: What is"];

/** Key cache bound: prompts repeat a limited set of answer strings, but callers may send anything. */
const KEY_CACHE_LIMIT = 100_000;

export interface SimAnswer {
  /** The answer itself (canonical surface form), before any decoration. */
  answer: string;
  /** What `generate` returns: the answer, sometimes followed by text post-processing must remove. */
  text: string;
}

export class SimVlm implements Vlm {
  readonly id: string;
  readonly model: AnswerModel;
  private readonly answerIdCache = new Map<string, number>();
  /** Unknown answer strings get ids after the registry; the id only names the string within a prompt. */
  private readonly unknownIds = new Map<string, number>();
  private nextUnknownId = 0;
  private demoItems = new Int32Array(64);
  private demoAnswers = new Int32Array(64);

  constructor(readonly world: World) {
    this.model = new AnswerModel(world);
    this.id = `sim:${world.fingerprint.slice(0, 16)}:${hashValue(world.params.model).slice(0, 16)}`;
  }

  static fromParams(params: WorldParamsInput): SimVlm {
    return new SimVlm(World.generate(params));
  }

  /** Rebuilds the world from `world.json` and checks it is the world that file describes. */
  static fromWorldFile(path: string): SimVlm {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(path, "utf8"));
    } catch (error) {
      throw new LeverError(`cannot read the world file: ${(error as Error).message}`, { file: path });
    }
    const parsed = WorldFileSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new LeverError(issue.message, { file: path, field: issue.path.join(".") || undefined });
    }
    const world = World.generate(parsed.data.params);
    if (world.fingerprint !== parsed.data.fingerprint)
      throw new LeverError(
        "the world rebuilt from these parameters differs from the one that was written (generator changed?)",
        { file: path, field: "fingerprint" },
      );
    return new SimVlm(world);
  }

  async generate(prompts: VlmPrompt[], options?: CallOptions): Promise<Outcome<GenerateResult>[]> {
    const out: GenerateResult[] = [];
    for (let i = 0; i < prompts.length; i++) {
      if ((i & 1023) === 0) options?.signal?.throwIfAborted();
      const { text } = this.answer(prompts[i]);
      out.push({ text, tokens: countWords(text) });
    }
    return out;
  }

  async scoreAnswer(
    requests: { prompt: VlmPrompt; answer: string }[],
    options?: CallOptions,
  ): Promise<Outcome<ScoreResult>[]> {
    const out: Outcome<ScoreResult>[] = [];
    for (let i = 0; i < requests.length; i++) {
      if ((i & 1023) === 0) options?.signal?.throwIfAborted();
      const { prompt, answer } = requests[i];
      const tokens = countWords(answer);
      if (tokens === 0) {
        out.push(vlmFailure("invalid-request", `sim: cannot score an empty answer (query ${prompt.query.questionId})`));
        continue;
      }
      const logprobSum = this.logProb(prompt, answer);
      out.push({ logprobSum, logprobMean: logprobSum / tokens, tokens });
    }
    return out;
  }

  /** The greedy answer for one prompt (synchronous; `generate` is this over a batch). */
  answer(prompt: VlmPrompt): SimAnswer {
    const q = this.evaluatePrompt(prompt);
    const slot = this.model.argmax();
    const answer = this.surfaceOf(slot, prompt);
    let h = q;
    for (let j = 0; j < prompt.demonstrations.length; j++) h = Math.imul(h ^ this.demoItems[j], 0x2c1b3c6d) + j;
    const u = (pairHash(h, 0x5151) + 1) / 2;
    const rate = this.model.params.decorationRate;
    const text =
      u < rate
        ? answer + DECORATIONS[Math.min(DECORATIONS.length - 1, Math.floor((u / rate) * DECORATIONS.length))]
        : answer;
    return { answer, text };
  }

  /** log p(answer | prompt): the table entry the answer normalises to, else one tail string. */
  logProb(prompt: VlmPrompt, answer: string): number {
    this.evaluatePrompt(prompt);
    return this.model.logProb(this.model.slotOf(this.answerId(answer)));
  }

  /** Item index of a question id in this world; unknown ids are a setup error (wrong world). */
  itemIndex(questionId: string, role: string): number {
    const index = this.world.indexOf(questionId);
    if (index < 0)
      throw new LeverError(
        `sim: question id ${questionId} is not in this simulator's world (${this.id}); was the dataset made by \`lever data synth\` with the same world?`,
        { record: questionId, field: role },
      );
    return index;
  }

  /** Id of an answer string: the world's id for known answers, else a stable id for this string. */
  answerId(answer: string): number {
    const cached = this.answerIdCache.get(answer);
    if (cached !== undefined) return cached;
    let id = this.world.registry.idOf(answer);
    if (id < 0) {
      const key = answer.trim();
      const known = this.unknownIds.get(key);
      if (known !== undefined) id = known;
      else {
        // Never reused, so two strings never share an id even across a cache reset.
        id = this.world.registry.size + this.nextUnknownId++;
        this.unknownIds.set(key, id);
      }
    }
    this.answerIdCache.set(answer, id);
    return id;
  }

  private evaluatePrompt(prompt: VlmPrompt): number {
    // Reset the caches between prompts (never inside one, where ids must stay consistent).
    if (this.answerIdCache.size + this.unknownIds.size > KEY_CACHE_LIMIT) {
      this.answerIdCache.clear();
      this.unknownIds.clear();
    }
    const q = this.itemIndex(prompt.query.questionId, "query.questionId");
    const demos = prompt.demonstrations;
    const n = demos.length;
    if (n > this.demoItems.length) {
      this.demoItems = new Int32Array(n);
      this.demoAnswers = new Int32Array(n);
    }
    for (let j = 0; j < n; j++) {
      this.demoItems[j] = this.itemIndex(demos[j].questionId, `demonstrations[${j}].questionId`);
      this.demoAnswers[j] = this.answerId(demos[j].answer);
    }
    this.model.evaluate(q, this.demoItems, this.demoAnswers, n);
    return q;
  }

  /** Canonical text of a slot's answer; answers unknown to the world are repeated as the demo showed them. */
  private surfaceOf(slot: number, prompt: VlmPrompt): string {
    const id = this.model.tableIds[slot];
    if (id < this.world.registry.size) return this.world.registry.canonical[id];
    return prompt.demonstrations[this.model.firstDemoOfSlot[slot]].answer.trim();
  }
}

function countWords(text: string): number {
  const trimmed = text.trim();
  return trimmed === "" ? 0 : trimmed.split(/\s+/).length;
}
