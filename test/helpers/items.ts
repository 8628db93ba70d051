import type { VqaItem } from "../../src/data/item.js";

/** A minimal valid item for tests that only care about ids (text and answers are placeholders). */
export function stubItem(questionId: string, imageId: string): VqaItem {
  return {
    questionId,
    imageId,
    question: "q?",
    answers: [{ answer: "a" }],
    answer: "a",
    questionType: "what",
    answerType: "other",
    imagePath: null,
  };
}
