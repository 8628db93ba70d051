import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { postprocessVqaAnswer } from "../../src/metrics/postprocess.js";
import { pairHash } from "../../src/sim/model.js";
import { SimVlm, worldFileContent } from "../../src/sim/vlm.js";
import type { World } from "../../src/sim/world.js";
import { LeverError } from "../../src/util/errors.js";
import { isFailure, type ScoreResult, type VlmPrompt } from "../../src/vlm/types.js";

const base = { seed: 11, trainItems: 800, valItems: 200, concepts: 10 };
const sim = SimVlm.fromParams(base);
const world = sim.world;
const train = world.itemsOf("train");
const val = world.itemsOf("val");

function prompt(w: World, q: number, demos: number[], answers?: string[]): VlmPrompt {
  return {
    query: { questionId: w.questionIds[q], imagePath: null, question: w.questions[q] },
    demonstrations: demos.map((d, j) => ({
      questionId: w.questionIds[d],
      imagePath: null,
      question: w.questions[d],
      answer: answers?.[j] ?? w.shownAnswer[d],
    })),
  };
}

/** A train item with the given relation to query q (same concept? same type?), not from q's image. */
function findDemo(w: World, q: number, sameConcept: boolean, sameType: boolean, skip = 0): number {
  const found = w
    .itemsOf("train")
    .filter(
      (d) =>
        (w.concept[d] === w.concept[q]) === sameConcept &&
        (w.qtype[d] === w.qtype[q]) === sameType &&
        w.imageOf[d] !== w.imageOf[q],
    );
  if (found.length <= skip) throw new Error("no such demo in the test world");
  return found[skip];
}

const logSumExp = (xs: number[]) => {
  const m = Math.max(...xs);
  return m + Math.log(xs.reduce((s, x) => s + Math.exp(x - m), 0));
};

