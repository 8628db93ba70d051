import { describe, expect, expectTypeOf, it } from "vitest";
import { GrpoSchema, resolveModeDefaults } from "../../../src/train/objective/grpo-settings.js";
import { KlController, KlControlSchema } from "../../../src/train/objective/kl-control.js";

/** KL settings as a GRPO run resolves them (offline: β 0.04 when unset). */
const resolvedKl = (kl: object) => resolveModeDefaults(GrpoSchema.parse({ kl }), "offline").kl;

describe("KL coefficient controller", () => {
  it("has the documented defaults and keeps a fixed β", () => {
    const cfg = KlControlSchema.parse({});
    // β is left unset: its default depends on online vs offline (rl-settings.test.ts)
    expect(cfg).toEqual({ kind: "fixed", targetKl: 0.05, horizon: 10000 });
    // The controller takes resolved settings only: an unset β is a compile error, not a run-time check.
    expectTypeOf(cfg).not.toExtend<ConstructorParameters<typeof KlController>[0]>();
    const c = new KlController(resolvedKl({}));
    expect(c.update(5, 1000)).toBe(0.04);
    expect(c.state()).toEqual({ beta: 0.04 });
  });

  it("adapts β proportionally: e = clip(KL/target − 1, ±0.2), β ← β·(1 + e·n/horizon)", () => {
    const c = new KlController(resolvedKl({ kind: "adaptive", beta: 0.1, targetKl: 0.05, horizon: 100 }));
    // KL 0.055: e = 0.1, n = 10 → ×1.01
    expect(c.update(0.055, 10)).toBeCloseTo(0.1 * 1.01, 12);
    // KL 1 (20× the target): e clipped to 0.2 → ×1.02
    expect(c.update(1, 10)).toBeCloseTo(0.1 * 1.01 * 1.02, 12);
    // KL 0.05: on target, unchanged
    expect(c.update(0.05, 10)).toBeCloseTo(0.1 * 1.01 * 1.02, 12);
    // KL 0: e = −1 clipped to −0.2, n = 50 → ×0.9
    expect(c.update(0, 50)).toBeCloseTo(0.1 * 1.01 * 1.02 * 0.9, 12);
    // KL 0.04: e = −0.2, n = 100 → ×0.8
    expect(c.update(0.04, 100)).toBeCloseTo(0.1 * 1.01 * 1.02 * 0.9 * 0.8, 12);
  });

  it("resumes from its serialised state", () => {
    const cfg = resolvedKl({ kind: "adaptive", beta: 0.1, horizon: 100 });
    const a = new KlController(cfg);
    a.update(0.2, 10);
    const b = new KlController(cfg, JSON.parse(JSON.stringify(a.state())));
    expect(b.beta).toBe(a.beta);
    expect(b.update(0.01, 7)).toBe(a.update(0.01, 7));
  });

  it("rejects an adaptive β of 0 with a fix", () => {
    const r = KlControlSchema.safeParse({ kind: "adaptive", beta: 0 });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0].message).toMatch(/must start above 0/);
  });
});
