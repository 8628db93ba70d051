/**
 * The retriever catalog is the one list of retrievers: parsing, `--retriever`'s help, the order and
 * the references of a comparison, and `eval.baselines`' help all follow it, so a retriever added to
 * it (with its builder) is known everywhere and no second list can drift from it.
 */
import { describe, expect, it } from "vitest";
import { EvalSettingsSchema } from "../../src/eval/config.js";
import { parseRetrieverSpec } from "../../src/eval/retrievers.js";
import { EvalSectionSchema } from "../../src/experiment/schema.js";
import { CHECKPOINT_REF_HELP } from "../../src/icl/checkpoint-ref.js";
import {
  REFERENCE_RETRIEVERS,
  RETRIEVER_KINDS,
  RETRIEVER_NAMES,
  RETRIEVERS,
  retrieverKind,
} from "../../src/icl/retriever-catalog.js";
import { retrieverMethods } from "../../src/icl/retriever-methods.js";

/** A name of each kind as stored with predictions (a selector by its checkpoint). */
const STORED: Record<string, string> = Object.fromEntries(
  RETRIEVER_KINDS.map((kind) => [
    kind,
    kind === "selector" ? "selector:/c/grpo.safetensors@3f2a0b1c9d8e" : RETRIEVERS[kind].names[0],
  ]),
);

describe("the retriever catalog", () => {
  it("parses every name it lists to its own kind, and names exactly its names in an unknown name's error", () => {
    for (const kind of RETRIEVER_KINDS)
      for (const name of RETRIEVERS[kind].names) {
        const given = name === "selector:CKPT" ? "selector:runs/a.safetensors" : name;
        expect(parseRetrieverSpec(given).kind, given).toBe(kind);
        expect(retrieverKind(given)).toBe(kind);
      }
    expect(() => parseRetrieverSpec("nearest")).toThrow(
      `unknown retriever "nearest" (expected one of ${RETRIEVER_NAMES.join(", ")})`,
    );
    expect(() => parseRetrieverSpec("topk-nothing")).toThrow(/unknown retriever "topk-nothing"/);
    expect(RETRIEVER_NAMES).toEqual([
      "zero",
      "random",
      "topk-image",
      "topk-text",
      "topk-joint",
      "vote",
      "consensus",
      "informed",
      "oracle",
      "selector:CKPT",
    ]);
  });

  it("orders a comparison's methods as the catalog lists them and flags exactly its references", () => {
    const rows = [...RETRIEVER_KINDS].reverse().map((kind) => ({
      retriever: STORED[kind],
      shot: 1,
      questionId: "q1",
      accuracy: 1,
      failure: null,
      demonstrations: [],
    }));
    const methods = retrieverMethods("eval-0001", rows);
    expect(methods.map((m) => m.retriever)).toEqual(RETRIEVER_KINDS.map((kind) => STORED[kind]));
    expect(methods.filter((m) => m.method.reference === true).map((m) => m.retriever)).toEqual(
      REFERENCE_RETRIEVERS.map((kind) => STORED[kind]),
    );
    expect(REFERENCE_RETRIEVERS).toEqual(["informed", "oracle"]);
  });

  it("gives --retriever's and eval.baselines' help every name (baselines: all but the selectors)", () => {
    const help = EvalSettingsSchema.shape.retrievers.meta()?.description as string;
    for (const name of RETRIEVER_NAMES) expect(help).toContain(name);
    // How to name a checkpoint is written once, where references are resolved.
    expect(help).toContain(`selector:CKPT: a trained selector, where CKPT is ${CHECKPOINT_REF_HELP}`);
    const baselines = EvalSectionSchema.shape.baselines.description as string;
    for (const name of RETRIEVER_NAMES) {
      if (name.startsWith("selector:")) expect(baselines).not.toContain(name);
      else expect(baselines).toContain(name);
    }
  });
});
