/**
 * Content-addressed VLM response cache (docs/architecture.md: every call goes through it). The key hashes the
 * model id (backend + layout + settings, see `Vlm.id`), the operation and the prompt as rendered —
 * with each image named by its identity (absolute path, size, mtime) instead of its bytes, so keys
 * are cheap and change when an image file changes; an image inside the workspace by its
 * workspace-relative path (src/store/files.ts), so a moved workspace keeps its cache. Failures are never cached.
 *
 * `cachedVlm` wraps ANY `Vlm` (the OpenAI backend, the simulator): it serves hits, de-duplicates
 * identical requests inside a batch, sends only the misses, and stores each success as it arrives
 * (a run killed mid-batch keeps what came back), in one short transaction per event-loop turn.
 */
import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import type { Database } from "better-sqlite3";
import { z } from "zod";
import { toStored } from "../store/files.js";
import { Coalescer } from "../util/coalesce.js";
import { check } from "../util/errors.js";
import { hashValue } from "../util/hash.js";
import {
  countFailure,
  emptyStats,
  failureSummary,
  type HasActivity,
  type HasStats,
  hasActivity,
  hasStats,
  type VlmActivity,
  type VlmRunStats,
} from "./stats.js";
import {
  type CallOptions,
  type GenerateResult,
  isFailure,
  type Outcome,
  type PreflightOptions,
  preflight,
  type ScoreResult,
  type Vlm,
  type VlmFailureReason,
  type VlmPrompt,
} from "./types.js";

export type CacheKind = "generate" | "score";

export interface CacheEntry {
  key: string;
  model: string;
  kind: string;
  response: string;
}

export interface ResponseCache {
  get(key: string): string | undefined;
  put(key: string, model: string, kind: string, response: string): void;
  /** Stores many entries at once (one transaction where that matters). */
  putMany?(entries: CacheEntry[]): void;
}

export class MemoryResponseCache implements ResponseCache {
  readonly entries = new Map<string, CacheEntry & { createdAt: string }>();

  get(key: string): string | undefined {
    return this.entries.get(key)?.response;
  }

  put(key: string, model: string, kind: string, response: string): void {
    this.entries.set(key, { key, model, kind, response, createdAt: new Date().toISOString() });
  }
}

/** The workspace table (agreed with the store): created by the workspace migrations, or here for tests. */
export function ensureCacheTable(db: Database): void {
  db.exec(
    "CREATE TABLE IF NOT EXISTS vlm_cache (key TEXT PRIMARY KEY, model TEXT NOT NULL, kind TEXT NOT NULL, response TEXT NOT NULL, created_at TEXT NOT NULL)",
  );
}

function hasCacheTable(db: Database): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vlm_cache'").get() !== undefined;
}

export class SqliteResponseCache implements ResponseCache {
  private readonly select;
  private readonly insert;
  private readonly insertMany;

  constructor(db: Database) {
    check(hasCacheTable(db), "the workspace database has no vlm_cache table (is the workspace migrated?)", {
      file: db.name,
    });
    this.select = db.prepare<[string], { response: string }>("SELECT response FROM vlm_cache WHERE key = ?");
    this.insert = db.prepare<[string, string, string, string, string]>(
      "INSERT OR REPLACE INTO vlm_cache (key, model, kind, response, created_at) VALUES (?, ?, ?, ?, ?)",
    );
    this.insertMany = db.transaction((entries: CacheEntry[]) => {
      const now = new Date().toISOString();
      for (const e of entries) this.insert.run(e.key, e.model, e.kind, e.response, now);
    });
  }

  get(key: string): string | undefined {
    return this.select.get(key)?.response;
  }

  put(key: string, model: string, kind: string, response: string): void {
    this.insert.run(key, model, kind, response, new Date().toISOString());
  }

  putMany(entries: CacheEntry[]): void {
    this.insertMany(entries);
  }
}

export interface CacheSummaryRow {
  model: string;
  kind: string;
  entries: number;
  bytes: number;
  oldest: string;
  newest: string;
}

/** Entries and stored bytes (key + response) per model and kind. */
export function cacheSummary(db: Database): CacheSummaryRow[] {
  return db
    .prepare<[], CacheSummaryRow>(
      `SELECT model, kind, COUNT(*) AS entries,
              SUM(length(CAST(key AS BLOB)) + length(CAST(response AS BLOB))) AS bytes,
              MIN(created_at) AS oldest, MAX(created_at) AS newest
         FROM vlm_cache GROUP BY model, kind ORDER BY model, kind`,
    )
    .all();
}

