import { describe, expect, it } from "vitest";
import { GrpoStageConfigSchema, onlineOf, parseRlSettings, resolveSettings } from "../../src/train/rl-settings.js";

const grpo = (over: object) => ({ stage: "grpo" as const, config: GrpoStageConfigSchema.parse(over) });

describe("RL stage settings", () => {
  it("the 'auto' best-epoch metric is valAccuracy with the VLM's answers; online GRPO cannot do without them", () => {
    const online = grpo({ online: { enabled: true }, validation: { answers: false } });
    expect(() => resolveSettings(online)).toThrow(/online GRPO .* validation\.answers on/);
    expect(resolveSettings(grpo({})).config.optim.earlyStopping.metric).toBe("valAccuracy");
    expect(resolveSettings(grpo({ validation: { answers: false } })).config.optim.earlyStopping.metric).toBe("valRce");
  });

  it("prefix credit is refused offline and with sequence ratios, with the fix in the message", () => {
    expect(() => resolveSettings(grpo({ online: { credit: "prefix" } }))).toThrow(/trains online only: add --online/);
    expect(() =>
      resolveSettings(grpo({ online: { enabled: true, credit: "prefix" }, loss: { ratioLevel: "sequence" } })),
    ).toThrow(/set loss.ratioLevel to step/);
    const resolved = resolveSettings(grpo({ online: { enabled: true, credit: "prefix" } }));
    expect(resolved.config.online.credit).toBe("prefix");
  });

  it("a stored config is parsed by its own stage's schema, and only GRPO with online on is online", () => {
    const rce = parseRlSettings("rce", {}, { record: "rce-0001" });
    expect(rce.config.temperature).toBeDefined();
    expect(onlineOf(rce)).toBeNull();
    expect(() =>
      parseRlSettings("rce", { online: { enabled: true } }, { record: "rce-0001", fieldPrefix: "config" }),
    ).toThrow(/record "rce-0001", field "config": unexpected field\(s\): online/);
    expect(onlineOf(parseRlSettings("grpo", {}, {}))).toBeNull();
    expect(onlineOf(parseRlSettings("grpo", { online: { enabled: true } }, {}))?.samples).toBe(8);
  });
});
