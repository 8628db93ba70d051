/**
 * Pinned identities (src/experiment/identity.ts): experiments and the identities their stages and
 * evaluation have, now (scheme 2) and under scheme 1 (`legacy`: what builds up to 9255aa3 wrote, which
 * an upgraded workspace's records are found under). Identities name the stage records and evaluation runs
 * of every workspace: a change here strands every existing workspace's finished work. Shared by
 * test/experiment/plan.test.ts (this build) and test/experiment/identity-upgrade.test.ts (a build with
 * settings added), which must both plan exactly these.
 *
 * The scheme-1 values are the ones earlier builds pinned: data, pools, beams and the evaluation as computed
 * by the build before the stage table (commit e39fe92); the training stages and those after them changed
 * once, deliberately, when new training runs got the answer features and their learning-rate multiplier
 * by default (issue 17), and again with issue 23 (rank prior, centred embeddings, calibrated vote scale;
 * rank-weighted `vote` rows; the demo's joint-sim pools).
 */
import { loadExperiment } from "../../src/experiment/load.js";
import { plan } from "../../src/experiment/plan.js";

/** Every stage, a β × seed sweep, operational settings set (they must not count). */
export const SYNTH = `name: pin
data:
  synth: { seed: 3, trainItems: 300, valItems: 60 }
pools: { sampler: mix, k: 16 }
beams: { anchors: "first:20", shots: 2, concurrency: 4 }
sft: { optim: { epochs: 1 } }
rollouts: { queries: "first:30", shots: 2 }
rce: { optim: { epochs: 1 } }
grpo:
  kl: { beta: [0.1, 0.2] }
  seed: [1, 2]
online:
  online: { queries: "first:24", samples: 4 }
eval: { queries: all, shots: [1, 2], batchSize: 4 }
`;

/** Imported files, an OpenAI-compatible server, no SFT (rollouts and RCE start from scratch), RCE validation answered by the VLM. */
export const OPENAI = `name: pin-openai
data:
  import:
    train: { questions: /nowhere/q-train.json, annotations: /nowhere/a-train.json }
    val: { questions: /nowhere/q-val.json, annotations: /nowhere/a-val.json, subset: "first:50" }
    embeddings:
      train: { joint: /nowhere/train.npy }
      val: { joint: /nowhere/val.npy }
pools: { sampler: random, k: 8 }
vlm: { vlm: openai, baseUrls: ["http://a:8000"], model: m, answerSpan: decoded, timeoutMs: 1000 }
beams: { anchors: "first:10", shots: 2 }
rollouts: { queries: "first:10", shots: 2 }
rce: { optim: { epochs: 1 }, validation: { answers: true } }
grpo: { optim: { epochs: 1 } }
eval: { queries: "first:10", shots: [1] }
`;

type Ids = { id: string; legacy: string | null };
const ids = (id: string, legacy: string | null): Ids => ({ id, legacy });

/** Per variant: the evaluation's identities and each stage's. */
export type Pinned = { eval: Ids; stages: Record<string, Ids> }[];

const synthShared = {
  data: ids("accc35a0e2", "5b381a23c1"),
  pools: ids("51b40208f8", "d851471d52"),
  beams: ids("3bcf5f231a", "8f37736ecf"),
  sft: ids("2fe9d2e40c", "2d363a2be0"),
  rollouts: ids("61bca6973a", "590acc20d1"),
  rce: ids("b1b57bbbf3", "aa1f6e1d60"),
  // Scheme 1 changed on purpose (issue 17): an online section without kl.beta / online.credit trains with the
  // online defaults (β 0.5, prefix credit; rl-settings.ts MODE_DEFAULTS), so it became a new stage then.
  online: ids("c5b50cada7", "372fbed63b"),
};
const synthEval = ids("9d1b3b2aea", "84757756ab");

export const PINNED: { synth: Pinned; openai: Pinned; demo: Pinned } = {
  // Variants in sweep order: β 0.1 seeds 1, 2; β 0.2 seeds 1, 2.
  synth: [
    ["16d0fa5544", "6d249c1d53"],
    ["f3f5da1144", "93a34677f0"],
    ["43598ad8ff", "e4dc340aa7"],
    ["40e8d83a39", "326e0e31a6"],
  ].map(([id, legacy]) => ({ eval: synthEval, stages: { ...synthShared, grpo: ids(id, legacy) } })),
  openai: [
    {
      eval: ids("0f31268a2e", "84837eb3ff"),
      stages: {
        data: ids("fc6812d0bf", "8eca2d5ac7"),
        pools: ids("20e53b7c52", "c14bb4c584"),
        beams: ids("e0df47855d", "04bc50efa3"),
        rollouts: ids("f4671ec231", "25a884db41"),
        rce: ids("a4858627cf", "0e3addc0b7"),
        grpo: ids("10d46fad74", "5d55741251"),
      },
    },
  ],
  // examples/demo.yaml: a workspace that ran `lever demo`.
  demo: [
    {
      eval: ids("d0136281d3", "35d9d3ffd9"),
      stages: {
        data: ids("cd5e381d51", "e33c52d128"),
        pools: ids("bf1bcad98a", "fc0d2e2444"),
        beams: ids("6b9deafe91", "132f4ceef8"),
        sft: ids("cf683e0f54", "a13027d404"),
        rollouts: ids("db398be085", "da8aa1efa8"),
        // rce, grpo, online: scheme 1's changed when the training default prior became the cosine prior (issue 23).
        rce: ids("5ace17b6c6", "2376d43a98"),
        grpo: ids("d28d1d979e", "2d0cb14d53"),
        online: ids("f8a5394155", "a7374bb424"), // prefix credit by default since issue 17 (β 0.5 was already the demo's)
      },
    },
  ],
};

/** What a plan of the file gives, in the shape of `PINNED` (`sets`: `--set` overrides). */
export function planned(file: string, sets: string[] = []): Pinned {
  return plan(loadExperiment(file, sets)).variants.map((v) => ({
    eval: ids(v.evalId, v.legacyEvalId),
    stages: Object.fromEntries(v.stages.map((s) => [s.stage, ids(s.id, s.legacyId)])),
  }));
}
