/**
 * `npm run bench`: runs every bench/*.bench.ts module (compiled to dist/bench/*.bench.js) in turn.
 * Each module exports `run(): Promise<void>` and prints its own table. `npm run bench -- pools`
 * runs only the modules whose name contains "pools". `--smoke` runs them at their smallest sizes
 * (bench/common.ts, SMOKE): a check that each still runs, not a measurement.
 */
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
// Before any bench module is imported: they read their sizes when they load.
if (args.includes("--smoke")) process.env.LEVER_BENCH_SMOKE = "1";
const filter = args.find((a) => !a.startsWith("--")) ?? "";
const modules = readdirSync(here)
  .filter((name) => name.endsWith(".bench.js") && name.includes(filter))
  .sort();
for (const name of modules) {
  console.log(`\n## ${name.replace(/\.bench\.js$/, "")}`);
  const started = performance.now();
  const module = (await import(pathToFileURL(join(here, name)).href)) as { run: () => Promise<void> };
  await module.run();
  if (process.env.LEVER_BENCH_SMOKE === "1")
    console.log(`(smoke: ${((performance.now() - started) / 1000).toFixed(1)} s)`);
}
