/**
 * The PPO loss of upstream's ppo/optimizer_torch.py and torch_entities/utils.py
 * (trust_region_policy_loss, trust_region_value_loss), per sample, with its gradient with respect
 * to the network outputs written out beside each term:
 *
 *   ratio      = exp(log pi(a|s) - log pi_old(a|s))        one ratio per log-probability column
 *   policy     = -mean(min(ratio A, clip(ratio, 1 - eps, 1 + eps) A))
 *   value      = mean over reward signals of mean(max((R - V)^2, (R - V_clipped)^2)),
 *                V_clipped = V_old + clip(V - V_old, -eps, eps)
 *   loss       = policy + 0.5 value - beta mean(entropy)
 *
 * As upstream, the log-probability columns are the continuous action dimensions followed by the
 * discrete branches, and the policy mean runs over samples and columns alike; a sample's entropy
 * is the mean of its Gaussian dimensions' entropies plus each branch's entropy. With memory, the
 * padding that completes a trajectory's last sequence has mask 0, and every mean is upstream's
 * masked_mean: over the samples of mask 1 only (sum(x * mask) / max(sum(mask), 1)).
 */
import { ActionSpec } from '../../env/behavior-spec';
import type { HeadGradients, HeadOutputs, SequenceMemories } from '../../networks/actor-critic';
import {
  addCategoricalGradient,
  categoricalEntropy,
  categoricalLogProb,
  gaussianEntropy,
  gaussianEntropyByLogStd,
  gaussianLogProb,
  gaussianLogProbByLogStd,
  gaussianLogProbByMean,
  maskedSoftmax,
} from '../../networks/distributions';

/** One minibatch of experience, as plain typed arrays. Row i of every array is sample i. */
export interface PpoMinibatch {
  readonly count: number;
  /** One array per observation of the behavior, count x its size. */
  readonly observations: readonly Float32Array[];
  /** count x continuous size: the actions as sampled (unclipped). */
  readonly continuousActions: Float32Array;
  /** count x number of branches. */
  readonly discreteActions: Int32Array;
  /** count x sum of branch sizes, 1 where the action was available (upstream's buffer form); null: all were. */
  readonly actionMasks: Float32Array | Uint8Array | null;
  /** count x continuous size: log probabilities when acting. */
  readonly oldContinuousLogProbs: Float32Array;
  /** count x number of branches: log probability of each branch's choice when acting. */
  readonly oldDiscreteLogProbs: Float32Array;
  /** count */
  readonly advantages: Float32Array;
  /** Per reward signal, count returns and count value estimates made when acting. */
  readonly returns: Readonly<Record<string, Float32Array>>;
  readonly oldValues: Readonly<Record<string, Float32Array>>;
  /** count: 1 for an experience, 0 for sequence padding (upstream's masks); absent, all are 1. */
  readonly masks?: Float32Array;
  /** With memory: the rows are whole sequences, and these are the memories each starts from. */
  readonly sequences?: SequenceMemories;
}

export interface PpoLoss {
  readonly policyLoss: number;
  readonly valueLoss: number;
  /** Mean entropy of the action distributions over the minibatch. */
  readonly entropy: number;
  /** policyLoss + 0.5 valueLoss - beta entropy */
  readonly loss: number;
}

/**
 * The loss of a minibatch given the networks' outputs on it; when `gradients` is given, adds to
 * it the loss's gradient with respect to those outputs.
 */
