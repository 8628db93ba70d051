/**
 * THE FROZEN BASELINE of identities: every setting of the experiment sections that identities hash,
 * with its default, as lever had them at commit 9255aa3 (identity scheme 1) — `settingsNode` of each
 * section's schema (src/util/canonical-settings.ts) then, without the top-level operational fields and
 * the evaluation's baselines, which scheme 1 did not hash; repeated subtrees are named constants.
 *
 * It serves twice. Scheme 2 (src/experiment/identity.ts) hashes a section relative to it: a setting at
 * its baseline default is left out, so one whose default changes later enters the identity (the result
 * changes too). Scheme 1 (src/experiment/identity-v1.ts) is the settings restricted to exactly these
 * fields, every default filled, as that build hashed them, so a workspace it made is found again.
 *
 * NEVER CHANGE AN ENTRY (the identities of every workspace depend on it). A setting ADDED since goes
 * into `ADDED_SINCE_V1` with its default at the time (test/experiment/identity.test.ts lists any that
 * is missing); it enters no scheme-1 identity.
 */
import type { SettingsNode } from "../util/canonical-settings.js";
import type { StageName } from "./stages.js";

/** The experiment sections whose settings identities hash: every stage's, the VLM's, the evaluation's, the guard's. */
export type IdentitySection = StageName | "vlm" | "eval" | "guard";

/** The sections scheme 1 knew. */
type V1Section = "data" | "pools" | "vlm" | "beams" | "sft" | "rollouts" | "rce" | "grpo" | "online" | "guard" | "eval";

const VQA_SPLIT_FILES: SettingsNode = { fields: { questions: {}, annotations: {}, images: {}, subset: {} } };

const CONSTANT_SCHEDULE: SettingsNode = {
  fields: { kind: { default: "constant" }, warmupRatio: { default: 0 }, minLrRatio: { default: 0 } },
  defaulted: true,
};

const AUTO_EARLY_STOPPING: SettingsNode = {
  fields: {
    metric: { default: "auto" },
    mode: { default: "auto" },
    patience: { default: 0 },
    minDelta: { default: 0 },
  },
  defaulted: true,
};

const CAPTION_SPLIT: SettingsNode = {
  fields: {
    format: { default: "coco-captions" },
    captions: {},
    split: {},
    restvalIntoTrain: { default: false },
    folder: {},
    images: {},
    imageTemplate: {},
    subset: { default: "all" },
    seed: { default: 0 },
    demoReference: { default: "first" },
  },
};

const REWARD: SettingsNode = {
  fields: {
    mode: { default: "hard_plus_soft" },
    hardWeight: { default: 1 },
    softWeight: { default: 1 },
    relWeight: { default: 0.1 },
    gtWeight: { default: 1 },
    alpha: { default: 0 },
    beta: { default: 0 },
    correctness: { default: "01" },
    useLogprob: { default: false },
    clip: { default: 5 },
    normalize: { default: "zscore-clamp" },
    normalizeClamp: { default: 3 },
  },
  defaulted: true,
};

const MODEL: SettingsNode = {
  fields: {
    hidden: { default: 256 },
    heads: { default: 1 },
    layers: { default: 1 },
    dropout: { default: 0.5 },
    attnDropout: { default: 0.1 },
    temperature: { default: 0.1 },
    stateUpdate: { default: "gate" },
    stepEmbedding: { default: false },
    redundancy: { default: "none" },
    prior: { default: "cosine" },
    center: { default: "index-mean" },
    features: { default: ["vote", "agreement"] },
    featureInit: {},
    voteScale: {},
    identity: {},
    poolAttention: {},
  },
  defaulted: true,
};

/**
 * An optimiser section as scheme 1 saw it: what differs per stage given, the rest AdamW's and the loop's
 * defaults of the time (weight decay 0.01 and the auto best-epoch metric unless given).
 */
function optimNode(d: {
  epochs: number;
  lr: number;
  weightDecay?: number;
  schedule: SettingsNode;
  features: number;
  earlyStopping?: SettingsNode;
}): SettingsNode {
  return {
    fields: {
      epochs: { default: d.epochs },
      batchQueries: { default: 32 },
      lr: { default: d.lr },
      weightDecay: { default: d.weightDecay ?? 0.01 },
      betas: { default: [0.9, 0.999] },
      eps: { default: 1e-8 },
      schedule: d.schedule,
      clipNorm: { default: 1 },
      groupLr: { default: { features: d.features } },
      frozen: { default: [] },
      earlyStopping: d.earlyStopping ?? AUTO_EARLY_STOPPING,
    },
    defaulted: true,
  };
}