export interface PruneFilter {
  model?: string;
  olderThanDays?: number;
  /** Delete everything (must be explicit). */
  all?: boolean;
  now?: Date;
}

/** Deletes matching entries; returns how many. Refuses an empty filter so a typo cannot wipe the cache. */
export function pruneCache(db: Database, filter: PruneFilter): number {
  const where: string[] = [];
  const params: string[] = [];
  if (filter.model !== undefined) {
    where.push("model = ?");
    params.push(filter.model);
  }
  if (filter.olderThanDays !== undefined) {
    check(Number.isFinite(filter.olderThanDays) && filter.olderThanDays >= 0, "must be a non-negative number of days", {
      field: "--older-than",
    });
    const cutoff = new Date((filter.now ?? new Date()).getTime() - filter.olderThanDays * 86_400_000);
    where.push("created_at < ?");
    params.push(cutoff.toISOString());
  }
  check(where.length > 0 || filter.all === true, "give --model, --older-than or --all", { field: "prune" });
  const sql = `DELETE FROM vlm_cache${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""}`;
  return db.prepare(sql).run(...params).changes;
}

type ImageIdentity = { path: string; size: number; mtimeMs: number } | { path: string; missing: true } | null;

/**
 * Stats each image once per wrapper; a missing file is an identity too (the backend will fail, nothing is
 * cached). With the workspace's folder, an image inside it is named workspace-relative (`<workspace>/…`).
 */
export class ImageIdentities {
  private readonly known = new Map<string, Promise<ImageIdentity>>();

  constructor(private readonly workspace?: string) {}

  get(path: string | null): Promise<ImageIdentity> {
    if (path === null) return Promise.resolve(null);
    const absolute = resolve(path);
    let identity = this.known.get(absolute);
    if (identity === undefined) {
      const named = this.workspace === undefined ? absolute : toStored(this.workspace, absolute);
      identity = stat(absolute).then(
        (info) => ({ path: named, size: info.size, mtimeMs: info.mtimeMs }),
        () => ({ path: named, missing: true as const }),
      );
      this.known.set(absolute, identity);
    }
    return identity;
  }
}

const CACHE_KEY_VERSION = 2;

/** The cache key of one request: what is rendered (texts, image identities, order), for which model and operation. */
export async function requestKey(
  modelId: string,
  kind: CacheKind,
  prompt: VlmPrompt,
  answer: string | null,
  images: { get(path: string | null): Promise<ImageIdentity> } = new ImageIdentities(),
): Promise<string> {
  // The question id is part of the key: a backend may read item identity (the simulator does), and two
  // items with identical text and no image must not share an answer.
  const item = async (x: { questionId: string; imagePath: string | null; question: string; answer?: string }) => ({
    id: x.questionId,
    image: await images.get(x.imagePath),
    question: x.question,
    answer: x.answer,
  });
  return hashValue({
    v: CACHE_KEY_VERSION,
    model: modelId,
    kind,
    demonstrations: await Promise.all(prompt.demonstrations.map(item)),
    query: await item(prompt.query),
    answer,
  });
}

/** A stored blank answer (kept by builds before empty completions were failures) is a miss: asked again. */
const generateResultSchema = z.strictObject({ text: z.string().refine((t) => t.trim() !== ""), tokens: z.number() });
const scoreResultSchema = z.strictObject({ logprobSum: z.number(), logprobMean: z.number(), tokens: z.number() });

export interface CachedVlm extends Vlm, HasStats, HasActivity {
  readonly inner: Vlm;
}

/** Applies `cache` to any Vlm (images inside `workspace` keyed workspace-relative). `--no-cache` means: do not wrap. */
export function cachedVlm(vlm: Vlm, cache: ResponseCache, workspace?: string): CachedVlm {
  return new CachingVlm(vlm, cache, new ImageIdentities(workspace));
}

class CachingVlm implements CachedVlm {
  readonly id: string;
  private hits = 0;
  private misses = 0;
  private deduplicated = 0;
  /** Fallback accounting when the wrapped Vlm keeps no stats of its own. */
  private readonly own = { calls: 0, failures: new Map<VlmFailureReason, number>() };

  constructor(
    readonly inner: Vlm,
    private readonly cache: ResponseCache,
    private readonly images: ImageIdentities,
  ) {
    this.id = inner.id;
  }

