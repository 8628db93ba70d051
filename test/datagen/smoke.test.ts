import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { datagenWorkspace } from "./helpers.js";

describe("smoke", () => {
  it("runs beams and rollouts", async () => {
    const w = await datagenWorkspace();
    const b = await runCli(w.args("beams", "--dataset", "train", "--pools", "p", "--anchors", "first:5", "--shots", "2", "--beam-size", "3", "--out", "b", "--json", "--quiet", ...w.world));
    console.log(b.stderr, b.stdout.slice(0, 1500));
    const r = await runCli(w.args("rollouts", "--dataset", "train", "--pools", "p", "--queries", "first:5", "--out", "r", "--quiet", ...w.world));
    console.log(r.stderr, r.stdout.slice(0, 3000));
    expect(b.code).toBe(0);
  });
});
