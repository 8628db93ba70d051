import { describe, expect, it } from "vitest";
import { RETRIEVERS } from "../../src/icl/retriever-catalog.js";
import { REWARD_MODES } from "../../src/icl/rewards.js";
import { postprocessVqaAnswer } from "../../src/metrics/postprocess.js";
import { CAPTION_TASK } from "../../src/task/caption.js";
import { VQA_TASK } from "../../src/task/vqa.js";
import { DEFAULT_SYSTEM_PROMPT, DEFAULT_ZERO_SHOT_SYSTEM_PROMPT, defaultLayout } from "../../src/vlm/layouts.js";
import { openAiVlmConfigSchema } from "../../src/vlm/openai-settings.js";

describe("the VQA task is what the chain did before tasks existed", () => {
  it("lists every reward mode of the rewards table but the caption task's", () => {
    expect([...VQA_TASK.rewardModes, ...CAPTION_TASK.rewardModes].sort()).toEqual([...REWARD_MODES].sort());
    expect(VQA_TASK.rewardModes.filter((m) => CAPTION_TASK.rewardModes.includes(m))).toEqual([]);
  });

  it("names retriever kinds of the catalog as its baselines", () => {
    for (const kind of VQA_TASK.baselines) expect(Object.keys(RETRIEVERS)).toContain(kind);
  });

  it("post-processes with the Lever-Plus rule: cut at a stop word, then at the first comma", () => {
    for (const text of ["yes, it is", " two Question: what", "red\n", "", "a, b, c"])
      expect(VQA_TASK.postprocess(text)).toBe(postprocessVqaAnswer(text, "lever-plus"));
    expect(VQA_TASK.postprocess("yes, it is Short")).toBe("yes");
  });

  it("generates the openai backend's default token count (5) with the layout's default instruction", () => {
    expect(VQA_TASK.generation.maxTokens).toBe(5);
    expect(openAiVlmConfigSchema.parse({ baseUrls: ["http://localhost:1"], model: "m" }).maxTokens).toBe(
      VQA_TASK.generation.maxTokens,
    );
    expect(VQA_TASK.prompt.systemPrompt).toBe(DEFAULT_SYSTEM_PROMPT);
    expect(VQA_TASK.prompt.zeroShotSystemPrompt).toBe(DEFAULT_ZERO_SHOT_SYSTEM_PROMPT);
    expect(defaultLayout().systemPrompt).toBe(VQA_TASK.prompt.systemPrompt);
  });

  it("renders the reference text pieces", () => {
    const { text } = VQA_TASK.prompt;
    expect(text.demonstrationText({ question: "What color?", answer: "red" })).toBe(
      "Question:What color? Short answer:red",
    );
    expect(text.queryText({ question: "How many?" })).toBe("Question:How many? Short answer:");
    expect(text.turnText({ question: "How many?" })).toBe("Question:How many?");
  });

  it("stores items as they are and reports accuracy", () => {
    const item = {
      questionId: "1",
      imageId: "9",
      question: "q",
      answers: [{ answer: "a" }],
      answer: "a",
      questionType: "what",
      answerType: "other",
      imagePath: null,
    };
    expect(VQA_TASK.codec.fromStored(item)).toBe(item);
    expect(VQA_TASK.codec.toStored(item)).toBe(item);
    expect(VQA_TASK.wording.metric).toBe("accuracy");
  });
});
