/**
 * `npm run bench`: runs every bench/*.bench.ts module (compiled to dist/bench/*.bench.js) in turn.
 * Each module exports `run(): Promise<void>` and prints its own table. `npm run bench -- pools`
 * runs only the modules whose name contains "pools".
 */
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const filter = process.argv[2] ?? "";
const modules = readdirSync(here)
  .filter((name) => name.endsWith(".bench.js") && name.includes(filter))
  .sort();
for (const name of modules) {
  console.log(`\n## ${name.replace(/\.bench\.js$/, "")}`);
  const module = (await import(pathToFileURL(join(here, name)).href)) as { run: () => Promise<void> };
  await module.run();
}
