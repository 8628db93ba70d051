/**
 * Health checks of an RL epoch (and `belowStartWarnings`: every epoch so far answers validation less
 * accurately than the starting checkpoint — training that makes the selector worse), and of SFT
 * (`sftHealthWarnings`: validation that has not moved from the first epoch — a selector that learns
 * nothing from the beams): the failure modes that made the Lever-Plus GRPO "not learn" without
 * anyone noticing (advantage std ≈ 0.006, KL penalty dominating the loss, 100 % identical selections
 * across β values, KL of 10-17 from a stale reference), turned into warnings that name the likely
 * cause and what to change. Input: the epoch's metrics (means of the step diagnostics plus
 * validation). Thresholds are documented with each check. On-policy training (online GRPO) updates
 * once per sample, so its ratio is 1 by construction and the clipping checks do not apply.
 * What each warning means and what to change: docs/training.md, "Health warnings"; the Lever-Plus
 * trainer: docs/provenance.md#grpo.
 */

export interface HealthWarning {
  epoch: number;
  code:
    | "low-advantage-std"
    | "kl-dominates"
    | "clip-never"
    | "clip-always"
    | "no-selection-change"
    | "kl-explodes"
    | "below-start"
    | "sft-no-progress";
  message: string;
}

const pct = (x: number) => `${(100 * x).toFixed(0)} %`;

export interface HealthOptions {
  /** The samples come from the policy being updated (online GRPO): the ratio is always 1. */
  onPolicy?: boolean;
}

export function healthWarnings(epoch: number, m: Record<string, number>, opts: HealthOptions = {}): HealthWarning[] {
  const out: HealthWarning[] = [];
  const warn = (code: HealthWarning["code"], message: string) => out.push({ epoch, code, message });
  // More than half of the groups with advantage std < 0.05: most queries contribute (almost) nothing.
  if (m.lowAdvStdShare > 0.5)
    warn(
      "low-advantage-std",
      `advantage std < 0.05 in ${pct(m.lowAdvStdShare)} of the groups: most queries' rewards are (nearly) tied, so they give no policy gradient — use a denser reward (--reward-mode hybrid), more diverse rollouts (more samples, higher temperatures, the balanced top-up) or leave tied groups out (--drop-zero-variance)`,
    );
  // The KL term is more than half of the gradient: the policy is mostly pulled back to the reference.
  if (m.klShare > 0.5)
    warn(
      "kl-dominates",
      `β·KL makes ${pct(m.klShare)} of the gradient: the penalty outweighs the policy gradient — lower --kl-beta, or use --kl-kind adaptive with a --target-kl`,
    );
  const clip = (m.clipLow ?? 0) + (m.clipHigh ?? 0);
  const offPolicy = opts.onPolicy !== true;
  // Ratios never leave the trust region: each update is tiny relative to ε (or the behaviour policy is refreshed so often that it never can).
  if (offPolicy && m.clipLow !== undefined && clip < 1e-3)
    warn(
      "clip-never",
      `the clipped surrogate never clipped (clip fraction ${clip.toExponential(1)}): updates are small relative to ε — if selections do not change either, raise --lr or --ppo-epochs`,
    );
  // Ratios are clipped almost everywhere: the policy has left the trust region and most rows give no gradient.
  if (offPolicy && clip > 0.9)
    warn(
      "clip-always",
      `${pct(clip)} of the ratios are clipped: the policy moved far from the behaviour policy, so most trajectories give no gradient — lower --lr or refresh the behaviour policy more often (--ppo-epochs 1)`,
    );
  if (m.selectionChange === 0)
    warn(
      "no-selection-change",
      "the greedy choices on every validation query are still those of the starting checkpoint: training has not changed a single selection (learning rate too low, parameter groups frozen, or rewards without signal)",
    );
  // Per-step KL above 10 nats: far beyond any useful trust region.
  if (m.kl > 10)
    warn(
      "kl-explodes",
      `KL to the reference is ${m.kl.toFixed(1)} nats per step: the policy is far from its reference — likely causes: a learning rate too high, a reference that is not the starting checkpoint, or dropout on one side only`,
    );
  return out;
}

/**
 * RL that makes the selector worse: every epoch so far has a negative `valAccuracyGain` (its greedy
 * choices answer the validation queries less accurately than the starting checkpoint's; measured only
 * with VLM validation answers). Checked from the second epoch, or at the first when it is the last
 * (`epochs`), so one noisy first epoch of a longer run is not a warning. `history` holds every epoch's
 * metrics so far, this one last.
 */
export function belowStartWarnings(
  epoch: number,
  history: readonly Record<string, number>[],
  epochs: number,
): HealthWarning[] {
  const gains = history.map((m) => m.valAccuracyGain);
  if (gains.length === 0 || (gains.length < 2 && epoch + 1 < epochs)) return [];
  if (!gains.every((g) => g !== undefined && Number.isFinite(g) && g < 0)) return [];
  const points = (g: number) => `${(100 * g).toFixed(1)}`;
  const best = Math.max(...gains);
  return [
    {
      epoch,
      code: "below-start",
      message:
        `every epoch so far validates below the starting checkpoint (valAccuracyGain ${gains.map(points).join(", ")} points; best ${points(best)}): ` +
        "this run makes the selector worse — keep the starting checkpoint, or lower --lr, train fewer epochs, or check the rewards and rollouts",
    },
  ];
}

/** Epochs SFT gets before validation that has not moved from the first epoch is a warning. */
export const SFT_PATIENCE = 3;

/**
 * SFT that learns nothing: from the third epoch on, no epoch has improved on the first one's
 * validation — valLoss not lower by 1 % of it, valTop1 and valSeqAgree not higher. `history` holds
 * every epoch's metrics so far, this one last.
 */
export function sftHealthWarnings(epoch: number, history: readonly Record<string, number>[]): HealthWarning[] {
  const first = history[0];
  if (history.length < SFT_PATIENCE || first?.valLoss === undefined) return [];
  const best = (name: string, pick: (...v: number[]) => number) =>
    pick(...history.map((m) => m[name]).filter((v) => v !== undefined));
  const loss = best("valLoss", Math.min);
  const top1 = best("valTop1", Math.max);
  const seq = best("valSeqAgree", Math.max);
  if (loss < first.valLoss - 0.01 * Math.abs(first.valLoss) || top1 > first.valTop1 || seq > first.valSeqAgree)
    return [];
  const last = history[history.length - 1];
  return [
    {
      epoch,
      code: "sft-no-progress",
      message:
        `${history.length} epochs and validation has not improved on epoch 1 (valLoss ${first.valLoss.toFixed(4)} → ${last.valLoss.toFixed(4)}, ` +
        `valTop1 ${first.valTop1.toFixed(4)} → ${last.valTop1.toFixed(4)}, valSeqAgree ${first.valSeqAgree.toFixed(4)} → ${last.valSeqAgree.toFixed(4)}): ` +
        "the selector is not learning the beams — check the learning rate (lr on the epoch lines; a long warm-up keeps it near 0), train longer, or check that the beams were searched in these pools",
    },
  ];
}
