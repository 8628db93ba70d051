/**
 * Lever-Plus artefact import/export (Python JSON files): beam data, RL data ("rollouts") and sampler-cache
 * pools (docs/provenance.md#beam-data, docs/provenance.md#rl-data, docs/provenance.md#samplers). The
 * Python files identify items by `idx`, the row of the split sorted by question_id; we identify them by
 * question id, mapping through the dataset's items (common.ts).
 */
export * from "./beams.js";
export * from "./common.js";
export * from "./pools.js";
export * from "./rollouts.js";
