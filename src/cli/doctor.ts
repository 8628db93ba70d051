import type { Command } from "commander";
import { engineReport } from "../tensor/diagnostics.js";
import { printJson } from "./common.js";

/** `lever doctor`: environment and numeric-engine diagnostics (kernel path, OpenBLAS, threads, GEMM speed). */
export function register(program: Command): void {
  program
    .command("doctor")
    .description("show the Node version, numeric kernel path (openblas/native/typescript), threads and GEMM speed")
    .option("--json", "print the report as JSON")
    .action((opts: { json?: boolean }) => {
      const report = engineReport();
      if (opts.json) {
        printJson(report);
        return;
      }
      const lines = [
        `node           ${report.node}`,
        `kernel path    ${report.kernelPath}`,
        `native addon   ${report.nativeAddon}`,
        `OpenBLAS       ${report.openblas ?? "not found"}`,
        `threads        ${report.threads}`,
        `simd           ${report.simd ?? "-"}`,
        `gemm ${report.gemmGflops.shape}: ${report.gemmGflops.active} GFLOP/s (${report.kernelPath}), ` +
          `${report.gemmGflops.typescript} GFLOP/s (typescript)`,
      ];
      process.stdout.write(`${lines.join("\n")}\n`);
    });
}
