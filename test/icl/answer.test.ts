import { describe, expect, it } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import { answerPrompts, promptHash } from "../../src/icl/answer.js";
import { vqaAnswering } from "../../src/task/vqa.js";
import type { Vlm, VlmPrompt } from "../../src/vlm/types.js";

const prompt = (folder: string, file = "COCO_val2014_000000000042.jpg", question = "what colour?"): VlmPrompt => ({
  demonstrations: [
    { questionId: "7", imagePath: `${folder}/COCO_train2014_000000000007.jpg`, question: "how many?", answer: "2" },
  ],
  query: { questionId: "42", imagePath: `${folder}/${file}`, question },
});

describe("a prediction's prompt hash", () => {
  it("is the same for the same prompt over images in another folder (another or a moved workspace)", () => {
    expect(promptHash(prompt("/home/a/ws/images"))).toBe(promptHash(prompt("/mnt/b/coco")));
    expect(promptHash(prompt("/x"))).not.toBe(promptHash(prompt("/x", "COCO_val2014_000000000043.jpg")));
    expect(promptHash(prompt("/x"))).not.toBe(promptHash(prompt("/x", undefined, "what shape?")));
  });

  it("is what the answering path records", async () => {
    const vlm: Vlm = {
      id: "echo",
      generate: async (prompts) => prompts.map(() => ({ text: "red", tokens: 1 })),
      scoreAnswer: async () => [],
    };
    const query = { questionId: "42", answers: Array.from({ length: 10 }, () => ({ answer: "red" })) } as VqaItem;
    const [a, b] = (await answerPrompts([prompt("/one"), prompt("/two")], [query, query], {
      vlm,
      ...vqaAnswering("official"),
    }))!;
    expect(a.promptHash).toBe(promptHash(prompt("/one")));
    expect(b.promptHash).toBe(a.promptHash);
    expect(a.accuracy).toBe(1);
  });
});
