import { describe, expect, it } from "vitest";
import { z } from "zod";
import { LeverError } from "../../src/util/errors.js";
import { parseFlags } from "../../src/util/validate.js";

describe("parseFlags", () => {
  const schema = z.object({ poolSampler: z.enum(["mix", "joint-sim"]).default("joint-sim"), k: z.number().int() });

  it("returns the parsed options, defaults filled", () => {
    expect(parseFlags(schema, { k: 8 })).toEqual({ poolSampler: "joint-sim", k: 8 });
  });

  it("turns the first problem into one LeverError naming the flag in its CLI spelling", () => {
    let error: unknown;
    try {
      parseFlags(schema, { k: 8, poolSampler: "nope" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LeverError);
    expect((error as LeverError).message).toMatch(/^field "--pool-sampler": Invalid option/);
    expect(() => parseFlags(schema, {})).toThrow(/^field "--k": /);
  });
});
