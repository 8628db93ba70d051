/**
 * `lever serve`'s settings: one zod schema (flags, help and `--config FILE` are derived from it, as for
 * `lever eval`), named as `lever eval` names the same things (`--index`, `--pool-sampler`, `--k`,
 * `--shots`, `--selector-embedding`, `--seed`, `--order`), plus `--checkpoint` and the server's own
 * (`--port`, limits, keys, the audit log). The upstream VLM's settings are `VlmSettingsSchema`, bound
 * beside these exactly as `lever eval` binds them.
 */
import { z } from "zod";
import { EMBEDDING_KINDS } from "../data/embeddings.js";
import { PROMPT_ORDERS } from "../data/trajectories.js";
import { CHECKPOINT_REF_HELP } from "../icl/checkpoint-ref.js";
import { DEFAULT_POOL, SAMPLERS } from "../pools/samplers.js";
import { OPERATIONAL } from "../util/operational.js";
import { parseFlags } from "../util/validate.js";
import { checkVlmSettings, VlmFieldsSchema } from "../vlm/settings.js";

const MIB = 1024 * 1024;

export const ServeSettingsSchema = z
  .object({
    checkpoint: z.string().min(1).describe(`the selector: ${CHECKPOINT_REF_HELP}`),
    index: z.string().min(1).describe("index dataset the demonstrations come from (the selector's training index)"),
    k: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(`pool size K of each query's pool (default: the checkpoint's, else ${DEFAULT_POOL.k})`),
    poolSampler: z
      .enum(SAMPLERS)
      .optional()
      .describe(`sampler of each query's pool (default: the checkpoint's, else ${DEFAULT_POOL.sampler})`),
    selectorEmbedding: z
      .enum(EMBEDDING_KINDS)
      .optional()
      .describe("embedding the selector reads (default: the checkpoint's, else joint)"),
    shots: z
      .number()
      .int()
      .min(0)
      .max(32)
      .default(4)
      .describe("demonstrations per request (a request's X-Lever-Shots header overrides it)"),
    seed: z
      .number()
      .int()
      .min(0)
      .max(0xffffffff)
      .default(0)
      .describe("seed of the random part of pools (random, mix), as lever eval's --seed"),
    order: z
      .enum(PROMPT_ORDERS)
      .default("nearest")
      .describe("prompt order: nearest (first selected next to the query) or farthest"),
    port: z.number().int().min(0).max(65535).default(8080).describe("TCP port to listen on (0: any free port)"),
    host: z.string().min(1).default("127.0.0.1").describe("address to listen on (0.0.0.0: every interface)"),
    embedModel: z
      .string()
      .min(1)
      .optional()
      .describe(
        "local CLIP ONNX folder that lever embed compute recorded for the index's embeddings: requests are embedded in-process with it",
      ),
    clientEmbeddings: z
      .boolean()
      .default(false)
      .describe("start without --embed-model: only requests that carry their own embedding are served"),
    authKeyEnv: z
      .string()
      .min(1)
      .optional()
      .describe("environment variable holding the key clients must send (Authorization: Bearer KEY); unset: no key")
      .meta(OPERATIONAL),
    maxBodyBytes: z
      .number()
      .int()
      .positive()
      .default(20 * MIB)
      .describe("largest request body in bytes")
      .meta(OPERATIONAL),
    maxImageBytes: z
      .number()
      .int()
      .positive()
      .default(10 * MIB)
      .describe("largest image in bytes (decoded)")
      .meta(OPERATIONAL),
    requestTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(120_000)
      .describe("longest a request may wait for the upstream, retries included, in milliseconds")
      .meta(OPERATIONAL),
    maxBatch: z
      .number()
      .int()
      .positive()
      .default(64)
      .describe("requests embedded and selected together at most (those that arrive together)")
      .meta(OPERATIONAL),
    auditLog: z
      .string()
      .min(1)
      .optional()
      .describe("JSONL file each request's demonstrations are appended to (no image bytes)")
      .meta(OPERATIONAL),
    shutdownMs: z
      .number()
      .int()
      .positive()
      .default(30_000)
      .describe("on SIGTERM, how long in-flight requests may take to finish, in milliseconds")
      .meta(OPERATIONAL),
  })
  .strict();

export const ServeOptionsSchema = z
  .object({ ...ServeSettingsSchema.shape, ...VlmFieldsSchema.shape })
  .strict()
  .superRefine(checkVlmSettings)
  .superRefine((s, ctx) => {
    if (s.vlm !== "openai")
      ctx.addIssue({
        code: "custom",
        path: ["vlm"],
        message: "lever serve forwards to an OpenAI-compatible server: pass --vlm openai --base-url URL --model NAME",
      });
  });

export type ServeOptions = z.infer<typeof ServeOptionsSchema>;

/** Parses CLI-shaped options; the first problem becomes a one-line error naming the flag. */
export function parseServeOptions(raw: unknown): ServeOptions {
  return parseFlags(ServeOptionsSchema, raw);
}
