import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Workspace } from "../../src/store/workspace.js";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";

let root: string;

/** Runs `lever --workspace DIR cache …`, which must succeed; returns what it printed. */
const runCache = (dir: string, args: string[]) => runCliOk(["--workspace", dir, "cache", ...args]);

function workspaceWithEntries(name: string): string {
  const dir = join(root, name);
  const ws = Workspace.open(dir);
  const insert = ws.db.prepare("INSERT INTO vlm_cache VALUES (?, ?, ?, ?, ?)");
  insert.run("k1", "openai:qwen:abc", "generate", '{"text":"red","tokens":1}', "2020-01-01T00:00:00.000Z");
  insert.run(
    "k2",
    "openai:qwen:abc",
    "score",
    '{"logprobSum":-1,"logprobMean":-1,"tokens":1}',
    new Date().toISOString(),
  );
  insert.run("k3", "sim:world", "generate", '{"text":"no","tokens":1}', new Date().toISOString());
  ws.close();
  return dir;
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "lever-cache-cli-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("lever cache", () => {
  test("stats prints entries and bytes per model and kind, and a total", async () => {
    const dir = workspaceWithEntries("stats");
    const out = await runCache(dir, ["stats"]);
    expect(out).toMatch(/^model\s+kind\s+entries\s+bytes/);
    expect(out).toMatch(/openai:qwen:abc\s+generate\s+1\s+27 B/); // 2 (key) + 25 (response)
    expect(out).toMatch(/total: 3 entries/);
    const json = JSON.parse(await runCache(dir, ["stats", "--json"]));
    expect(json.map((r: { model: string; kind: string; entries: number }) => [r.model, r.kind, r.entries])).toEqual([
      ["openai:qwen:abc", "generate", 1],
      ["openai:qwen:abc", "score", 1],
      ["sim:world", "generate", 1],
    ]);
  });

  test("stats on a directory without a workspace says there is none, and creates none", async () => {
    const result = await runCli(["--workspace", join(root, "nothing-here"), "cache", "stats"]);
    expectUserError(result, /nothing-here\/lever\.db: no lever workspace here/);
    expect(existsSync(join(root, "nothing-here"))).toBe(false);
  });

  test("prune deletes by model and by age", async () => {
    const dir = workspaceWithEntries("prune");
    expect(await runCache(dir, ["prune", "--older-than", "30"])).toBe("deleted 1 cached response\n");
    expect(JSON.parse(await runCache(dir, ["prune", "--model", "sim:world", "--json"]))).toEqual({ deleted: 1 });
    expect(await runCache(dir, ["prune", "--all"])).toBe("deleted 1 cached response\n");
    expect(await runCache(dir, ["prune", "--all"])).toBe("deleted 0 cached responses\n");
  });

  test("prune refuses a missing filter and a bad day count with a one-line error naming the flag", async () => {
    const dir = workspaceWithEntries("refuse");
    expectUserError(await runCli(["--workspace", dir, "cache", "prune"]));
    expectUserError(
      await runCli(["--workspace", dir, "cache", "prune", "--older-than", "soon"]),
      'field "--older-than"',
    );
    const ws = Workspace.open(dir, { create: false });
    expect((ws.db.prepare("SELECT COUNT(*) AS n FROM vlm_cache").get() as { n: number }).n).toBe(3);
    ws.close();
  });
});