/** What the RL stages (RCE, GRPO, online) share: model, reward, data, validation, seed, dtype and their optimiser. */
function rlCommon(optim: SettingsNode): Record<string, SettingsNode> {
  return {
    model: MODEL,
    reward: REWARD,
    data: { fields: { valFraction: { default: 0.1 }, shots: {} }, defaulted: true },
    validation: { fields: { answers: { default: true } }, defaulted: true },
    seed: { default: 42 },
    dtype: { default: "float32" },
    optim,
  };
}

const GRPO: SettingsNode = {
  fields: {
    ...rlCommon(optimNode({ epochs: 5, lr: 0.00003, schedule: CONSTANT_SCHEDULE, features: 30 })),
    advantage: {
      fields: { kind: { default: "zscore" }, stdFloor: { default: 0.001 }, clip: { default: 5 } },
      defaulted: true,
    },
    loss: {
      fields: {
        ratioLevel: { default: "step" },
        epsLow: { default: 0.2 },
        epsHigh: { default: 0.2 },
        klEstimator: { default: "k3" },
      },
      defaulted: true,
    },
    kl: {
      fields: { kind: { default: "fixed" }, beta: {}, targetKl: { default: 0.05 }, horizon: { default: 10000 } },
      defaulted: true,
    },
    ppoEpochs: { default: 1 },
    curriculum: { fields: { epochs: { default: 0 }, topK: { default: 5 } }, defaulted: true },
    dropZeroVariance: { default: true },
    online: {
      fields: {
        enabled: { default: false },
        queries: { default: "all" },
        samples: { default: 8 },
        temperature: { default: 1 },
        gtAnswers: { default: "all" },
        correctThreshold: { default: 0 },
        credit: {},
        order: { default: "nearest" },
      },
      defaulted: true,
    },
    policyDropout: { default: false },
  },
};

