// Builds the optional native kernels (native/*.cc) with node-gyp during `npm ci`.
// A failed build is not fatal: every kernel has a TypeScript fallback (see `lever doctor`).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

if (process.env.LEVER_NATIVE === "0") {
  console.log("lever: LEVER_NATIVE=0, skipping the native build");
  process.exit(0);
}
if (!existsSync("binding.gyp")) process.exit(0);
const npmDir = process.env.npm_execpath ? new URL(".", `file://${process.env.npm_execpath}`).pathname : null;
const candidates = [
  npmDir && `${npmDir}../node_modules/node-gyp/bin/node-gyp.js`,
  npmDir && `${npmDir}node_modules/node-gyp/bin/node-gyp.js`,
].filter(Boolean);
const gyp = candidates.find((p) => existsSync(p));
const result = gyp
  ? spawnSync(process.execPath, [gyp, "rebuild", "--release"], { stdio: "inherit" })
  : spawnSync("node-gyp", ["rebuild", "--release"], { stdio: "inherit", shell: true });
if (result.status !== 0) {
  console.warn("lever: native kernels failed to build; the TypeScript kernels will be used (slower, same results).");
}
process.exit(0);
