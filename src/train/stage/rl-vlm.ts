/**
 * The VLM side of the RL stages, opened only when a run needs it: the backend (src/icl/backend.ts)
 * with the items of the query and index datasets, for answering the validation queries after every
 * epoch through the one answering path (valAccuracy: the `Answerer` of src/train/objective/rl-validate.ts) and
 * for online GRPO's sampling (`OnlineSampler`, src/train/objective/online.ts). The server is checked once before
 * training starts (a no-op for the simulator).
 */
import type { VqaItem } from "../../data/item.js";
import type { PromptOrder } from "../../data/trajectories.js";
import { type AnswerDeps, answerPrompts, buildPrompt } from "../../icl/answer.js";
import { createVlm } from "../../icl/backend.js";
import type { Workspace } from "../../store/workspace.js";
import { stageTask } from "../../task/guard.js";
import { LeverError } from "../../util/errors.js";
import type { VlmSettings } from "../../vlm/settings.js";
import { preflight } from "../../vlm/types.js";
import { type OnlineContext, OnlineSampler, type ResolvedOnlineConfig } from "../objective/online.js";
import type { Answerer } from "../objective/rl-validate.js";

export interface RlVlmRequest {
  queryDataset: string;
  indexDataset: string;
  order: PromptOrder;
  vlm: VlmSettings;
  seed: number;
  /** Answer the validation queries after every epoch. */
  validation: boolean;
  /** Online GRPO's settings (null: offline, no sampling). */
  online: ResolvedOnlineConfig | null;
  /** What online sampling needs besides the VLM and the items. */
  sampling: Omit<OnlineContext, "queryById" | "indexById" | "answer">;
  /** Told which VLM backend answers (a run that validates with the simulator by default must say so). */
  note?: (text: string) => void;
}

/** What a run asked the VLM for: the validation answerer and the online sampler. */
export interface RlVlmServices {
  answerer?: Answerer;
  sampler?: OnlineSampler;
}

/** The VLM with the datasets' items, checked against the server; nothing when the run needs no VLM. */
export async function rlVlmServices(ws: Workspace, request: RlVlmRequest): Promise<RlVlmServices> {
  const { online } = request;
  if (!request.validation && online === null) return {};
  const task = stageTask("rl", {
    index: ws.requireDataset(request.indexDataset),
    query: ws.requireDataset(request.queryDataset),
  });
  const index = ws.loadItems(request.indexDataset);
  const queries = request.queryDataset === request.indexDataset ? index : ws.loadItems(request.queryDataset);
  const { vlm } = createVlm(ws, request.vlm, ws.requireDataset(request.queryDataset), { seed: request.seed });
  const uses = [request.validation ? "validation answers" : null, online !== null ? "online samples" : null];
  request.note?.(
    `${uses.filter((u) => u !== null).join(" and ")} come from the ${request.vlm.vlm} VLM (${vlm.id}; --vlm to change)`,
  );
  const items = {
    queryById: new Map(queries.map((item) => [item.questionId, item])),
    indexById: new Map(index.map((item) => [item.questionId, item])),
  };
  const answer: AnswerDeps = { vlm, ...task.answering({ references: index, variant: "official" }) };
  const services: RlVlmServices = {
    ...(request.validation ? { answerer: validationAnswerer(items, request.order, answer) } : {}),
    ...(online !== null ? { sampler: new OnlineSampler(online, { ...request.sampling, ...items, answer }) } : {}),
  };
  await preflight(vlm, { scoring: online !== null && online.gtAnswers !== "none" });
  return services;
}

/** Answers validation queries through the one answering path, for valAccuracy. */
function validationAnswerer(
  items: { queryById: ReadonlyMap<string, VqaItem>; indexById: ReadonlyMap<string, VqaItem> },
  order: PromptOrder,
  answer: AnswerDeps,
): Answerer {
  return async (queryIds, selections) => {
    const queries = queryIds.map((id) => {
      const item = items.queryById.get(id);
      if (item === undefined) throw new LeverError(`validation query "${id}" is not in the query dataset`);
      return item;
    });
    const prompts = queries.map((item, i) => buildPrompt(item, selections[i], items.indexById, order));
    const answers = await answerPrompts(prompts, queries, answer);
    if (answers === null) throw new LeverError("validation was interrupted");
    return answers.map((a) => a.accuracy);
  };
}