export const BASELINE_V1: Record<V1Section, SettingsNode> = {
  data: {
    fields: {
      synth: {
        fields: {
          seed: { default: 1 },
          trainItems: { default: 4000 },
          valItems: { default: 1000 },
          concepts: { default: 24 },
          questionTypes: { default: 9 },
          maxQuestionsPerImage: { default: 5 },
          conceptSkew: { default: 0.6 },
          cellSpread: { default: 1.2 },
          tailRate: { default: 0.15 },
          knowledgeMean: { default: -1 },
          knowledgeSd: { default: 1.2 },
          ambiguityMax: { default: 0.5 },
          variantRate: { default: 0.05 },
          labelNoise: {},
          itemQuality: {},
          embedding: {
            fields: {
              dim: { default: 64 },
              imageConcept: { default: 1 },
              imageAnswer: { default: 0.6 },
              imageNoise: { default: 0.8 },
              textType: { default: 1 },
              textConcept: { default: 0.7 },
              textNoise: { default: 0.6 },
              shared: {},
            },
            defaulted: true,
          },
          model: {
            fields: {
              priorScale: { default: 1 },
              floorLogProb: { default: -7 },
              pull: { default: 5.5 },
              copyBase: { default: 0.45 },
              relevance: {
                fields: {
                  none: { default: 0 },
                  sameConcept: { default: 0.15 },
                  sameType: { default: 0.2 },
                  sameCell: { default: 1.5 },
                },
                defaulted: true,
              },
              confusion: {
                fields: {
                  none: { default: 1 },
                  sameConcept: { default: 0.5 },
                  sameType: { default: 0 },
                  sameCell: { default: 0 },
                },
                defaulted: true,
              },
              format: {
                fields: {
                  none: { default: 0.4 },
                  sameConcept: { default: 0.4 },
                  sameType: { default: 1 },
                  sameCell: { default: 1 },
                },
                defaulted: true,
              },
              positionDecay: { default: 0.7 },
              formatGain: { default: 1.5 },
              distraction: { default: 0.35 },
              jitter: { default: 0.3 },
              flatten: { default: 0.3 },
              tailLogit: { default: -4 },
              tailSize: { default: 1000 },
              decorationRate: { default: 0.1 },
            },
            defaulted: true,
          },
        },
      },
      captionSynth: {
        fields: {
          seed: { default: 1 },
          trainItems: { default: 3000 },
          valItems: { default: 1000 },
          scenes: { default: 10 },
          objects: { default: 24 },
          attributes: { default: 10 },
          objectsPerScene: { default: 6 },
          sceneFocus: { default: 0.85 },
          secondObjectRate: { default: 0.5 },
          thirdObjectRate: { default: 0.3 },
          perceptionMean: { default: 0.8 },
          perceptionSd: { default: 1.3 },
          teacherSpread: { default: 0.8 },
          annotators: {
            fields: {
              pool: { default: 60 },
              extraReferenceRate: { default: 0.12 },
              canonicalMin: { default: 0.5 },
              canonicalMax: { default: 0.95 },
              fancyRate: { default: 0.03 },
              attributeMin: { default: 0.3 },
              attributeMax: { default: 0.9 },
              poseMin: { default: 0.2 },
              poseMax: { default: 0.9 },
              secondObject: { default: 0.8 },
              afterSceneMax: { default: 0.6 },
              openerRate: { default: 0.08 },
              tailRate: { default: 0.02 },
              prepositionVariation: { default: 0.2 },
              capitalise: { default: 0.85 },
              period: { default: 0.5 },
            },
            defaulted: true,
          },
          embedding: {
            fields: {
              dim: { default: 64 },
              scene: { default: 1 },
              object: { default: 1 },
              attribute: { default: 0.5 },
              pose: { default: 0.3 },
              imageNoise: { default: 0.7 },
              textNoise: { default: 0.5 },
              textSurface: { default: 0.25 },
              textStyle: { default: 0.4 },
              modalityGap: { default: 1.2 },
            },
            defaulted: true,
          },
          model: {
            fields: {
              priorStrength: { default: 0.5 },
              copyBase: { default: 0.6 },
              relevance: { default: 2 },
              positionDecay: { default: 0.85 },
              teacherWeight: { default: 0.6 },
              conceptTeach: { default: 2 },
              registerTeach: { default: 0.6 },
              prime: { default: 1.2 },
              otherPenalty: { default: 1.5 },
              zeroShotOpener: { default: 0.8 },
              zeroShotTail: { default: 0.75 },
              zeroShotAttribute: { default: 0.9 },
              zeroShotPose: { default: 0.85 },
              zeroShotSecondObject: { default: 0.9 },
              zeroShotFancy: { default: 0.5 },
              zeroShotPreference: { default: 0.6 },
              copyThreshold: { default: 0.9 },
              copyProbability: { default: 0.15 },
              copyMass: { default: 0.7 },
              floorLogProb: { default: -9 },
            },
            defaulted: true,
          },
        },
      },
      import: {
        fields: { train: VQA_SPLIT_FILES, val: VQA_SPLIT_FILES, embeddings: { fields: { train: {}, val: {} } } },
      },
      importCaptions: {
        fields: { train: CAPTION_SPLIT, val: CAPTION_SPLIT, embeddings: { fields: { train: {}, val: {} } } },
      },
    },
  },
  pools: {
    fields: { sampler: { default: "joint-sim" }, k: { default: 32 }, seed: { default: 0 }, ratios: {} },
    defaulted: true,
  },
  vlm: {
    fields: {
      vlm: { default: "sim" },
      world: {},
      model: {},
      layout: { default: "lever-plus" },
      systemPrompt: {
        default:
          "You will see example questions about images with short answers. Answer the last question about its image the same way, with one to three words.",
      },
      zeroShotSystemPrompt: { default: "Answer the question about the image with one to three words." },
      imageUrl: { default: "data" },
      maxTokens: { default: 5 },
      temperature: { default: 0 },
      beamSearch: {},
      extraBody: { default: {} },
      answerSpan: { default: "tokenize" },
      includeEndOfTurn: { default: false },
      endOfTurnToken: { default: "<|im_end|>" },
    },
    defaulted: true,
  },
  beams: {
    fields: {
      anchors: { default: "first:100" },
      shots: { default: 2 },
      beamSize: { default: 5 },
      budget: {},
      priorEmbedding: { default: "joint" },
      order: { default: "nearest" },
      seed: { default: 0 },
    },
  },
  sft: {
    fields: {
      model: MODEL,
      optim: optimNode({
        epochs: 20,
        lr: 0.0001,
        weightDecay: 0.001,
        schedule: {
          fields: { kind: { default: "cosine" }, warmupRatio: { default: 0.05 }, minLrRatio: { default: 0 } },
          defaulted: true,
        },
        features: 100,
        earlyStopping: {
          fields: {
            metric: { default: "valLoss" },
            mode: { default: "auto" },
            patience: { default: 0 },
            minDelta: { default: 0 },
          },
          defaulted: true,
        },
      }),
      loss: { fields: { labelSmoothing: { default: 0 } }, defaulted: true },
      data: {
        fields: {
          valFraction: { default: 0.1 },
          weighting: { default: "uniform" },
          missing: { default: "error" },
          shots: {},
        },
        defaulted: true,
      },
      seed: { default: 42 },
      dtype: { default: "float32" },
    },
  },
  rollouts: {
    fields: {
      queries: { default: "first:100" },
      shots: {},
      order: {},
      greedy: { default: true },
      beamWidth: { default: 5 },
      temperatures: { default: [1, 1.3] },
      samples: { default: 2 },
      retrieval: { default: 3 },
      retrievalReversed: { default: true },
      random: { default: 2 },
      topupMin: { default: 0 },
      topupBudget: { default: 16 },
      topupTemperature: { default: 1.3 },
      gtAnswers: { default: "all" },
      correctThreshold: { default: 0 },
      metricVariant: { default: "official" },
      seed: { default: 0 },
    },
  },
  rce: {
    fields: {
      ...rlCommon(optimNode({ epochs: 5, lr: 0.0001, schedule: CONSTANT_SCHEDULE, features: 100 })),
      temperature: {
        fields: { start: { default: 2 }, end: { default: 0.5 }, kind: { default: "linear" } },
        defaulted: true,
      },
      rewards: { default: "raw" },
      bestOnly: { default: false },
    },
  },
  grpo: GRPO,
  online: GRPO,
  guard: {
    fields: { enabled: { default: true }, queries: { default: "random:1000" }, margin: { default: 0 }, baselines: {} },
    defaulted: true,
  },
  eval: {
    fields: {
      queries: { default: "all" },
      shots: { default: [1, 2, 3, 4] },
      voteScale: {},
      seed: { default: 0 },
      metricVariant: { default: "official" },
      order: { default: "nearest" },
      resamples: { default: 2000 },
      clusterByImage: { default: false },
    },
    defaulted: true,
  },
};

