/**
 * Finds the answer tokens inside vLLM's `prompt_logprobs` and sums their log-probabilities.
 *
 * vLLM shape (vllm/logprobs.py `append_logprobs_for_next_position`, chat serving): a list aligned
 * with the prompt tokens; entry 0 is null (the first token has no context); entry i is a dict
 * `{ "<token_id>": {logprob, rank, decoded_token} }` whose first insertion is the ACTUAL prompt token
 * (with its true rank), followed by the top-k tokens (ranks 1..k) when `prompt_logprobs = k > 0`;
 * if the actual token is in the top-k the two coincide. JSON.parse re-orders integer-like keys, so
 * insertion order is lost on our side: the actual token is identified either because the request
 * used `prompt_logprobs: 0` (one key per entry) or by the token id we expect at that position.
 * vLLM clamps -inf to -9999.0; such values are kept as they are.
 *
 * The answer is the final, open assistant message, so its tokens are the last ones of the prompt.
 */

export interface PromptLogprob {
  logprob: number;
  rank?: number | null;
  decoded_token?: string | null;
}

export type PromptLogprobsEntry = Record<string, PromptLogprob> | null;

export interface SpanScore {
  /** Log-probability of each answer token, in order. */
  logprobs: number[];
  /** The decoded answer tokens joined (what the server says it scored). */
  decoded: string;
}

export type SpanResult = { ok: true; score: SpanScore } | { ok: false; reason: string };

/**
 * Span from known answer token ids (from `/tokenize`): the last `ids.length` prompt positions must
 * carry exactly those ids. The decoded text, when the server sent it, must reproduce `expectedText`.
 */
export function spanFromTokenIds(entries: PromptLogprobsEntry[], ids: number[], expectedText: string): SpanResult {
  if (ids.length === 0) return { ok: false, reason: "the answer tokenizes to zero tokens" };
  if (entries.length < ids.length + 1)
    return { ok: false, reason: `prompt has ${entries.length} tokens, fewer than the ${ids.length} answer tokens + 1` };
  const start = entries.length - ids.length;
  const logprobs: number[] = [];
  const decodedParts: string[] = [];
  let allDecoded = true;
  for (let j = 0; j < ids.length; j++) {
    const entry = entries[start + j];
    const hit = entry?.[String(ids[j])];
    if (hit === undefined) {
      const found = entry === null || entry === undefined ? "null" : Object.keys(entry).join(",");
      return {
        ok: false,
        reason: `answer token ${j} (id ${ids[j]}) not at prompt position ${start + j} (found ids ${found}); the server tokenized the answer differently`,
      };
    }
    logprobs.push(hit.logprob);
    if (typeof hit.decoded_token === "string") decodedParts.push(hit.decoded_token);
    else allDecoded = false;
  }
  const decoded = decodedParts.join("");
  // The ids already match; a decoded text with U+FFFD only means a character split across tokens.
  if (allDecoded && !decoded.includes("\uFFFD") && !decodedMatches(decoded, expectedText))
    return {
      ok: false,
      reason: `decoded span ${JSON.stringify(decoded)} does not reproduce ${JSON.stringify(expectedText)}`,
    };
  return { ok: true, score: { logprobs, decoded } };
}

/**
 * Span found without token ids: walk back from the last prompt token, joining `decoded_token`s,
 * until the text equals `expectedText`. Needs one key per entry (`prompt_logprobs: 0`).
 */
export function spanFromDecodedTokens(entries: PromptLogprobsEntry[], expectedText: string): SpanResult {
  if (expectedText === "") return { ok: false, reason: "empty answer" };
  const logprobs: number[] = [];
  let raw = "";
  for (let i = entries.length - 1; i >= 1; i--) {
    const entry = entries[i];
    if (entry === null) break;
    const keys = Object.keys(entry);
    if (keys.length !== 1)
      return {
        ok: false,
        reason: `prompt position ${i} has ${keys.length} candidate tokens; the actual token is known only with prompt_logprobs 0`,
      };
    const hit = entry[keys[0]];
    if (typeof hit.decoded_token !== "string")
      return { ok: false, reason: `prompt position ${i} has no decoded_token (server runs without a tokenizer?)` };
    raw = hit.decoded_token + raw;
    logprobs.unshift(hit.logprob);
    if (decodedMatches(raw, expectedText)) return { ok: true, score: { logprobs, decoded: raw } };
    if (!decodedSuffixOf(raw, expectedText)) break;
  }
  return {
    ok: false,
    reason: `decoded prompt tail ${JSON.stringify(raw.slice(-80))} does not reproduce ${JSON.stringify(expectedText)}`,
  };
}

/**
 * Whether joined decoded tokens spell `expected`. Servers differ: recent vLLM decodes each token to
 * text; older releases returned raw vocabulary pieces (byte-level BPE: "Ġ" = space, "Ċ" = newline;
 * SentencePiece: "▁" = space). The first answer token may carry the one space before the answer:
 * SentencePiece tokenizers ("▁no") and byte-level BPE after a template that puts the answer behind a
 * space (`ASSISTANT: no` → "Ġno" / " no") fold that space into the word's token, so the answer
 * cannot be scored without it (its ids are what `/tokenize` gave the answer; `expected` is trimmed).
 */
export function decodedMatches(decoded: string, expected: string): boolean {
  return decodedForms(decoded).some((form) => form === expected || form === ` ${expected}`);
}

function decodedSuffixOf(decoded: string, expected: string): boolean {
  // A character split across tokens decodes to U+FFFD until all its bytes are joined.
  return decodedForms(decoded).some((form) => expected.endsWith(form.replace(/^\uFFFD+/, "")));
}

function decodedForms(decoded: string): string[] {
  const forms = [decoded];
  const byteLevel = byteLevelDecode(decoded);
  if (byteLevel !== null) forms.push(byteLevel);
  if (decoded.includes("\u2581")) forms.push(decoded.replaceAll("\u2581", " "));
  return forms;
}

let unicodeToByte: Map<number, number> | null = null;

/** The inverse of GPT-2's `bytes_to_unicode`; null when the text is not in byte-level form. */
export function byteLevelDecode(text: string): string | null {
  unicodeToByte ??= buildUnicodeToByte();
  const bytes: number[] = [];
  for (const ch of text) {
    const byte = unicodeToByte.get(ch.codePointAt(0)!);
    if (byte === undefined) return null;
    bytes.push(byte);
  }
  return new TextDecoder("utf-8", { fatal: false }).decode(Uint8Array.from(bytes));
}

function buildUnicodeToByte(): Map<number, number> {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const map = new Map<number, number>();
  for (const b of printable) map.set(b, b);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!printable.includes(b)) {
      map.set(256 + n, b);
      n++;
    }
  }
  return map;
}
