import { describe, expect, it } from "vitest";
import { metricTitle, stageTitle } from "../../src/report/metric-names.js";

describe("metricTitle", () => {
  it("turns logged names into readable titles", () => {
    expect(metricTitle("loss")).toBe("Loss");
    expect(metricTitle("lr")).toBe("Learning rate");
    expect(metricTitle("gradNorm")).toBe("Gradient norm");
    expect(metricTitle("epoch.valAccuracyGain")).toBe("Validation accuracy gain (per epoch)");
    expect(metricTitle("epoch.valTop1")).toBe("Validation top-1 (per epoch)");
    expect(metricTitle("entropy@2")).toBe("Entropy at position 2");
    expect(metricTitle("epoch.selectionChange@1")).toBe("Selection change at position 1 (per epoch)");
    expect(metricTitle("kl")).toBe("KL");
    expect(metricTitle("vlm.cache_hits")).toBe("VLM cache hits");
  });

  it("heads a stage's charts with its common name", () => {
    expect(stageTitle("sft")).toBe("SFT");
    expect(stageTitle("grpo")).toBe("GRPO");
    expect(stageTitle("beams")).toBe("beams");
  });
});
