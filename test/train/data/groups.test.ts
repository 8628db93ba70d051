/** SFT labels from beam data (src/train/data/groups.ts) and their packing into batches (src/train/loop/batch.ts). */
import { describe, expect, it } from "vitest";
import { buildSftGroups } from "../../../src/train/data/groups.js";
import { buildBatch } from "../../../src/train/loop/batch.js";
import { syntheticWorld } from "../synthetic.js";

const world = syntheticWorld({ seed: 1, queries: 240, perConcept: 20, concepts: 8, d: 12, K: 12, noise: 0.05 });
const files = { beams: "beams.json", pools: "pools.json" };
/** SFT groups of the synthetic world's own beams and pools. */
const worldGroups = (options: Parameters<typeof buildSftGroups>[3]) =>
  buildSftGroups(world.beams, world.pools, world.sources, options, files);

describe("SFT data", () => {
  it("labels each beam by the positions of its ICDs in the query's pool, in selection order", () => {
    const { groups, stats } = worldGroups({ weighting: "uniform", missing: "error" });
    expect(stats).toMatchObject({ queries: 240, trajectories: 480, shots: 2, K: 12, skippedBeams: 0 });
    for (const g of groups.slice(0, 20)) {
      const pool = world.pools.pools[g.queryId];
      g.trajectories.forEach((traj, i) => {
        expect([...traj].map((p) => pool[p])).toEqual(world.beams.queries[g.queryId].beams[i].selected);
      });
      expect(g.best).toBe(0);
    }
  });

  it("errors on a beam ICD missing from the pool, naming file, query and field, or skips and counts it", () => {
    const beams = structuredClone(world.beams);
    beams.queries["100003"].beams[1].selected[0] = "1299999";
    expect(() =>
      buildSftGroups(beams, world.pools, world.sources, { weighting: "uniform", missing: "error" }, files),
    ).toThrow(
      /beams\.json, record "100003", field "beams\[1\]\.selected\[0\]": ICD "1299999" is not in the query's pool/,
    );
    const { stats } = buildSftGroups(
      beams,
      world.pools,
      world.sources,
      { weighting: "uniform", missing: "skip" },
      files,
    );
    expect(stats.skippedBeams).toBe(1);
    expect(stats.trajectories).toBe(479);
  });

  it("weights beams by score rank when asked (1, 1/2, …)", () => {
    const { groups } = worldGroups({ weighting: "rank", missing: "error" });
    expect(groups[0].weights).toEqual([1, 1 / 2]);
  });

  it("packs queries with different pool sizes and trajectory counts into one padded batch", () => {
    const { groups } = worldGroups({ weighting: "uniform", missing: "error" });
    const a = { ...groups[0], candRows: groups[0].candRows.slice(0, 7) };
    a.trajectories = a.trajectories.filter((t) => t.every((p) => p < 7));
    a.weights = a.trajectories.map(() => 1);
    if (a.trajectories.length === 0) a.trajectories = [Int32Array.from([0, 1])];
    a.weights = a.trajectories.map(() => 1);
    const batch = buildBatch([a, groups[1]], world.sources, "float32");
    expect(batch.input.K).toBe(12);
    expect(batch.G).toBe(2);
    expect([...batch.input.slots.subarray(7, 12)]).toEqual([-1, -1, -1, -1, -1]);
    expect(batch.weights.reduce((s, v) => s + v, 0)).toBe(a.trajectories.length + 2);
    // The compact table holds each distinct index row once.
    // buildBatch gives the raw table (a TableEncoding only comes from encodeTable at evaluation).
    expect((batch.input.table as ArrayLike<number>).length / 12).toBe(
      new Set([...a.candRows, ...groups[1].candRows]).size,
    );
  });
});