export function ppoLoss(
  outputs: HeadOutputs,
  batch: PpoMinibatch,
  actionSpec: ActionSpec,
  rewardSignals: readonly string[],
  epsilon: number,
  beta: number,
  gradients: HeadGradients | null,
): PpoLoss {
  const n = batch.count;
  const continuous = actionSpec.continuousSize;
  const branches = actionSpec.discreteBranches;
  const columns = continuous + branches.length;
  const masks = batch.masks ?? new Float32Array(n).fill(1);
  // The samples the means run over (upstream clamps the count at 1).
  let maskSum = 0;
  for (const mask of masks) maskSum += mask;
  const counted = Math.max(maskSum, 1);
  // d(loss) / d(one column's clipped objective), and d(loss) / d(one sample's entropy), for a sample of mask 1.
  const policyScale = -1 / (counted * columns);
  const entropyScale = -beta / counted;
  let objectiveSum = 0;
  let entropySum = 0;

  // Continuous actions: one Gaussian per dimension; the entropy does not depend on the state.
  const logStd = outputs.logStd;
  for (let j = 0; j < continuous; j++) {
    entropySum += (maskSum * gaussianEntropy(logStd[j])) / continuous;
    if (gradients) gradients.logStd[j] += (entropyScale * maskSum * gaussianEntropyByLogStd(logStd[j])) / continuous;
    for (let i = 0; i < n; i++) {
      if (masks[i] === 0) continue;
      const action = batch.continuousActions[i * continuous + j];
      const mean = outputs.means[j * n + i];
      const logProb = gaussianLogProb(action, mean, logStd[j]);
      const [objective, byLogProb] = clippedSurrogate(
        logProb - batch.oldContinuousLogProbs[i * continuous + j],
        batch.advantages[i],
        epsilon,
      );
      objectiveSum += objective;
      if (gradients && byLogProb !== 0) {
        gradients.means[j * n + i] += policyScale * byLogProb * gaussianLogProbByMean(action, mean, logStd[j]);
        gradients.logStd[j] += policyScale * byLogProb * gaussianLogProbByLogStd(action, mean, logStd[j]);
      }
    }
  }

  // Discrete actions: one categorical distribution per branch over the masked logits.
  const widest = Math.max(0, ...branches);
  const logits = new Float64Array(widest);
  const allowed = new Float64Array(widest);
  const probs = new Float64Array(widest);
  const logitGradient = new Float64Array(widest);
  const maskWidth = branches.reduce((a, b) => a + b, 0);
  let firstRow = 0;
  branches.forEach((size, b) => {
    for (let i = 0; i < n; i++) {
      if (masks[i] === 0) continue;
      for (let k = 0; k < size; k++) {
        logits[k] = outputs.logits[(firstRow + k) * n + i];
        allowed[k] = batch.actionMasks ? batch.actionMasks[i * maskWidth + firstRow + k] : 1;
      }
      maskedSoftmax(logits, allowed, size, probs);
      const choice = batch.discreteActions[i * branches.length + b];
      const logProb = categoricalLogProb(probs, choice);
      const [objective, byLogProb] = clippedSurrogate(
        logProb - batch.oldDiscreteLogProbs[i * branches.length + b],
        batch.advantages[i],
        epsilon,
      );
      objectiveSum += objective;
      entropySum += categoricalEntropy(probs, size);
      if (gradients) {
        logitGradient.fill(0, 0, size);
        addCategoricalGradient(probs, allowed, size, choice, policyScale * byLogProb, entropyScale, logitGradient);
        for (let k = 0; k < size; k++) gradients.logits[(firstRow + k) * n + i] += logitGradient[k];
      }
    }
    firstRow += size;
  });

  const valueLoss = trustRegionValueLoss(outputs.values, batch.oldValues, batch.returns, rewardSignals, epsilon, masks, gradients && { values: gradients.values, weight: 0.5 });

  const policyLoss = -objectiveSum / (counted * columns);
  const entropy = entropySum / counted;
  return { policyLoss, valueLoss, entropy, loss: policyLoss + 0.5 * valueLoss - beta * entropy };
}

/**
 * Upstream's trust_region_value_loss: per reward signal, the masked mean of the clipped squared
 * errors of `estimates` (one array per signal, in `rewardSignals` order) against the returns,
 * clipped around the estimates made when acting; the mean over the signals. With `gradients`,
 * adds `weight` times the loss's gradient with respect to each estimate (weight: the loss's
 * coefficient in the total).
 */
export function trustRegionValueLoss(
  estimates: readonly Float32Array[],
  oldEstimates: Readonly<Record<string, Float32Array>>,
  returns: Readonly<Record<string, Float32Array>>,
  rewardSignals: readonly string[],
  epsilon: number,
  masks: Float32Array,
  gradients: { readonly values: readonly Float32Array[]; readonly weight: number } | null,
): number {
  let maskSum = 0;
  for (const mask of masks) maskSum += mask;
  const counted = Math.max(maskSum, 1);
  let loss = 0;
  rewardSignals.forEach((name, s) => {
    const values = estimates[s];
    let errorSum = 0;
    for (let i = 0; i < masks.length; i++) {
      if (masks[i] === 0) continue;
      const [error, byValue] = clippedValueError(values[i], oldEstimates[name][i], returns[name][i], epsilon);
      errorSum += error;
      if (gradients) gradients.values[s][i] += (gradients.weight * byValue) / (counted * rewardSignals.length);
    }
    loss += errorSum / counted / rewardSignals.length;
  });
  return loss;
}

/**
 * PPO's clipped surrogate for one sample and column: min(r A, clip(r, 1 - eps, 1 + eps) A) with
 * r = exp(logRatio); returns it and its derivative with respect to the new log probability
 * (r A where the unclipped term is the minimum, 0 where the clipped one is).
 */
export function clippedSurrogate(logRatio: number, advantage: number, epsilon: number): [number, number] {
  const ratio = Math.exp(logRatio);
  const unclipped = ratio * advantage;
  const clipped = Math.min(Math.max(ratio, 1 - epsilon), 1 + epsilon) * advantage;
  return unclipped <= clipped ? [unclipped, unclipped] : [clipped, 0];
}

/**
 * The value error PPO minimizes for one sample: max((R - V)^2, (R - V_clipped)^2) with
 * V_clipped = V_old + clip(V - V_old, -eps, eps); returns it and its derivative by V.
 */
export function clippedValueError(value: number, oldValue: number, ret: number, epsilon: number): [number, number] {
  const change = value - oldValue;
  const clippedValue = oldValue + Math.min(Math.max(change, -epsilon), epsilon);
  const unclipped = (ret - value) * (ret - value);
  const clipped = (ret - clippedValue) * (ret - clippedValue);
  if (unclipped >= clipped) return [unclipped, 2 * (value - ret)];
  // V reaches the clipped error only while the clip is inactive (then V_clipped is V but for rounding).
  const inside = change >= -epsilon && change <= epsilon;
  return [clipped, inside ? 2 * (clippedValue - ret) : 0];
}
