/**
 * Backend `sim` for a caption world: the simulated captioning VLM (docs/simulator.md, "Caption world").
 * A prompt's `query.questionId` is the query item's id (its image id), `demonstrations[j].questionId`
 * the demonstration's, and `demonstrations[j].answer` the caption SHOWN for it (which reference is the
 * chain's choice); `question` is unused. It looks up latents (what the images show, teacher quality)
 * in its own world by id, but learns style and words only from the shown caption text.
 * `generate` is greedy and deterministic (src/sim/caption/model.ts); `scoreAnswer` returns the
 * log-probability of the whole given caption under the same distribution, tokens = words, mean =
 * sum / tokens. No state carries across calls except caches of parsed captions. The id hashes the
 * model parameters and the world's fingerprint.
 */
import { readFileSync } from "node:fs";
import type { z } from "zod";
import { LeverError } from "../../util/errors.js";
import { hashValue } from "../../util/hash.js";
import {
  type CallOptions,
  type GenerateResult,
  type Outcome,
  type ScoreResult,
  type Vlm,
  type VlmPrompt,
  vlmFailure,
} from "../../vlm/types.js";
import { worldFileRecord, worldFileSchema } from "../world-file.js";
import { contentVectors } from "./embed.js";
import { Lexicon, type ParsedCaption, parseCaption } from "./lexicon.js";
import { CaptionModel, type ModelDemo } from "./model.js";
import { type CaptionWorldParamsInput, CaptionWorldParamsSchema } from "./params.js";
import { CaptionWorld } from "./world.js";

export const CAPTION_WORLD_FILE_FORMAT = "lever.synth-caption-world/1";

/** `world.json` of a caption world (src/sim/world-file.ts). */
export const CaptionWorldFileSchema = worldFileSchema(CAPTION_WORLD_FILE_FORMAT, CaptionWorldParamsSchema);
export type CaptionWorldFile = z.infer<typeof CaptionWorldFileSchema>;

export function captionWorldFileContent(world: CaptionWorld): CaptionWorldFile {
  return worldFileRecord(CAPTION_WORLD_FILE_FORMAT, world);
}

/** Bound on the parsed-caption cache (prompts repeat a limited set of captions; callers may send anything). */
const PARSE_CACHE_LIMIT = 200_000;

export class SimCaptionVlm implements Vlm {
  readonly id: string;
  readonly lexicon = new Lexicon();
  readonly model: CaptionModel;
  private readonly parsed = new Map<string, ParsedCaption>();

  constructor(readonly world: CaptionWorld) {
    this.model = new CaptionModel(world, this.lexicon, contentVectors(world, this.lexicon));
    this.id = `sim-caption:${world.fingerprint.slice(0, 16)}:${hashValue(world.params.model).slice(0, 16)}`;
  }

  static fromParams(params: CaptionWorldParamsInput): SimCaptionVlm {
    return new SimCaptionVlm(CaptionWorld.generate(params));
  }

  /** Rebuilds the world from its `world.json` and checks it is the world that file describes. */
  static fromWorldFile(path: string, raw?: unknown): SimCaptionVlm {
    let value = raw;
    if (value === undefined)
      try {
        value = JSON.parse(readFileSync(path, "utf8"));
      } catch (error) {
        throw new LeverError(`cannot read the world file: ${(error as Error).message}`, { file: path });
      }
    const parsed = CaptionWorldFileSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new LeverError(issue.message, { file: path, field: issue.path.join(".") || undefined });
    }
    const world = CaptionWorld.generate(parsed.data.params);
    if (world.fingerprint !== parsed.data.fingerprint)
      throw new LeverError(
        "the caption world rebuilt from these parameters differs from the one that was written (generator changed?)",
        { file: path, field: "fingerprint" },
      );
    return new SimCaptionVlm(world);
  }

  async generate(prompts: VlmPrompt[], options?: CallOptions<GenerateResult>): Promise<Outcome<GenerateResult>[]> {
    const out: GenerateResult[] = [];
    for (let i = 0; i < prompts.length; i++) {
      if ((i & 1023) === 0) options?.signal?.throwIfAborted();
      const text = this.caption(prompts[i]);
      out.push({ text, tokens: countWords(text) });
    }
    return out;
  }

  async scoreAnswer(
    requests: { prompt: VlmPrompt; answer: string }[],
    options?: CallOptions<ScoreResult>,
  ): Promise<Outcome<ScoreResult>[]> {
    const out: Outcome<ScoreResult>[] = [];
    for (let i = 0; i < requests.length; i++) {
      if ((i & 1023) === 0) options?.signal?.throwIfAborted();
      const { prompt, answer } = requests[i];
      const tokens = countWords(answer);
      if (tokens === 0) {
        out.push(
          vlmFailure("invalid-request", `sim: cannot score an empty caption (query ${prompt.query.questionId})`),
        );
        continue;
      }
      const logprobSum = this.logProb(prompt, answer);
      out.push({ logprobSum, logprobMean: logprobSum / tokens, tokens });
    }
    return out;
  }

  /** The greedy caption for one prompt (synchronous; `generate` is this over a batch). */
  caption(prompt: VlmPrompt): string {
    this.evaluatePrompt(prompt);
    return this.model.best();
  }

  /** log p(caption | prompt), summed over its words. */
  logProb(prompt: VlmPrompt, caption: string): number {
    this.evaluatePrompt(prompt);
    return this.model.logProb(this.parse(caption).words);
  }

  /** Item index of an id in this world; an unknown id is a setup error (wrong world). */
  itemIndex(itemId: string, role: string): number {
    const index = this.world.indexOf(itemId);
    if (index < 0)
      throw new LeverError(
        `sim: item id ${itemId} is not in this simulator's caption world (${this.id}); was the dataset made by \`lever data synth --task caption\` with the same world?`,
        { record: itemId, field: role },
      );
    return index;
  }

  private evaluatePrompt(prompt: VlmPrompt): void {
    const q = this.itemIndex(prompt.query.questionId, "query.questionId");
    const demos: ModelDemo[] = prompt.demonstrations.map((d, j) => ({
      item: this.itemIndex(d.questionId, `demonstrations[${j}].questionId`),
      parsed: this.parse(d.answer),
      text: d.answer,
    }));
    this.model.evaluate(q, demos);
  }

  private parse(caption: string): ParsedCaption {
    let parsed = this.parsed.get(caption);
    if (parsed === undefined) {
      if (this.parsed.size >= PARSE_CACHE_LIMIT) this.parsed.clear();
      parsed = parseCaption(this.lexicon, caption);
      this.parsed.set(caption, parsed);
    }
    return parsed;
  }
}

function countWords(text: string): number {
  const trimmed = text.trim();
  return trimmed === "" ? 0 : trimmed.split(/\s+/).length;
}
