import { describe, expect, it } from "vitest";
import {
  DEFAULT_SYSTEM_PROMPT,
  DEFAULT_ZERO_SHOT_SYSTEM_PROMPT,
  defaultLayout,
  promptImages,
  renderMessages,
  renderScoringMessages,
} from "../../src/vlm/layouts.js";
import type { VlmPrompt } from "../../src/vlm/types.js";

const urlFor = (ref: { questionId: string; path: string }) => `img://${ref.questionId}${ref.path}`;

const twoShot: VlmPrompt = {
  demonstrations: [
    { questionId: "11", imagePath: "/a.jpg", question: "What is on the plate?", answer: "broccoli" },
    { questionId: "12", imagePath: "/b.jpg", question: " What color is the bus? ", answer: "red " },
  ],
  query: { questionId: "99", imagePath: "/q.jpg", question: "How many dogs?" },
};

describe("lever-plus layout", () => {
  it("renders one user turn of interleaved image/text parts after the system prompt, in the given order", () => {
    expect(renderMessages(twoShot, defaultLayout("lever-plus"), urlFor)).toEqual([
      { role: "system", content: DEFAULT_SYSTEM_PROMPT },
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: "img://11/a.jpg" } },
          { type: "text", text: "Question:What is on the plate? Short answer:broccoli" },
          { type: "image_url", image_url: { url: "img://12/b.jpg" } },
          // the filled template is stripped as a whole, as the reference does (inner spaces stay)
          { type: "text", text: "Question: What color is the bus?  Short answer:red" },
          { type: "image_url", image_url: { url: "img://99/q.jpg" } },
          { type: "text", text: "Question:How many dogs? Short answer:" },
        ],
      },
    ]);
  });

  it("renders zero-shot as just the query with the zero-shot system prompt", () => {
    const zeroShot: VlmPrompt = { demonstrations: [], query: twoShot.query };
    expect(renderMessages(zeroShot, defaultLayout("lever-plus"), urlFor)).toEqual([
      { role: "system", content: DEFAULT_ZERO_SHOT_SYSTEM_PROMPT },
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: "img://99/q.jpg" } },
          { type: "text", text: "Question:How many dogs? Short answer:" },
        ],
      },
    ]);
  });

  it("omits the system message when the system prompt is null and skips images of image-less items", () => {
    const prompt: VlmPrompt = {
      demonstrations: [{ questionId: "1", imagePath: null, question: "Q1", answer: "A1" }],
      query: { questionId: "2", imagePath: null, question: "Q2" },
    };
    const layout = { ...defaultLayout("lever-plus"), systemPrompt: null };
    expect(renderMessages(prompt, layout, urlFor)).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Question:Q1 Short answer:A1" },
          { type: "text", text: "Question:Q2 Short answer:" },
        ],
      },
    ]);
  });

  it("appends the answer as a final assistant message for scoring", () => {
    const messages = renderScoringMessages(twoShot, "three", defaultLayout("lever-plus"), urlFor);
    expect(messages.at(-1)).toEqual({ role: "assistant", content: "three" });
    expect(messages.slice(0, -1)).toEqual(renderMessages(twoShot, defaultLayout("lever-plus"), urlFor));
  });

  it("does not claim a fixed number of examples in its default system prompt", () => {
    expect(DEFAULT_SYSTEM_PROMPT).not.toMatch(/\b(one|two|three|four|five|\d+) (example|dialogue)/i);
  });
});

describe("chat-turns layout", () => {
  it("renders a user/assistant pair per demonstration, then the query turn", () => {
    expect(renderMessages(twoShot, defaultLayout("chat-turns"), urlFor)).toEqual([
      { role: "system", content: DEFAULT_SYSTEM_PROMPT },
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: "img://11/a.jpg" } },
          { type: "text", text: "Question:What is on the plate?" },
        ],
      },
      { role: "assistant", content: "broccoli" },
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: "img://12/b.jpg" } },
          { type: "text", text: "Question: What color is the bus?" },
        ],
      },
      { role: "assistant", content: "red" },
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: "img://99/q.jpg" } },
          { type: "text", text: "Question:How many dogs?" },
        ],
      },
    ]);
  });

  it("renders zero-shot as the system prompt and the query turn only", () => {
    const zeroShot: VlmPrompt = { demonstrations: [], query: twoShot.query };
    expect(renderMessages(zeroShot, defaultLayout("chat-turns"), urlFor)).toEqual([
      { role: "system", content: DEFAULT_ZERO_SHOT_SYSTEM_PROMPT },
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: "img://99/q.jpg" } },
          { type: "text", text: "Question:How many dogs?" },
        ],
      },
    ]);
  });

  it("keeps the caller's demonstration order (reversing the list reverses the turns)", () => {
    const reversed: VlmPrompt = { ...twoShot, demonstrations: [...twoShot.demonstrations].reverse() };
    const messages = renderMessages(reversed, defaultLayout("chat-turns"), urlFor);
    expect(messages[2]).toEqual({ role: "assistant", content: "red" });
    expect(messages[4]).toEqual({ role: "assistant", content: "broccoli" });
  });
});

describe("promptImages", () => {
  it("lists images in render order with their question ids", () => {
    expect(promptImages(twoShot)).toEqual([
      { questionId: "11", path: "/a.jpg" },
      { questionId: "12", path: "/b.jpg" },
      { questionId: "99", path: "/q.jpg" },
    ]);
  });
});

describe("a task's prompt text", () => {
  const captionLike = {
    demonstrationText: (item: { answer: string }) => `Caption: ${item.answer}`,
    queryText: () => "Caption:",
    turnText: () => "Describe the image.",
  };

  it("renders each item's text in the lever-plus layout", () => {
    const user = renderMessages(twoShot, defaultLayout("lever-plus"), urlFor, captionLike)[1];
    expect(user.content).toEqual([
      { type: "image_url", image_url: { url: "img://11/a.jpg" } },
      { type: "text", text: "Caption: broccoli" },
      { type: "image_url", image_url: { url: "img://12/b.jpg" } },
      { type: "text", text: "Caption: red" },
      { type: "image_url", image_url: { url: "img://99/q.jpg" } },
      { type: "text", text: "Caption:" },
    ]);
  });

  it("renders each user turn's text in the chat-turns layout and in the scoring form", () => {
    const messages = renderScoringMessages(twoShot, "a dog", defaultLayout("chat-turns"), urlFor, captionLike);
    expect(messages.slice(1).map((m) => (m.role === "user" ? m.content[1] : m.content))).toEqual([
      { type: "text", text: "Describe the image." },
      "broccoli",
      { type: "text", text: "Describe the image." },
      "red",
      { type: "text", text: "Describe the image." },
      "a dog",
    ]);
  });
});
