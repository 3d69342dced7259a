/**
 * Upstream's ActionModel (torch_entities/action_model.py): how the actor's encoding becomes
 * actions. Its heads are output parts of the actor's dense head: the Gaussian's means (mu) and,
 * with a conditional sigma, its log standard deviations (log_sigma), then one block of logits
 * per discrete branch (MultiCategoricalDistribution); hybrid actions have both. Continuous
 * actions are sampled from the Gaussian and clipped to [-3, 3] for the environment, or, squashed
 * (SAC), sent as tanh of the sample; each branch samples from the softmax of its logits with
 * forbidden actions masked out.
 */
import type { SeededRandom } from '../common/random';
import type { ActionSpec, ActionTuple } from '../env/behavior-spec';
import {
  argmax,
  categoricalEntropy,
  categoricalLogProb,
  clipAction,
  gaussianEntropy,
  gaussianLogProb,
  maskedSoftmax,
  sampleCategorical,
} from './distributions';
import type { DenseOutputPart } from './layers/dense';
import { clampLogSigma, squashedGaussianLogProb } from './squashed-gaussian';

export interface ActionModelOptions {
  /** The log standard deviations are a head (SAC's actor), clamped to [-20, 2], not a learned vector. */
  readonly conditionalSigma: boolean;
  /** Continuous actions are tanh of the Gaussian sample (SAC's actor). */
  readonly tanhSquash: boolean;
  /** Take the means and each branch's most likely action instead of sampling (network_settings.deterministic). */
  readonly deterministic: boolean;
}

/** A batch of decisions. Row i of every array belongs to agent i. */
export interface SampledActions {
  /** The actions as sampled: what the buffer stores and the update learns from. */
  readonly action: ActionTuple;
  /** What the environment receives: continuous actions clipped as upstream's clip_action. */
  readonly envAction: ActionTuple;
  /** n x continuous size, and n x branches (the log probability of each branch's choice). */
  readonly logProbs: { readonly continuous: Float32Array; readonly discrete: Float32Array };
  /** The entropy of each agent's action distribution. */
  readonly entropy: Float32Array;
}

export class ActionModel {
  /** Whether log_sigma is a head (only with continuous actions). */
  readonly conditionalSigma: boolean;
  /** Its heads, in order, drawn as upstream's: KaimingHeNormal with gain 0.2 for the Gaussian, 0.1 for the logits. */
  readonly heads: readonly DenseOutputPart[];
  /** Head rows before the logits: the means, then log_sigma when conditional. */
  readonly logitStart: number;
  /** Where each branch's logits start among the logits. */
  readonly branchOffsets: readonly number[];
  /** The sum of the branch sizes. */
  readonly logitRows: number;

  constructor(
    readonly actionSpec: ActionSpec,
    readonly options: ActionModelOptions,
  ) {
    const continuous = actionSpec.continuousSize;
    this.conditionalSigma = continuous > 0 && options.conditionalSigma;
    const heads: DenseOutputPart[] = [];
    if (continuous > 0) heads.push({ name: 'mu', size: continuous, init: { kind: 'kaimingNormal', gain: 0.2 } });
    if (this.conditionalSigma) heads.push({ name: 'log_sigma', size: continuous, init: { kind: 'kaimingNormal', gain: 0.2 } });
    this.logitStart = this.conditionalSigma ? 2 * continuous : continuous;
    const offsets: number[] = [];
    let logitRows = 0;
    actionSpec.discreteBranches.forEach((size, b) => {
      heads.push({ name: `branches.${b}`, size, init: { kind: 'kaimingNormal', gain: 0.1 } });
      offsets.push(logitRows);
      logitRows += size;
    });
    this.heads = heads;
    this.branchOffsets = offsets;
    this.logitRows = logitRows;
  }

  /**
   * Actions for `count` agents from their head outputs (`outputs`, count rows of `width` values,
   * the heads' first), with `sharedLogStd` the learned log standard deviations when sigma is not
   * conditional, and `allowedActions` (count x sum of branch sizes, 1 where available) masking
   * discrete actions.
   */
  sample(
    outputs: Float32Array,
    width: number,
    count: number,
    sharedLogStd: Float32Array,
    allowedActions: ArrayLike<number> | null | undefined,
    random: SeededRandom,
  ): SampledActions {
    const spec = this.actionSpec;
    const continuous = spec.continuousSize;
    const branches = spec.discreteBranches;
    const maskWidth = this.logitRows;
    if (allowedActions && allowedActions.length !== count * maskWidth) {
      throw new Error(`act() got an action mask of ${allowedActions.length} values for ${count} agents x ${maskWidth} actions.`);
    }
    const { deterministic, tanhSquash } = this.options;
    const action = spec.emptyAction(count);
    const envContinuous = new Float32Array(count * continuous);
    const continuousLogProbs = new Float32Array(count * continuous);
    const discreteLogProbs = new Float32Array(count * branches.length);
    const entropy = new Float32Array(count);

    const probs = new Float64Array(Math.max(1, ...branches));
    const allowed = new Float64Array(probs.length);
    for (let i = 0; i < count; i++) {
      const row = i * width;
      let continuousEntropy = 0;
      for (let j = 0; j < continuous; j++) {
        const mean = outputs[row + j];
        const logStd = this.conditionalSigma ? clampLogSigma(outputs[row + continuous + j]) : sharedLogStd[j];
        const k = i * continuous + j;
        continuousEntropy += gaussianEntropy(logStd) / continuous;
        const sample = deterministic ? mean : mean + Math.exp(logStd) * random.gaussian();
        if (tanhSquash) {
          action.continuous[k] = Math.tanh(sample);
          envContinuous[k] = action.continuous[k];
          continuousLogProbs[k] = squashedGaussianLogProb(sample, mean, logStd);
        } else {
          action.continuous[k] = sample;
          // From the stored float32 value, as upstream clips the action tensor.
          envContinuous[k] = clipAction(action.continuous[k]);
          continuousLogProbs[k] = gaussianLogProb(action.continuous[k], mean, logStd);
        }
      }
      let agentEntropy = continuousEntropy;
      for (let b = 0; b < branches.length; b++) {
        const size = branches[b];
        const first = this.logitStart + this.branchOffsets[b];
        for (let k = 0; k < size; k++) allowed[k] = allowedActions ? allowedActions[i * maskWidth + this.branchOffsets[b] + k] : 1;
        maskedSoftmax(outputs.subarray(row + first, row + first + size), allowed, size, probs);
        const choice = deterministic ? argmax(probs, size) : sampleCategorical(probs, size, random.next());
        action.discrete[i * branches.length + b] = choice;
        discreteLogProbs[i * branches.length + b] = categoricalLogProb(probs, choice);
        agentEntropy += categoricalEntropy(probs, size);
      }
      entropy[i] = agentEntropy;
    }
    return {
      action,
      envAction: { continuous: envContinuous, discrete: action.discrete },
      logProbs: { continuous: continuousLogProbs, discrete: discreteLogProbs },
      entropy,
    };
  }
}
