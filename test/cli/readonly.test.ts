/**
 * A workspace nobody may write (a read-only disk, a shared results folder): reading commands work,
 * writing commands say it is read-only. Permission bits do not bind root, so when the tests run as
 * root the CLI runs as the unprivileged user "nobody" (uid 65534) in a child process.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Workspace } from "../../src/store/workspace.js";
import { runCliOk } from "../helpers/cli.js";

const CLI = resolve("dist/src/cli/main.js");
const FIXTURES = resolve("test/fixtures/vqa/okvqa");
const asUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

let root: string;
let ws: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "lever-readonly-"));
  ws = join(root, "ws");
  await runCliOk([
    "--workspace",
    ws,
    "data",
    "import",
    "--questions",
    join(FIXTURES, "OpenEnded_mscoco_train2014_questions.json"),
    "--annotations",
    join(FIXTURES, "mscoco_train2014_annotations.json"),
    "--split",
    "train",
    "--name",
    "ok",
  ]);
  const open = Workspace.open(ws);
  open.db.prepare("INSERT INTO vlm_cache VALUES ('k', 'sim:w', 'generate', '{}', '2026-01-01T00:00:00Z')").run();
  open.close();
  for (const path of [join(ws, "artifacts"), join(ws, "lever.db"), ws]) chmodSync(path, 0o555);
  chmodSync(join(ws, "lever.db"), 0o444);
  chmodSync(root, 0o755);
});
afterAll(() => {
  chmodSync(ws, 0o755);
  rmSync(root, { recursive: true, force: true });
});

function lever(...args: string[]) {
  return spawnSync(process.execPath, [CLI, "--workspace", ws, ...args], { encoding: "utf8", ...asUser });
}

describe("a read-only workspace", () => {
  it("can still be read: data list, data inspect, cache stats, compare", () => {
    const list = lever("data", "list");
    expect(list.status, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^name\s+split.*\nok\s+train\s+vqa\s+6\s/);
    const inspect = lever("data", "inspect", "ok");
    expect(inspect.status, inspect.stderr).toBe(0);
    expect(inspect.stdout).toContain("items 6, images 5");
    const stats = lever("cache", "stats");
    expect(stats.status, stats.stderr).toBe(0);
    expect(stats.stdout).toMatch(/sim:w\s+generate\s+1/);
    // compare only reads: it gets as far as looking the run up (there is none here), not "read-only".
    const compare = lever("compare", "eval-0001");
    expect(compare.status).toBe(2);
    expect(compare.stderr).not.toContain("read-only");
    expect(compare.stderr).toMatch(/^error: .*eval-0001/);
  });

  it("refuses writes saying it is read-only (not 'not a usable workspace'), in one line", () => {
    for (const args of [
      ["cache", "prune", "--all"],
      ["pools", "--queries", "ok", "--index", "ok", "--sampler", "random"],
    ]) {
      const result = lever(...args);
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(
        /^error: \S+ws\/lever\.db: the workspace is read-only \(no write permission[^\n]*\n$/,
      );
    }
  });

  it("a file the user may not read is one line naming it (permission denied)", () => {
    if (asUser.uid === undefined && process.getuid?.() === 0) return; // cannot drop privileges here
    const secret = join(root, "secret.json");
    writeFileSync(secret, "[]");
    chmodSync(secret, 0o600);
    const result = spawnSync(
      process.execPath,
      [CLI, "metric", "vqa", "--results", secret, "--questions", secret, "--annotations", secret],
      { encoding: "utf8", ...asUser },
    );
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(`error: ${secret}: permission denied (EACCES)\n`);
  });
});