describe("simulated VLM answer model", () => {
  it("computes the documented logits and probabilities (independent float64 recomputation)", async () => {
    const s = SimVlm.fromParams({ ...base, model: { jitter: 0.25 } });
    const w = s.world;
    const m = w.params.model;
    for (const q of val.slice(0, 25)) {
      const demos = [findDemo(w, q, false, false), findDemo(w, q, true, true), findDemo(w, q, false, true)];
      const p = prompt(w, q, demos);
      // Expected, straight from the formula in sim-model.ts.
      const cell = w.cell(w.concept[q], w.qtype[q]);
      const table = Array.from(cell.vocab);
      const logits = Array.from(cell.logProb, (lp) => m.priorScale * lp);
      const evidence = table.map(() => 0);
      let format = 0;
      let confusion = 0;
      demos.forEach((d, j) => {
        const cls = ["none", "sameConcept", "sameType", "sameCell"][
          (w.concept[d] === w.concept[q] ? 1 : 0) + (w.qtype[d] === w.qtype[q] ? 2 : 0)
        ] as "none";
        const pi = m.positionDecay ** (demos.length - 1 - j);
        const id = w.registry.idOf(w.shownAnswer[d]);
        let slot = table.indexOf(id);
        if (slot < 0) {
          table.push(id);
          logits.push(m.priorScale * m.floorLogProb);
          evidence.push(0);
          slot = table.length - 1;
        }
        evidence[slot] += (m.copyBase + m.relevance[cls]) * (1 + m.jitter * pairHash(q, d)) * pi;
        format += m.format[cls] * pi;
        confusion += m.confusion[cls] * pi;
      });
      evidence.forEach((e, k) => {
        logits[k] += m.pull * (1 - Math.exp(-e));
      });
      const t = table.indexOf(w.trueAnswer[q]);
      logits[t] += w.knowledge[q] + m.formatGain * (1 - Math.exp(-format)) - m.distraction * confusion;
      const tau = 1 + m.flatten * confusion;
      const logZ = logSumExp([...logits.map((l) => l / tau), m.tailLogit / tau + Math.log(m.tailSize)]);

      const best = logits.indexOf(Math.max(...logits));
      expect(s.answer(p).answer).toBe(w.registry.canonical[table[best]]);
      const scores = await s.scoreAnswer(table.map((id) => ({ prompt: p, answer: w.registry.canonical[id] })));
      scores.forEach((score, k) => {
        expect((score as ScoreResult).logprobSum).toBeCloseTo(logits[k] / tau - logZ, 10);
      });
      const [tail] = await s.scoreAnswer([{ prompt: p, answer: "zzz" }]);
      expect((tail as ScoreResult).logprobSum).toBeCloseTo(m.tailLogit / tau - logZ, 10);
    }
  });

  it("is a distribution: table probabilities plus the tail strings sum to 1", () => {
    const q = val[3];
    const p = prompt(world, q, [findDemo(world, q, true, true), findDemo(world, q, false, false)]);
    sim.logProb(p, "x");
    const model = sim.model;
    let total = model.params.tailSize * Math.exp(model.logProb(-1));
    for (let k = 0; k < model.tableSize; k++) total += Math.exp(model.logProb(k));
    expect(total).toBeCloseTo(1, 12);
  });

  it("answers zero-shot from the cell prior plus the item's knowledge", () => {
    for (const q of val.slice(0, 40)) {
      const cell = world.cell(world.concept[q], world.qtype[q]);
      const logits = Array.from(
        cell.logProb,
        (lp, k) => lp + (cell.vocab[k] === world.trueAnswer[q] ? world.knowledge[q] : 0),
      );
      const expected = world.registry.canonical[cell.vocab[logits.indexOf(Math.max(...logits))]];
      expect(sim.answer(prompt(world, q, [])).answer).toBe(expected);
    }
  });

  it("raises log p(answer) more for a relevant demonstration showing it than for an irrelevant one", () => {
    for (const q of val.slice(0, 20)) {
      const truth = world.registry.canonical[world.trueAnswer[q]];
      const zero = sim.logProb(prompt(world, q, []), truth);
      const cellDemo = sim.logProb(prompt(world, q, [findDemo(world, q, true, true)], [truth]), truth);
      const noneDemo = sim.logProb(prompt(world, q, [findDemo(world, q, false, false)], [truth]), truth);
      expect(cellDemo).toBeGreaterThan(noneDemo);
      expect(cellDemo).toBeGreaterThan(zero);
    }
  });

  it("weighs a demonstration less the farther it is from the query", () => {
    const s = SimVlm.fromParams({ ...base, model: { jitter: 0 } });
    const w = s.world;
    const q = val[0];
    const other = w.registry.canonical.find((a) => w.registry.idOf(a) !== w.trueAnswer[q] && a !== "yes") ?? "";
    const relevant = findDemo(w, q, true, true);
    const filler = findDemo(w, q, true, true, 1);
    // The same demonstration showing `other`, next to the query vs one slot farther away.
    const near = s.logProb(prompt(w, q, [filler, relevant], [w.shownAnswer[filler], other]), other);
    const far = s.logProb(prompt(w, q, [relevant, filler], [other, w.shownAnswer[filler]]), other);
    expect(near).toBeGreaterThan(far);
  });

  it("saturates: a second demonstration with the same answer adds less than the first, never past the ceiling", () => {
    const s = SimVlm.fromParams({ ...base, model: { jitter: 0 } });
    const w = s.world;
    const m = w.params.model;
    const target = "zzz"; // outside every vocabulary: its logit is the floor prior plus the pull
    for (const q of val.slice(0, 10)) {
      const a = findDemo(w, q, true, true);
      const b = findDemo(w, q, true, true, 1);
      const logit = (demos: number[]) => {
        s.logProb(
          prompt(
            w,
            q,
            demos,
            demos.map(() => target),
          ),
          target,
        );
        return s.model.logits[s.model.slotOf(s.answerId(target))];
      };
      const floor = m.priorScale * m.floorLogProb;
      const first = logit([a]) - floor;
      const second = logit([a, b]) - logit([a]);
      expect(first).toBeCloseTo(m.pull * (1 - Math.exp(-(m.copyBase + m.relevance.sameCell))), 10);
      expect(second).toBeGreaterThan(0);
      expect(second).toBeLessThan(first);
      expect(logit([a, b, a, b]) - floor).toBeLessThan(m.pull);
    }
  });

  it("lets irrelevant demonstrations confuse: flatter distribution and a weaker true answer", () => {
    // Without the format evidence every demonstration also brings, confusion is all that acts.
    const s = SimVlm.fromParams({ ...base, model: { format: { none: 0 } } });
    const w = s.world;
    let flatter = 0;
    const qs = val.slice(0, 30);
    for (const q of qs) {
      const truth = w.registry.canonical[w.trueAnswer[q]];
      const irrelevant = [0, 1, 2].map((k) => findDemo(w, q, false, false, k));
      // Show answers outside the query's vocabulary so no pull acts on the table's answers.
      const shown = ["qqq", "rrr", "sss"];
      s.logProb(prompt(w, q, []), truth);
      const zeroTrue = s.model.logits[s.model.trueSlot];
      const zeroTop = s.model.logProb(s.model.argmax());
      s.logProb(prompt(w, q, irrelevant, shown), truth);
      expect(s.model.logits[s.model.trueSlot]).toBeLessThan(zeroTrue);
      if (s.model.logProb(s.model.argmax()) < zeroTop) flatter++;
    }
    expect(flatter).toBeGreaterThan(qs.length * 0.8);
  });

  it("copies an answer unknown to the world when demonstrations push it hard enough", () => {
    const q = val[2];
    const demos = [0, 1, 2, 3].map((k) => findDemo(world, q, true, true, k));
    const s = SimVlm.fromParams({ ...base, model: { pull: 20 } });
    expect(
      s.answer(
        prompt(
          s.world,
          q,
          demos,
          demos.map(() => "Blue-ish Thing"),
        ),
      ).answer,
    ).toBe("Blue-ish Thing");
  });
});

