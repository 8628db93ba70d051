import { describe, expect, it } from "vitest";
import {
  GrpoStageConfigSchema,
  onlineOf,
  parseRlSettings,
  resolveSettings,
} from "../../../src/train/stage/rl-settings.js";

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

  it("online GRPO defaults to prefix credit and β 0.5, offline to one reward per trajectory and β 0.04; given values stay", () => {
    const offline = resolveSettings(grpo({})).config;
    expect([offline.online.credit, offline.kl.beta]).toEqual(["trajectory", 0.04]);
    const online = resolveSettings(grpo({ online: { enabled: true } })).config;
    expect([online.online.credit, online.kl.beta]).toEqual(["prefix", 0.5]);
    const given = resolveSettings(grpo({ online: { enabled: true, credit: "trajectory" }, kl: { beta: 0.04 } })).config;
    expect([given.online.credit, given.kl.beta]).toEqual(["trajectory", 0.04]);
    expect(resolveSettings(grpo({ kl: { beta: 0 } })).config.kl.beta).toBe(0);
    // The online default asks for step ratios: said with the fix when sequence ratios were asked for.
    expect(() => resolveSettings(grpo({ online: { enabled: true }, loss: { ratioLevel: "sequence" } }))).toThrow(
      /set loss.ratioLevel to step \(or online.credit to trajectory\)/,
    );
    expect(resolveSettings(grpo({ loss: { ratioLevel: "sequence" } })).config.online.credit).toBe("trajectory");
  });

  it("resolving is idempotent: a run's stored resolved config, read back on resume, resolves to itself", () => {
    for (const over of [{}, { online: { enabled: true } }, { kl: { kind: "adaptive", beta: 0.2 } }]) {
      const stored = JSON.parse(JSON.stringify(resolveSettings(grpo(over)).config));
      const read = parseRlSettings("grpo", stored, { record: "grpo-0001" });
      expect(resolveSettings(read)).toEqual(read);
    }
  });

  it("a stored config is parsed by its own stage's schema, and only GRPO with online on is online", () => {
    const rce = parseRlSettings("rce", {}, { record: "rce-0001" });
    expect(rce.config.temperature).toBeDefined();
    expect(onlineOf(rce)).toBeNull();
    expect(() =>
      parseRlSettings("rce", { online: { enabled: true } }, { record: "rce-0001", fieldPrefix: "config" }),
    ).toThrow(/record "rce-0001", field "config": unexpected field\(s\): online/);
    expect(onlineOf(resolveSettings(parseRlSettings("grpo", {}, {})))).toBeNull();
    expect(onlineOf(resolveSettings(parseRlSettings("grpo", { online: { enabled: true } }, {})))?.samples).toBe(8);
  });
});