  generate(prompts: VlmPrompt[], options: CallOptions<GenerateResult> = {}): Promise<Outcome<GenerateResult>[]> {
    return this.run(
      "generate",
      prompts.map((prompt) => ({ prompt, answer: null })),
      (misses, onResult) =>
        this.inner.generate(
          misses.map((m) => m.prompt),
          { signal: options.signal, onResult },
        ),
      generateResultSchema,
      options.onResult,
    );
  }

  scoreAnswer(
    requests: { prompt: VlmPrompt; answer: string }[],
    options: CallOptions<ScoreResult> = {},
  ): Promise<Outcome<ScoreResult>[]> {
    return this.run(
      "score",
      requests,
      (misses, onResult) => this.inner.scoreAnswer(misses, { signal: options.signal, onResult }),
      scoreResultSchema,
      options.onResult,
    );
  }

  preflight(options: PreflightOptions): Promise<void> {
    return preflight(this.inner, options);
  }

  getStats(): VlmRunStats {
    const base = hasStats(this.inner) ? this.inner.getStats() : this.ownStats();
    return { ...base, cacheHits: this.hits, cacheMisses: this.misses, deduplicated: this.deduplicated };
  }

  activity(): VlmActivity | null {
    return hasActivity(this.inner) ? this.inner.activity() : null;
  }

  private ownStats(): VlmRunStats {
    return { ...emptyStats(), calls: this.own.calls, failures: failureSummary(this.own.failures) };
  }

  private async run<A extends string | null, R extends object>(
    kind: CacheKind,
    requests: { prompt: VlmPrompt; answer: A }[],
    send: (
      misses: { prompt: VlmPrompt; answer: A }[],
      onResult: (index: number, outcome: Outcome<R>) => void,
    ) => Promise<Outcome<R>[]>,
    schema: z.ZodType<R>,
    onResult?: (index: number, outcome: Outcome<R>) => void,
  ): Promise<Outcome<R>[]> {
    const keys = await Promise.all(
      requests.map((r) => requestKey(this.id, kind, r.prompt, r.answer as string | null, this.images)),
    );
    const results = new Array<Outcome<R>>(requests.length);
    const pending = new Map<string, number[]>(); // key → indices waiting for the same miss
    const missOrder: string[] = [];
    for (let i = 0; i < requests.length; i++) {
      const key = keys[i];
      const waiting = pending.get(key);
      if (waiting !== undefined) {
        waiting.push(i);
        this.deduplicated++;
        continue;
      }
      const hit = this.lookup(key, schema);
      if (hit !== undefined) {
        results[i] = hit;
        this.hits++;
        onResult?.(i, hit);
        continue;
      }
      pending.set(key, [i]);
      missOrder.push(key);
    }
    if (missOrder.length === 0) return results;
    this.misses += missOrder.length;
    const writer = new Coalescer<CacheEntry>((entries) => {
      if (this.cache.putMany !== undefined) this.cache.putMany(entries);
      else for (const e of entries) this.cache.put(e.key, e.model, e.kind, e.response);
    });
    const arrived = new Uint8Array(missOrder.length);
    // Each miss's outcome, when it arrives (from the backend's onResult, else from the returned array).
    const arrive = (j: number, outcome: Outcome<R>) => {
      if (arrived[j] === 1) return;
      arrived[j] = 1;
      const key = missOrder[j];
      this.own.calls++;
      if (isFailure(outcome)) countFailure(this.own.failures, outcome);
      else writer.add({ key, model: this.id, kind, response: JSON.stringify(outcome) });
      for (const i of pending.get(key)!) {
        results[i] = outcome;
        onResult?.(i, outcome);
      }
    };
    try {
      const sent = await send(
        missOrder.map((key) => requests[pending.get(key)![0]]),
        arrive,
      );
      if (sent.length !== missOrder.length)
        throw new Error(`${this.id} returned ${sent.length} results for ${missOrder.length} requests`);
      for (let j = 0; j < sent.length; j++) arrive(j, sent[j]);
    } finally {
      writer.flush(); // what arrived before an abort is kept
    }
    return results;
  }

  /** A stored response, or undefined when absent or unreadable (then it is recomputed and overwritten). */
  private lookup<R>(key: string, schema: z.ZodType<R>): R | undefined {
    const stored = this.cache.get(key);
    if (stored === undefined) return undefined;
    try {
      const parsed = schema.safeParse(JSON.parse(stored));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }
}
