/**
 * Prompt layouts: how a `VlmPrompt` becomes an OpenAI chat message list (docs/architecture.md: one prompt
 * builder for rewards and evaluation). Layouts are pure: images arrive as already-resolved URLs
 * through `urlFor`, so the same renderer produces the wire request (data:/file: URLs) and the
 * cache-key form (image identities) without touching the disk.
 */
import type { Demonstration, PromptQuery, VlmPrompt } from "./types.js";

export type ContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: ContentPart[] }
  | { role: "assistant"; content: string };

export const LAYOUT_NAMES = ["lever-plus", "chat-turns"] as const;
export type LayoutName = (typeof LAYOUT_NAMES)[number];

/**
 * The Python reference's Qwen system prompt (its config qwen2.5_vl_3B.yaml, docs/provenance.md#prompt),
 * paraphrased: the model "will see four example user/assistant dialogues about an image and a
 * question", must answer a new image+question like the assistant and mimic the examples' answer
 * length (one or two keywords, at most three tokens). It said "four" at every shot count and
 * described dialogue turns that the layout never produced, so we do not reuse it.
 */
export const DEFAULT_SYSTEM_PROMPT =
  "You will see example questions about images with short answers. Answer the last question about its image the same way, with one to three words.";

/** With no demonstrations there are no examples to point at; say only what is true. */
export const DEFAULT_ZERO_SHOT_SYSTEM_PROMPT = "Answer the question about the image with one to three words.";

/**
 * A task's prompt pieces (src/task/types.ts): the instruction is the layout's system prompts; these
 * say how one item reads after its image. Demonstrations carry an answer, the query does not.
 */
export interface PromptText {
  /** `lever-plus` layout: the text after a demonstration's image. */
  demonstrationText(item: { question: string; answer: string }): string;
  /** `lever-plus` layout: the text after the query's image (the model continues it). */
  queryText(item: { question: string }): string;
  /** `chat-turns` layout: a user turn's text after the image (a demonstration's answer is the assistant turn). */
  turnText(item: { question: string }): string;
}

/** A task's prompt pieces as a backend takes them, with the task's name (part of the backend's identity). */
export interface TaskPromptText {
  task: string;
  text: PromptText;
}

/** VQA's pieces, the reference layout's "Question:{q} Short answer:{a}" (Lever-Plus, docs/vlm.md). */
export const VQA_PROMPT_TEXT: PromptText = {
  demonstrationText: (item) => `Question:${item.question} Short answer:${item.answer}`,
  queryText: (item) => `Question:${item.question} Short answer:`,
  turnText: (item) => `Question:${item.question}`,
};

export interface LayoutSpec {
  name: LayoutName;
  /** System prompt when the prompt has demonstrations; null = no system message. */
  systemPrompt: string | null;
  /** System prompt for zero-shot prompts; null = no system message. */
  zeroShotSystemPrompt: string | null;
}

export function defaultLayout(name: LayoutName = "lever-plus"): LayoutSpec {
  return { name, systemPrompt: DEFAULT_SYSTEM_PROMPT, zeroShotSystemPrompt: DEFAULT_ZERO_SHOT_SYSTEM_PROMPT };
}

/** An image the prompt shows, named by the question it belongs to (for error messages). */
export interface ImageRef {
  questionId: string;
  path: string;
}

/** Every image of the prompt in render order (demonstrations first, then the query). */
export function promptImages(prompt: VlmPrompt): ImageRef[] {
  const out: ImageRef[] = [];
  for (const item of [...prompt.demonstrations, prompt.query]) {
    if (item.imagePath !== null) out.push({ questionId: item.questionId, path: item.imagePath });
  }
  return out;
}

/**
 * Renders the prompt as the message list that asks the model for the query's answer. Items without
 * an image (datasets imported without images) render their text only. `text` is the task's prompt
 * pieces, VQA's by default.
 */
export function renderMessages(
  prompt: VlmPrompt,
  layout: LayoutSpec,
  urlFor: (ref: ImageRef) => string,
  text: PromptText = VQA_PROMPT_TEXT,
): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const system = prompt.demonstrations.length > 0 ? layout.systemPrompt : layout.zeroShotSystemPrompt;
  if (system !== null && system.trim() !== "") messages.push({ role: "system", content: system });
  switch (layout.name) {
    case "lever-plus":
      messages.push({ role: "user", content: leverPlusUserParts(prompt, urlFor, text) });
      break;
    case "chat-turns":
      for (const demo of prompt.demonstrations) {
        messages.push({ role: "user", content: chatTurnParts(demo, urlFor, text) });
        messages.push({ role: "assistant", content: demo.answer.trim() });
      }
      messages.push({ role: "user", content: chatTurnParts(prompt.query, urlFor, text) });
      break;
  }
  return messages;
}

/**
 * The scoring form: the same messages plus the answer as the final assistant message, which the
 * server leaves open (`continue_final_message`) so the answer tokens are exactly what the model
 * would have had to generate after the generation prompt.
 */
export function renderScoringMessages(
  prompt: VlmPrompt,
  assistantContent: string,
  layout: LayoutSpec,
  urlFor: (ref: ImageRef) => string,
  text: PromptText = VQA_PROMPT_TEXT,
): ChatMessage[] {
  return [...renderMessages(prompt, layout, urlFor, text), { role: "assistant", content: assistantContent }];
}

/** Reference layout (Lever-Plus, docs/vlm.md): one user turn, each item's image then its text (VQA: "Question:{q} Short answer:{a}"). */
function leverPlusUserParts(prompt: VlmPrompt, urlFor: (ref: ImageRef) => string, text: PromptText): ContentPart[] {
  const parts: ContentPart[] = [];
  for (const demo of prompt.demonstrations) {
    pushImage(parts, demo, urlFor);
    pushText(parts, text.demonstrationText(demo));
  }
  pushImage(parts, prompt.query, urlFor);
  pushText(parts, text.queryText(prompt.query));
  return parts;
}

function chatTurnParts(
  item: Demonstration | PromptQuery,
  urlFor: (ref: ImageRef) => string,
  text: PromptText,
): ContentPart[] {
  const parts: ContentPart[] = [];
  pushImage(parts, item, urlFor);
  pushText(parts, text.turnText(item));
  return parts;
}

function pushImage(parts: ContentPart[], item: Demonstration | PromptQuery, urlFor: (ref: ImageRef) => string): void {
  if (item.imagePath === null) return;
  parts.push({ type: "image_url", image_url: { url: urlFor({ questionId: item.questionId, path: item.imagePath }) } });
}

/** The reference strips each filled text and drops empty ones. */
function pushText(parts: ContentPart[], text: string): void {
  const stripped = text.trim();
  if (stripped !== "") parts.push({ type: "text", text: stripped });
}
