/**
 * A workspace nobody may write (a read-only disk, a shared results folder): reading commands work,
 * writing commands say it is read-only. Permission bits do not bind root, so when the tests run as
 * root the CLI runs in a child process without that privilege: as root without the capabilities that
 * bypass permission bits (`setpriv`), which still reads the clone wherever it sits (say in a mode-0700
 * home directory); where setpriv is missing, as the unprivileged user "nobody" (uid 65534), which needs
 * the clone readable by others.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Workspace } from "../../src/store/workspace.js";
import { runCliOk } from "../helpers/cli.js";

const CLI = resolve("dist/src/cli/main.js");
const BATCH = resolve("test/helpers/cli-batch.mjs");
const FIXTURES = resolve("test/fixtures/vqa/okvqa");

/** setpriv's arguments that drop the capabilities overriding file permissions. */
const DROP_CAPS = ["--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search", "--"];

/** How the CLI runs unprivileged: a command prefix and spawn options. */
function unprivileged(): { prefix: string[]; options: { uid?: number; gid?: number } } {
  if (process.getuid?.() !== 0) return { prefix: [], options: {} };
  const probe = spawnSync("setpriv", [...DROP_CAPS, process.execPath, "-e", "0"], { encoding: "utf8" });
  if (probe.status === 0) return { prefix: ["setpriv", ...DROP_CAPS], options: {} };
  return { prefix: [], options: { uid: 65534, gid: 65534 } };
}
const asUser = unprivileged();

/** Runs node with `args` unprivileged. */
function node(args: string[]) {
  const [command, ...rest] = [...asUser.prefix, process.execPath, ...args];
  return spawnSync(command, rest, { encoding: "utf8", ...asUser.options });
}

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

/** Runs `lever --workspace WS ARGS` for each ARGS, unprivileged, in one process (Node starts once). */
function levers(...commands: string[][]): { status: number; stdout: string; stderr: string }[] {
  const run = node([BATCH, JSON.stringify(commands.map((args) => ["--workspace", ws, ...args]))]);
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

describe("a read-only workspace", () => {
  it("can still be read: data list, data inspect, cache stats, compare", () => {
    const [list, inspect, stats, compare] = levers(
      ["data", "list"],
      ["data", "inspect", "ok"],
      ["cache", "stats"],
      ["compare", "eval-0001"],
    );
    expect(list.status, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^name\s+split.*\nok\s+train\s+vqa\s+6\s/);
    expect(inspect.status, inspect.stderr).toBe(0);
    expect(inspect.stdout).toContain("items 6, images 5");
    expect(stats.status, stats.stderr).toBe(0);
    expect(stats.stdout).toMatch(/sim:w\s+generate\s+1/);
    // compare only reads: it gets as far as looking the run up (there is none here), not "read-only".
    expect(compare.status).toBe(2);
    expect(compare.stderr).not.toContain("read-only");
    expect(compare.stderr).toMatch(/^error: .*eval-0001/);
  });

  it("refuses writes saying it is read-only (not 'not a usable workspace'), in one line", () => {
    for (const result of levers(
      ["cache", "prune", "--all"],
      ["pools", "--queries", "ok", "--index", "ok", "--sampler", "random"],
    )) {
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(
        /^error: \S+ws\/lever\.db: the workspace is read-only \(no write permission[^\n]*\n$/,
      );
    }
  });

  it("the unprivileged CLI still reads a clone that sits in a mode-0700 directory (say root's home)", () => {
    const home = mkdtempSync(join(tmpdir(), "lever-home-"));
    chmodSync(home, 0o700);
    const script = join(home, "clone.mjs");
    writeFileSync(script, 'process.stdout.write("read")\n');
    const result = node([script]);
    rmSync(home, { recursive: true, force: true });
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe("read");
  });

  it("a file the user may not read is one line naming it (permission denied)", () => {
    const secret = join(root, "secret.json");
    writeFileSync(secret, "[]");
    chmodSync(secret, 0o000); // not even its owner may read it (root without its capabilities included)
    const result = node([CLI, "metric", "vqa", "--results", secret, "--questions", secret, "--annotations", secret]);
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(`error: ${secret}: permission denied (EACCES)\n`);
  });
});
