/**
 * The install (README, "Set up and run"): `npm ci` downloads nothing from outside the npm registry, and
 * npm prints no warning about the project's own configuration on every command.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

describe("installing", () => {
  it("npm warns about no project config (the old .npmrc key made it warn on every command)", () => {
    const npm = spawnSync("npm", ["config", "get", "registry"], { encoding: "utf8", shell: false });
    expect(npm.status, npm.stderr).toBe(0);
    expect(npm.stderr).not.toMatch(/Unknown project config/);
    if (existsSync(".npmrc")) expect(readFileSync(".npmrc", "utf8")).not.toMatch(/onnxruntime/);
  });

  it("onnxruntime-node's download script is denied: in package.json for npm, by ONNXRUNTIME_NODE_INSTALL in CI", () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8"));
    expect(pkg.allowScripts["onnxruntime-node"]).toBe(false);
    const ci = readFileSync(".ci/run", "utf8");
    const skip = ci.indexOf("export ONNXRUNTIME_NODE_INSTALL=skip");
    expect(skip).toBeGreaterThan(0);
    expect(skip).toBeLessThan(ci.indexOf("npm ci"));
  });
});
