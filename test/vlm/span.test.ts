import { describe, expect, it } from "vitest";
import {
  byteLevelDecode,
  decodedMatches,
  type PromptLogprobsEntry,
  spanFromDecodedTokens,
  spanFromTokenIds,
} from "../../src/vlm/span.js";

/** A vLLM-shaped prompt_logprobs list: leading null, then one dict per token (actual token only). */
function entries(tokens: [id: number, logprob: number, decoded: string][]): PromptLogprobsEntry[] {
  return [
    null,
    ...tokens.map(([id, logprob, decoded]) => ({ [String(id)]: { logprob, rank: 1, decoded_token: decoded } })),
  ];
}

// "...assistant\n" + "tennis racket" tokenized as "tenn" "is" " rack" "et"
const prompt = entries([
  [7, -0.5, "assistant"],
  [8, -0.1, "\n"],
  [21, -1.25, "tenn"],
  [22, -0.5, "is"],
  [23, -2.0, " rack"],
  [24, -0.25, "et"],
]);

describe("spanFromTokenIds", () => {
  it("sums exactly the trailing answer tokens of a multi-token answer", () => {
    const result = spanFromTokenIds(prompt, [21, 22, 23, 24], "tennis racket");
    expect(result).toEqual({ ok: true, score: { logprobs: [-1.25, -0.5, -2.0, -0.25], decoded: "tennis racket" } });
  });

  it("picks the actual token by id when an entry also holds top-k alternatives", () => {
    // prompt_logprobs=2 and the actual token (id 30, rank 5) is not in the top-2: three keys, numeric key order.
    const withTopK: PromptLogprobsEntry[] = [
      null,
      { "8": { logprob: -0.1, rank: 1, decoded_token: "\n" } },
      {
        "3": { logprob: -0.2, rank: 1, decoded_token: "no" },
        "4": { logprob: -0.9, rank: 2, decoded_token: "yes" },
        "30": { logprob: -3.5, rank: 5, decoded_token: "red" },
      },
    ];
    expect(spanFromTokenIds(withTopK, [30], "red")).toEqual({ ok: true, score: { logprobs: [-3.5], decoded: "red" } });
  });

  it("fails when the expected ids are not at the end of the prompt (a shifted span)", () => {
    const result = spanFromTokenIds(prompt, [22, 23, 24, 25], "is racket!");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(/answer token 0 \(id 22\) not at prompt position 3/);
  });

  it("fails when the decoded tokens do not spell the answer", () => {
    const result = spanFromTokenIds(prompt, [23, 24], "rocket");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(/does not reproduce/);
  });

  it("accepts the space the first answer token carries (SentencePiece ▁, byte-level Ġ, text), and only that", () => {
    for (const first of ["\u2581no", "\u0120no", " no"]) {
      const spaced = entries([
        [7, -0.5, "ASSISTANT"],
        [8, -0.1, ":"],
        [30, -0.7, first],
      ]);
      expect(spanFromTokenIds(spaced, [30], "no"), first).toEqual({
        ok: true,
        score: { logprobs: [-0.7], decoded: first },
      });
      expect(spanFromDecodedTokens(spaced, "no"), first).toEqual({
        ok: true,
        score: { logprobs: [-0.7], decoded: first },
      });
    }
    const twoWords = entries([
      [8, -0.1, ":"],
      [31, -1, "\u2581ten"],
      [32, -2, "nis"],
      [33, -3, "\u2581rac"],
      [34, -4, "ket"],
    ]);
    expect(spanFromDecodedTokens(twoWords, "tennis racket")).toMatchObject({
      ok: true,
      score: { logprobs: [-1, -2, -3, -4] },
    });
    expect(decodedMatches("  no", "no")).toBe(false);
    expect(decodedMatches("\nno", "no")).toBe(false);
    expect(decodedMatches("no ", "no")).toBe(false);
  });

  it("fails when the prompt is shorter than the answer plus the first (null) position", () => {
    expect(spanFromTokenIds([null, { "5": { logprob: -1 } }], [4, 5], "ab").ok).toBe(false);
  });

  it("accepts a split multi-byte character once the ids match", () => {
    const split = entries([
      [8, -0.1, "\n"],
      [40, -0.3, "caf"],
      [41, -0.2, "\uFFFD"],
      [42, -0.1, "\uFFFD"],
    ]);
    const result = spanFromTokenIds(split, [40, 41, 42], "café");
    expect(result.ok && result.score.logprobs).toEqual([-0.3, -0.2, -0.1]);
  });
});

describe("spanFromDecodedTokens", () => {
  it("walks back from the end until the decoded tokens spell the answer", () => {
    const result = spanFromDecodedTokens(prompt, "tennis racket");
    expect(result).toEqual({ ok: true, score: { logprobs: [-1.25, -0.5, -2.0, -0.25], decoded: "tennis racket" } });
  });

  it("includes the end-of-turn token when it is part of the expected text", () => {
    const withEnd = entries([
      [8, -0.1, "\n"],
      [30, -1.5, "red"],
      [151645, -0.01, "<|im_end|>"],
    ]);
    expect(spanFromDecodedTokens(withEnd, "red<|im_end|>")).toEqual({
      ok: true,
      score: { logprobs: [-1.5, -0.01], decoded: "red<|im_end|>" },
    });
  });

  it("fails loudly when the tail does not reproduce the answer", () => {
    const result = spanFromDecodedTokens(prompt, "tennis ball");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(/does not reproduce "tennis ball"/);
  });

  it("fails when the boundary token swallowed part of the answer (merged newline)", () => {
    const merged = entries([
      [7, -0.5, "assistant"],
      [99, -0.7, "\nred"],
    ]);
    expect(spanFromDecodedTokens(merged, "red").ok).toBe(false);
  });

  it("refuses entries with several candidates (actual token unknown without ids)", () => {
    const ambiguous: PromptLogprobsEntry[] = [
      null,
      { "3": { logprob: -0.2, rank: 1, decoded_token: "no" }, "30": { logprob: -3.5, rank: 5, decoded_token: "red" } },
    ];
    const result = spanFromDecodedTokens(ambiguous, "red");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(/prompt_logprobs 0/);
  });

  it("understands byte-level BPE pieces (Ġ = space) from older servers", () => {
    const byteLevel = entries([
      [8, -0.1, "Ċ"],
      [21, -1, "tenn"],
      [22, -1, "is"],
      [23, -1, "Ġrack"],
      [24, -1, "et"],
    ]);
    expect(spanFromDecodedTokens(byteLevel, "tennis racket").ok).toBe(true);
  });
});

describe("decoded text normalisation", () => {
  it("inverts GPT-2 byte-level encoding, including multi-byte characters", () => {
    expect(byteLevelDecode("ĠcafÃ©")).toBe(" café");
    expect(byteLevelDecode("Ċ")).toBe("\n");
    expect(byteLevelDecode("plain text")).toBeNull(); // a real space is not byte-level form
  });

  it("matches SentencePiece pieces (▁ = space)", () => {
    expect(decodedMatches("▁tennis▁racket", " tennis racket")).toBe(true);
    expect(decodedMatches("tennis", "tennis racket")).toBe(false);
  });
});