/**
 * Settings added since scheme 1, by dotted path ("sft.optim.warmup"; a new stage's section: its name),
 * each with its defaults tree when it was added (`settingsNode` of its schema then: `{ default: 0.1 }`
 * for a plain setting; never changed afterwards): the baseline of scheme 2 for them.
 */
export const ADDED_SINCE_V1: readonly { path: string; node: SettingsNode }[] = [
  // optim.decayScope (issue 26, point 6): "all" is what every earlier build did.
  ...(["sft", "rce", "grpo", "online"] as const).map((stage) => ({
    path: `${stage}.optim.decayScope`,
    node: { default: "all" },
  })),
];

/** The baseline scheme 2 hashes relative to: BASELINE_V1 with the settings added since. */
export const IDENTITY_BASELINE: Partial<Record<IdentitySection, SettingsNode>> = withAdded(BASELINE_V1, ADDED_SINCE_V1);

function withAdded(
  base: Record<V1Section, SettingsNode>,
  added: readonly { path: string; node: SettingsNode }[],
): Partial<Record<IdentitySection, SettingsNode>> {
  const tree: SettingsNode = structuredClone({ fields: base });
  for (const { path, node: addedNode } of added) {
    const keys = path.split(".");
    let node = tree;
    for (const key of keys.slice(0, -1)) node = (node.fields ??= {})[key] ??= { fields: {} };
    (node.fields ??= {})[keys[keys.length - 1]] = addedNode;
  }
  return tree.fields as Partial<Record<IdentitySection, SettingsNode>>;
}
