import { Command } from "commander";
import { describe, expect, it, vi } from "vitest";
import { register } from "../../src/cli/doctor.js";
import { engineReport } from "../../src/tensor/diagnostics.js";
import { kernelPath, native } from "../../src/tensor/index.js";

describe("lever doctor", () => {
  it("reports the node version, the active kernel path, OpenBLAS, threads and a measured GEMM speed", () => {
    const report = engineReport();
    expect(report.node).toBe(process.version);
    expect(report.kernelPath).toBe(kernelPath());
    expect(report.openblas !== null).toBe(kernelPath() === "openblas");
    expect(report.simd === null).toBe(native.addon === null);
    expect(report.threads).toBeGreaterThanOrEqual(1);
    expect(report.gemmGflops.active).toBeGreaterThan(0);
    expect(report.gemmGflops.typescript).toBeGreaterThan(0);
  });

  it("prints the report as JSON with --json", async () => {
    const program = new Command().exitOverride();
    register(program);
    const writes: string[] = [];
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      writes.push(String(chunk));
      return true;
    });
    try {
      await program.parseAsync(["doctor", "--json"], { from: "user" });
    } finally {
      spy.mockRestore();
    }
    const parsed = JSON.parse(writes.join(""));
    expect(parsed.kernelPath).toBe(kernelPath());
    expect(parsed.gemmGflops.shape).toBe("256x256x256 float32");
  });
});
