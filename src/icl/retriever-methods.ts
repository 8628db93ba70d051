/**
 * An evaluation run's predictions as methods of the comparison engine (src/metrics/compare.ts): one
 * method per retriever, id "RUN/RETRIEVER", labelled by the retriever's short name (a selector by its
 * checkpoint's training run, "selector:sft-0002", else its file name: "selector:grpo_epoch2") behind an
 * optional prefix, the catalog's references (the simulator's informed ceiling and oracle) flagged, in
 * the catalog's display order (src/icl/retriever-catalog.ts: zero, random, top-k, vote, informed, oracle,
 * selectors). `lever eval`'s summary and `lever compare` both build a run's methods here, so they get
 * the same ids and labels — and, since the engine keys its random streams by label, the same intervals.
 */
import type { ComparedRow, MethodInput } from "../metrics/compare.js";
import { checkpointLabel } from "./checkpoint-ref.js";
import { isReferenceRetriever, retrieverRank } from "./retriever-catalog.js";

/** The fields of a stored prediction a method reads. */
export type MethodRow = ComparedRow & { retriever: string };

export interface RetrieverMethod {
  method: MethodInput;
  retriever: string;
  /** "random", "topk-image", "selector:grpo_epoch2". */
  short: string;
}

/**
 * "selector:/ckpts/grpo_epoch2.safetensors@3f2a…" → "selector:grpo_epoch2"; a training run's checkpoint
 * by its run ("selector:…/runs/sft-0002/sft/best.safetensors@…" → "selector:sft-0002"); others unchanged.
 */
export function shortRetriever(retriever: string): string {
  if (!retriever.startsWith("selector:")) return retriever;
  const path = retriever.slice("selector:".length).replace(/@[0-9a-f]{6,}$/, "");
  return `selector:${checkpointLabel(path)}`;
}

/**
 * Every retriever of one run's predictions as a method, in display order (stable within each kind);
 * `labelPrefix` goes before every label ("NAME/" when several runs are compared).
 */
export function retrieverMethods(runId: string, predictions: Iterable<MethodRow>, labelPrefix = ""): RetrieverMethod[] {
  const byRetriever = new Map<string, ComparedRow[]>();
  for (const row of predictions) {
    let list = byRetriever.get(row.retriever);
    if (list === undefined) byRetriever.set(row.retriever, (list = []));
    list.push({
      shot: row.shot,
      questionId: row.questionId,
      accuracy: row.accuracy,
      failure: row.failure,
      demonstrations: row.demonstrations,
    });
  }
  return [...byRetriever]
    .sort(([a], [b]) => retrieverRank(a) - retrieverRank(b))
    .map(([retriever, rows]) => {
      const short = shortRetriever(retriever);
      const method: MethodInput = {
        id: `${runId}/${retriever}`,
        label: `${labelPrefix}${short}`,
        ...(isReferenceRetriever(retriever) ? { reference: true } : {}),
        rows,
      };
      return { method, retriever, short };
    });
}

/** Labels must tell methods apart: where two would read the same, each of them takes its id (in place). */
export function distinctLabels(methods: readonly MethodInput[]): void {
  const counts = new Map<string, number>();
  for (const m of methods) counts.set(m.label, (counts.get(m.label) ?? 0) + 1);
  for (const m of methods) if ((counts.get(m.label) ?? 0) > 1) m.label = m.id;
}
