import type { Command } from "commander";
import { makePools, PoolsSettingsSchema } from "../pools/stage.js";
import { stageTask } from "../task/guard.js";
import { queryKindOf } from "../task/query-embedding.js";
import { group, printJson, withWorkspace } from "./common.js";
import { bindSettings, resolve } from "./options.js";

/** Registers `lever pools`: candidate pools for every query of a dataset, stored as an artefact. */
export function register(program: Command): void {
  const command = group(program, "pools", "choose K candidate demonstrations per query (the pool contract)").option(
    "--json",
    "print the summary as JSON",
  );
  const settings = bindSettings(command, PoolsSettingsSchema, { fileOption: "config" });
  command.action(async (flags: { json?: boolean }, cmd: Command) => {
    const s = resolve(cmd, settings);
    const { ref: _ref, ...summary } = await withWorkspace(cmd, (ws) => {
      // Pools are task-agnostic (embeddings only), but a stage never mixes tasks.
      const query = ws.requireDataset(s.queries);
      stageTask("pools", { query, index: ws.requireDataset(s.index) });
      return makePools(ws, s, queryKindOf(query));
    });
    if (flags.json) printJson(summary);
    else
      process.stdout.write(
        `pools ${summary.name}: ${summary.queries} queries × K=${summary.k} from ${summary.index} ${s.index} items ` +
          `(sampler ${s.sampler}${summary.ratios ? ` ${[summary.ratios.random, summary.ratios.text, summary.ratios.image].join(",")}` : ""}, seed ${s.seed}) ` +
          `→ ${summary.path} (sha256 ${summary.sha256.slice(0, 12)}) in ${summary.seconds.toFixed(1)} s` +
          `${summary.gemm !== null ? ` [gemm: ${summary.gemm}]` : ""}\n`,
      );
  });
}
