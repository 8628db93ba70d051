import { describe, expect, it, vi } from "vitest";
import { toStored } from "../../src/store/files.js";

describe("toStored", () => {
  it("marks paths inside the root, and builds its pattern once per root, not per call", () => {
    const made = vi.spyOn(globalThis, "RegExp");
    try {
      const texts = ["/w/ws/a.json", "x:/w/ws/b", "/w/ws-other/c", "/w/ws"];
      const want = ["<workspace>/a.json", "x:<workspace>/b", "/w/ws-other/c", "<workspace>"];
      for (let i = 0; i < 3; i++) expect(texts.map((t) => toStored("/w/ws", t))).toEqual(want);
      expect(made).toHaveBeenCalledTimes(1);
      // Another root gets its own pattern, and the first root still marks correctly afterwards.
      expect(toStored("/v", "/v/a /w/ws/a")).toBe("<workspace>/a /w/ws/a");
      expect(toStored("/w/ws", "/v/a /w/ws/a")).toBe("/v/a <workspace>/a");
    } finally {
      made.mockRestore();
    }
  });
});