describe("SimVlm as a Vlm backend", () => {
  it("generates deterministically; decorated outputs are cleaned by the answer post-processor", async () => {
    const prompts = val.slice(0, 150).map((q, i) => prompt(world, q, train.slice(i, i + (i % 5))));
    const first = await sim.generate(prompts);
    const second = await SimVlm.fromParams(base).generate(prompts);
    expect(second).toEqual(first);
    let decorated = 0;
    first.forEach((result, i) => {
      if (isFailure(result)) throw new Error(result.message);
      const answer = sim.answer(prompts[i]).answer;
      if (result.text !== answer) decorated++;
      expect(postprocessVqaAnswer(result.text)).toBe(answer);
      expect(result.tokens).toBe(result.text.trim().split(/\s+/).length);
    });
    expect(decorated).toBeGreaterThan(3);
    expect(decorated).toBeLessThan(40);
  });

  it("scores the greedy answer highest, counts whitespace tokens, and treats surface variants alike", async () => {
    const q = val[5];
    const p = prompt(world, q, [train[0], train[1]]);
    const greedy = sim.answer(p).answer;
    sim.logProb(p, greedy);
    const options = Array.from(
      sim.model.tableIds.subarray(0, sim.model.tableSize),
      (id) => world.registry.canonical[id],
    );
    const scores = (await sim.scoreAnswer(options.map((answer) => ({ prompt: p, answer })))) as ScoreResult[];
    const best = scores.reduce((b, s, k) => (s.logprobSum > scores[b].logprobSum ? k : b), 0);
    expect(options[best]).toBe(greedy);
    const [room, two, Two] = (await sim.scoreAnswer([
      { prompt: p, answer: "living room" },
      { prompt: p, answer: "2" },
      { prompt: p, answer: "Two" },
    ])) as ScoreResult[];
    expect(room.tokens).toBe(2);
    expect(room.logprobMean).toBeCloseTo(room.logprobSum / 2, 12);
    expect(Two.logprobSum).toBe(two.logprobSum);
    const [empty] = await sim.scoreAnswer([{ prompt: p, answer: "  " }]);
    expect(isFailure(empty)).toBe(true);
    expect(empty).toMatchObject({ reason: "invalid-request", message: expect.stringMatching(/empty answer/) });
  });

  it("rejects question ids outside its world with a LeverError naming the id and the prompt field", async () => {
    const p = prompt(world, val[0], [train[0]]);
    p.demonstrations[0].questionId = "999999999999";
    await expect(sim.generate([p])).rejects.toThrow(LeverError);
    await expect(sim.generate([p])).rejects.toThrow(/999999999999.*demonstrations\[0\]\.questionId/);
  });

  it("stops when its abort signal fires", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(sim.generate([prompt(world, val[0], [])], { signal: controller.signal })).rejects.toThrow();
  });

  it("is rebuilt from world.json exactly, and refuses a world.json whose world no longer matches", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lever-sim-"));
    const file = join(dir, "world.json");
    writeFileSync(file, JSON.stringify(worldFileContent(world)));
    const rebuilt = SimVlm.fromWorldFile(file);
    expect(rebuilt.id).toBe(sim.id);
    const prompts = val.slice(0, 20).map((q) => prompt(world, q, [train[3]]));
    expect(await rebuilt.generate(prompts)).toEqual(await sim.generate(prompts));

    const tampered = JSON.parse(readFileSync(file, "utf8"));
    tampered.fingerprint = "0".repeat(64);
    writeFileSync(file, JSON.stringify(tampered));
    expect(() => SimVlm.fromWorldFile(file)).toThrow(/world\.json.*fingerprint/);
    tampered.params.concepts = -1;
    writeFileSync(file, JSON.stringify(tampered));
    expect(() => SimVlm.fromWorldFile(file)).toThrow(/params\.concepts/);
    expect(() => SimVlm.fromWorldFile(join(dir, "missing.json"))).toThrow(/missing\.json/);
  });

  it("changes its id with the answer-model parameters (the id is part of every cache key)", () => {
    expect(SimVlm.fromParams({ ...base, model: { pull: 1 } }).id).not.toBe(sim.id);
    expect(SimVlm.fromParams({ ...base, seed: 12 }).id).not.toBe(sim.id);
  });
});
