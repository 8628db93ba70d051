/**
 * Two tables of the report beside the comparison: accuracy by answer type (VQA's yes/no, number and
 * other, from the query dataset's items) per method and shot, and what each stage of the runs cost —
 * its wall time and the VLM calls it recorded. Plain data from the workspace, rendered by html.ts.
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import type { MethodInput } from "../metrics/compare.js";
import type { MetricRecord, RunRecord, StageRecord } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";

/** VQA's answer types, in this order; others (a synthetic world's, "unknown") follow by name. */
export const ANSWER_TYPES = ["yes/no", "number", "other"] as const;

export interface AnswerTypeCell {
  type: string;
  /** Questions of this type the method scored at this shot. */
  n: number;
  /** Mean VQA accuracy (%) over them; null when n = 0. */
  accuracy: number | null;
}

export interface AnswerTypeRow {
  method: string;
  label: string;
  shot: number;
  cells: AnswerTypeCell[];
}

export interface AnswerTypes {
  /** Columns: the types found, VQA's first. */
  types: string[];
  rows: AnswerTypeRow[];
}

/** Accuracy per answer type of every method at every shot it ran; failed calls are left out, as in the comparison. */
export function answerTypeAccuracy(methods: readonly MethodInput[], typeOf: ReadonlyMap<string, string>): AnswerTypes {
  const found = new Set<string>();
  const sums = methods.map((m) => {
    const byShot = new Map<number, Map<string, { n: number; sum: number }>>();
    for (const row of m.rows) {
      if (row.accuracy === null) continue;
      const type = typeOf.get(row.questionId) ?? "unknown";
      found.add(type);
      let byType = byShot.get(row.shot);
      if (byType === undefined) byShot.set(row.shot, (byType = new Map()));
      const s = byType.get(type) ?? { n: 0, sum: 0 };
      byType.set(type, { n: s.n + 1, sum: s.sum + row.accuracy });
    }
    return { method: m, byShot };
  });
  const known: readonly string[] = ANSWER_TYPES;
  const types = [...ANSWER_TYPES.filter((t) => found.has(t)), ...[...found].filter((t) => !known.includes(t)).sort()];
  const rows = sums.flatMap(({ method, byShot }) =>
    [...byShot.keys()]
      .sort((a, b) => a - b)
      .map((shot) => ({
        method: method.id,
        label: method.label,
        shot,
        cells: types.map((type) => {
          const s = byShot.get(shot)?.get(type);
          return { type, n: s?.n ?? 0, accuracy: s === undefined ? null : (100 * s.sum) / s.n };
        }),
      })),
  );
  return { types, rows };
}

export interface StageCost {
  /** The run's label and id, the stage and its status. */
  run: string;
  runId: string;
  stage: string;
  status: string;
  startedAt: string;
  finishedAt: string | null;
  /** Wall time of the stage's last execution (start to finish), null while it has not finished. */
  seconds: number | null;
  /** VLM requests the stage recorded (data generation: its `vlm.calls` metric; evaluation: its summaries), null when it recorded none. */
  vlmCalls: number | null;
  cacheHits: number | null;
}

/** Each stage's wall time and recorded VLM calls, runs in the given order. */
export function stageCosts(
  ws: Workspace,
  runs: readonly RunRecord[],
  metricsOf: (run: RunRecord) => readonly MetricRecord[],
  labelOf: (run: RunRecord) => string,
): StageCost[] {
  return runs.flatMap((run) =>
    ws.listStages(run.id).map((stage) => {
      const calls = run.kind === "eval" ? evalCalls(ws, stage) : loggedCalls(metricsOf(run), stage.name);
      const finished = stage.finishedAt === null ? Number.NaN : Date.parse(stage.finishedAt);
      const seconds = (finished - Date.parse(stage.startedAt)) / 1000;
      return {
        run: labelOf(run),
        runId: run.id,
        stage: stage.name,
        status: stage.status,
        startedAt: stage.startedAt,
        finishedAt: stage.finishedAt,
        seconds: Number.isFinite(seconds) ? seconds : null,
        ...calls,
      };
    }),
  );
}

type Calls = { vlmCalls: number | null; cacheHits: number | null };

/** The last `vlm.calls` / `vlm.cache_hits` a stage logged (data generation logs them once per execution). */
function loggedCalls(metrics: readonly MetricRecord[], stage: string): Calls {
  const last = (name: string) =>
    metrics.filter((m) => m.stage === stage && m.name === name && m.step === null && m.epoch === null).at(-1)?.value ??
    null;
  return { vlmCalls: last("vlm.calls"), cacheHits: last("vlm.cache_hits") };
}

/** An evaluation stage's calls: the sum over its stored summaries' `vlm` counts (one per `lever eval` call). */
function evalCalls(ws: Workspace, stage: StageRecord): Calls {
  let vlmCalls: number | null = null;
  let cacheHits: number | null = null;
  for (const artifact of stage.artifacts) {
    if (!/^summary-.*\.json$/.test(basename(artifact.path))) continue;
    try {
      const vlm = (JSON.parse(readFileSync(ws.resolveArtifact(artifact.path), "utf8")) as { vlm?: unknown }).vlm as {
        calls?: unknown;
        cacheHits?: unknown;
      } | null;
      if (typeof vlm?.calls === "number") vlmCalls = (vlmCalls ?? 0) + vlm.calls;
      if (typeof vlm?.cacheHits === "number") cacheHits = (cacheHits ?? 0) + vlm.cacheHits;
    } catch {
      // a missing or unreadable summary records no calls; its absence is not this table's to report
    }
  }
  return { vlmCalls, cacheHits };
}
