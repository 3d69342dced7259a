/**
 * The action distributions of upstream's action model (torch_entities/distributions.py), written
 * as plain functions of numbers, with their derivatives: acting samples from them and the PPO
 * update differentiates them by hand (the networks compute means and logits; everything from
 * there to the loss is cheap per-sample arithmetic that needs no tensor ops).
 *
 * Continuous actions: a Gaussian whose mean comes from the network and whose log standard
 * deviation is a learned vector independent of the state (PPO's conditional_sigma = false). The
 * sampled action is stored unclipped; the environment receives clip(a, -3, 3) / 3.
 * Discrete actions: one categorical distribution per branch over masked logits.
 */

/** The small value upstream adds to avoid log(0) and division by 0. */
export const EPSILON = 1e-7;
const LOG_SQRT_TWO_PI = Math.log(Math.sqrt(2 * Math.PI));
const TWO_PI_E = 2 * Math.PI * Math.E;
/** What a forbidden action's logit is pushed down by: its probability is exactly 0 in float32 and float64. */
export const MASK_PENALTY = 1e8;
/** Sampled continuous actions are clipped to [-ACTION_CLIP, ACTION_CLIP] and divided by ACTION_CLIP. */
export const ACTION_CLIP = 3;

/** log N(action; mean, exp(logStd)^2), with upstream's epsilons. */
export function gaussianLogProb(action: number, mean: number, logStd: number): number {
  const std = Math.exp(logStd);
  const diff = action - mean;
  return -(diff * diff) / (2 * std * std + EPSILON) - Math.log(std + EPSILON) - LOG_SQRT_TWO_PI;
}

/** d gaussianLogProb / d mean. */
export function gaussianLogProbByMean(action: number, mean: number, logStd: number): number {
  const std = Math.exp(logStd);
  return (2 * (action - mean)) / (2 * std * std + EPSILON);
}

/** d gaussianLogProb / d logStd. */
export function gaussianLogProbByLogStd(action: number, mean: number, logStd: number): number {
  const std = Math.exp(logStd);
  const twoVariance = 2 * std * std;
  const diff = action - mean;
  return (diff * diff * 2 * twoVariance) / ((twoVariance + EPSILON) * (twoVariance + EPSILON)) - std / (std + EPSILON);
}

/** Entropy of one Gaussian action dimension: 0.5 log(2 pi e std^2 + epsilon), as upstream. */
export function gaussianEntropy(logStd: number): number {
  const std = Math.exp(logStd);
  return 0.5 * Math.log(TWO_PI_E * std * std + EPSILON);
}

/** d gaussianEntropy / d logStd. */
export function gaussianEntropyByLogStd(logStd: number): number {
  const std = Math.exp(logStd);
  const scaled = TWO_PI_E * std * std;
  return scaled / (scaled + EPSILON);
}

/** What the environment receives for a sampled continuous action (upstream's clip_action). */
export function clipAction(action: number): number {
  return (action > ACTION_CLIP ? ACTION_CLIP : action < -ACTION_CLIP ? -ACTION_CLIP : action) / ACTION_CLIP;
}

/**
 * Softmax over one branch's logits after masking as upstream does (logit * allowed -
 * 1e8 * (1 - allowed)), so forbidden actions get probability 0.
 * `allowed[k]` is 1 for an available action and 0 for a forbidden one; null allows all.
 */
export function maskedSoftmax(
  logits: ArrayLike<number>,
  allowed: ArrayLike<number> | null,
  size: number,
  probs: Float64Array,
): void {
  let max = -Infinity;
  for (let k = 0; k < size; k++) {
    const allow = allowed === null ? 1 : allowed[k];
    const masked = logits[k] * allow - MASK_PENALTY * (1 - allow);
    probs[k] = masked;
    if (masked > max) max = masked;
  }
  let total = 0;
  for (let k = 0; k < size; k++) {
    const e = Math.exp(probs[k] - max);
    probs[k] = e;
    total += e;
  }
  for (let k = 0; k < size; k++) probs[k] /= total;
}

/** The index drawn from `probs` by a uniform number in [0, 1). */
export function sampleCategorical(probs: Float64Array, size: number, uniform: number): number {
  let cumulative = 0;
  let last = 0;
  for (let k = 0; k < size; k++) {
    if (probs[k] <= 0) continue;
    last = k;
    cumulative += probs[k];
    if (uniform < cumulative) return k;
  }
  // Rounding left the total a hair under 1: the last possible action takes the remainder.
  return last;
}

/** The most probable index (deterministic acting); the first one on ties, as argmax. */
export function argmax(probs: Float64Array, size: number): number {
  let best = 0;
  for (let k = 1; k < size; k++) if (probs[k] > probs[best]) best = k;
  return best;
}

/** log p(choice), with upstream's epsilon. */
export function categoricalLogProb(probs: Float64Array, choice: number): number {
  return Math.log(probs[choice] + EPSILON);
}

/** -sum p log(p + epsilon), as upstream. */
export function categoricalEntropy(probs: Float64Array, size: number): number {
  let entropy = 0;
  for (let k = 0; k < size; k++) entropy -= probs[k] * Math.log(probs[k] + EPSILON);
  return entropy;
}

/**
 * Adds scale * d(log p(choice)) / d logits and entropyScale * d(entropy) / d logits to
 * `gradient` (the logits before masking; a forbidden logit gets no gradient, as upstream's
 * multiplication by the mask gives none).
 */
export function addCategoricalGradient(
  probs: Float64Array,
  allowed: ArrayLike<number> | null,
  size: number,
  choice: number,
  scale: number,
  entropyScale: number,
  gradient: Float64Array,
): void {
  // d log(p_c + eps) / d z_k = p_c / (p_c + eps) * (1[k = c] - p_k)
  const chosen = probs[choice];
  const logProbScale = (scale * chosen) / (chosen + EPSILON);
  // d entropy / d p_j = -(log(p_j + eps) + p_j / (p_j + eps)); through the softmax,
  // d entropy / d z_k = p_k (g_k - sum_j g_j p_j).
  let weighted = 0;
  for (let j = 0; j < size; j++) {
    weighted += probs[j] * -(Math.log(probs[j] + EPSILON) + probs[j] / (probs[j] + EPSILON));
  }
  for (let k = 0; k < size; k++) {
    const allow = allowed === null ? 1 : allowed[k];
    const entropyByP = -(Math.log(probs[k] + EPSILON) + probs[k] / (probs[k] + EPSILON));
    const byLogit =
      logProbScale * ((k === choice ? 1 : 0) - probs[k]) + entropyScale * probs[k] * (entropyByP - weighted);
    gradient[k] += byLogit * allow;
  }
}
