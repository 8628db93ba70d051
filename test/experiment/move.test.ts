/**
 * A moved workspace (`mv ws1 ws2`) keeps its identities: paths inside the workspace are stored
 * workspace-relative (src/store/files.ts), so the same `lever run` reuses every stage, starts no run,
 * evaluates nothing again and writes no new file, and the datasets' image paths follow the workspace.
 * The inputs those runs read cannot be replaced afterwards (`data import --replace` is refused), so the
 * next `lever run` still reuses everything instead of finding its runs made with other data (and were
 * that to happen anyway, it says so in its own words, not with a flag it does not have).
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EVAL_EVENTS_FILE } from "../../src/eval/tensorboard.js";
import { Workspace } from "../../src/store/workspace.js";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";
import { experimentFiles } from "./helpers.js";

const { dir, write } = experimentFiles("lever-move-");
const file = write(
  "move.yaml",
  `name: move
data:
  synth: { seed: 5, trainItems: 200, valItems: 30, embedding: { dim: 16 } }
pools: { sampler: mix, k: 8 }
beams: { anchors: "first:16", shots: 2, beamSize: 2, budget: 4 }
sft: { model: { hidden: 8 }, optim: { epochs: 1, batchQueries: 8 } }
rollouts: { queries: "first:16", shots: 2, beamWidth: 2, temperatures: [1], samples: 2 }
rce: { model: { hidden: 8 }, optim: { epochs: 1, batchQueries: 8 } }
grpo: { optim: { epochs: 1, batchQueries: 8 } }
online:
  optim: { epochs: 1, batchQueries: 8 }
  online: { queries: "first:16", samples: 2 }
eval: { queries: all, shots: [1], baselines: [zero, random], resamples: 100 }
guard: { queries: "random:30" }
report: { enabled: false }
`,
);

/** Every file under `root` (relative path → sha256), the database aside. */
function files(root: string, sub = ""): Map<string, string> {
  const out = new Map<string, string>();
  for (const entry of readdirSync(join(root, sub), { withFileTypes: true })) {
    const path = join(sub, entry.name);
    if (entry.isDirectory()) for (const [k, v] of files(root, path)) out.set(k, v);
    else if (!entry.name.startsWith("lever.db"))
      out.set(
        path,
        createHash("sha256")
          .update(readFileSync(join(root, path)))
          .digest("hex"),
      );
  }
  return out;
}

function state(ws: string) {
  const w = Workspace.open(ws);
  try {
    const runs = w.listRuns().map((r) => `${r.id} ${r.configHash} ${r.status}`);
    const predictions = w.listRuns({ kind: "eval" }).flatMap((r) => w.getPredictions(r.id).map((p) => p.retriever));
    const images = w.listDatasets().flatMap((d) => w.loadItems(d.name).map((item) => item.imagePath as string));
    return { runs, predictions, images };
  } finally {
    w.close();
  }
}

describe("a moved workspace", () => {
  it("reuses every stage of the same lever run: no new run, no new prediction, the same files", async () => {
    const ws1 = join(dir, "ws1");
    const ws2 = join(dir, "ws2");
    await runCliOk(["run", file, "--workspace", ws1]);
    const before = state(ws1);
    const filesBefore = files(ws1);
    renameSync(ws1, ws2);

    const again = await runCli(["run", file, "--workspace", ws2]);
    expect(again.code, again.stderr).toBe(0);
    const out = again.stderr;
    for (const stage of ["data", "pools", "beams", "sft", "rollouts", "rce", "grpo", "online"])
      expect(out, stage).toMatch(new RegExp(`^${stage} [0-9a-f]{10}: done earlier, reused$`, "m"));
    expect(out).not.toMatch(/: running/);
    const after = state(ws2);
    expect(after.runs).toEqual(before.runs);
    expect(after.predictions.length).toBe(before.predictions.length);
    expect(after.predictions.filter((r) => r.startsWith("selector:"))).toEqual(
      before.predictions.filter((r) => r.startsWith("selector:")).map((r) => r.replace(ws1, ws2)),
    );
    // The items' images are found in the moved workspace.
    expect(after.images.length).toBeGreaterThan(0);
    for (const path of after.images) expect(path.startsWith(join(ws2, "experiments", "data"))).toBe(true);
    // The same files, with the same bytes: only the evaluation's summary and its TensorBoard file are written
    // again (the counts say that this time every prediction was found stored; the events carry wall times),
    // under the same names.
    const filesAfter = files(ws2);
    expect([...filesAfter.keys()].sort()).toEqual([...filesBefore.keys()].sort());
    for (const [path, hash] of filesBefore)
      if (!path.includes("/summary-") && !path.endsWith(EVAL_EVENTS_FILE))
        expect(filesAfter.get(path), path).toBe(hash);
    // Nothing in the database names the old place.
    expect(readFileSync(join(ws2, "lever.db")).includes(ws1)).toBe(false);

    // The datasets and embeddings the runs read can no longer be replaced, so lever run goes on reusing them.
    const train = readdirSync(join(ws2, "experiments", "data"))[0];
    const source = (name: string) => join(ws2, "experiments", "data", train, name);
    const replace = await runCli([
      ...["data", "import", "--split", "train", "--name", `${train}-train`, "--replace", "--workspace", ws2],
      ...["--questions", source("v2_OpenEnded_mscoco_train2014_questions.json")],
      ...["--annotations", source("v2_mscoco_train2014_annotations.json"), "--subset", "first:50"],
    ]);
    expectUserError(replace, `dataset "${train}-train" was read by run beams-0001`);
    const third = await runCli(["run", file, "--workspace", ws2]);
    expect(third.code, third.stderr).toBe(0);
    expect(third.stderr).not.toMatch(/: running/);

    // Were an input changed under a run anyway, lever run says so, without the flags of lever eval or train.
    const w = Workspace.open(ws2);
    const evalRun = w.listRuns({ kind: "eval" })[0];
    w.db
      .prepare("UPDATE runs SET config = json_set(config, '$.embeddings', json('{}')), config_hash = 'x' WHERE id = ?")
      .run(evalRun.id);
    w.close();
    const stuck = await runCli(["run", file, "--workspace", ws2]);
    expect(stuck.code).toBe(2);
    expect(stuck.stderr.trim().split("\n").at(-1)).toBe(
      `error: this experiment's run "${evalRun.name}" (${evalRun.id}) was made with other embeddings: what it read changed since; restore it, or run the experiment in a new workspace`,
    );
  }, 120_000);
});
