/**
 * SAC's optimizer, as upstream's TorchSACOptimizer (sac/optimizer_torch.py): the actor (squashed
 * Gaussian with a conditional sigma, and categorical branches), the value network V(s) with a
 * target copy updated softly by tau, twin Q networks, and one learned entropy coefficient per
 * discrete branch plus one for the continuous actions. Each update on one minibatch:
 *
 *   Q losses      0.5 mean (Q_i(s, a) - (r + gamma (1 - done) V_target(s')))^2, per Q network
 *   value loss    0.5 mean (V(s) - (min_i Q_i(s, a~) - alpha log pi(a~|s)))^2
 *   policy loss   mean (alpha log pi(a~|s) - Q_1(s, a~)), a~ = tanh(mu + sigma eps) reparameterized
 *   entropy loss  -mean (log alpha (log pi(a~|s) + target entropy))
 *
 * with discrete actions in expectation over each branch's probabilities, exactly as upstream
 * writes them (the hybrid case included).
 *
 * With network_settings.memory, a minibatch is whole sequences of sequence_length rows, as
 * upstream's update: the actor starts each sequence from the agent's memories recorded at its
 * first step, V from the critic's; the Q networks start from zero memories; the target starts
 * from the memories V reaches after one step on the sequence's first observation, and runs over
 * the next observations (upstream records no next-value memories). The policy and entropy losses
 * are masked means, over real steps only. The Q and value losses are plain means, padding
 * included: upstream masks mse_loss(...), already a mean over the whole minibatch, and the masked
 * mean of that one number is the number itself. The four losses are computed from the same
 * parameters, then each group takes one Adam step at the decayed learning rate, and the target
 * moves tau of the way to the value network.
 *
 * Where the networks live: the actor and V are the two bodies of one ActorCritic (acting,
 * normalization, checkpoints and export shared with PPO), differentiated by its hand-derived
 * backward pass, each body with its own visual encoders; the target is a second ActorCritic
 * whose critic body (encoders included) follows V. The Q networks (src/networks/q-network.ts)
 * have network bodies of their own, whose input gradient gives dQ/da for the policy loss. All
 * networks read the actor's normalized vector observations, as upstream copies the
 * policy's normalizer into them before each update.
 */
import type { SACSettings } from '../../config/settings';
import { BehaviorSpec } from '../../env/behavior-spec';
import { SeededRandom } from '../../common/random';
import { ActorCritic, HeadGradients, HeadOutputs, ModelDescription, SequenceMemories } from '../../networks/actor-critic';
import { Adam } from '../../networks/adam';
import { CheckpointArray, CheckpointContents, encodeCheckpoint, requireCheckpointArray } from '../../networks/checkpoint-file';
import { EPSILON, maskedSoftmax } from '../../networks/distributions';
import { QNetwork } from '../../networks/q-network';
import { ReadingPass, gradientsSettled, runPass, scoped } from '../../networks/tensor-io';
import { decayedValue } from '../../networks/schedule';
import { LOG_SIGMA_MAX, LOG_SIGMA_MIN, clampLogSigma, squashedGaussianLogProb } from '../../networks/squashed-gaussian';
import { rowsAtSequenceStarts } from '../critic-memories';
import { NonFiniteLossError } from '../non-finite-loss';
import { CheckpointedOptimizer } from '../optimizer-checkpoint';
import type { ReplayRows } from './replay-buffer';
import { RewardProvider, loadProvidersStateArrays, providersStateArrays } from '../reward-signals/reward-provider';
import { BehavioralCloning, behavioralCloningStateArrays, loadBehavioralCloningStateArrays } from '../behavioral-cloning';

/** The floor of the linear learning-rate schedule, as upstream's. */
export const MIN_LEARNING_RATE = 1e-10;
/** Upstream's target entropies: -scale * continuous size, and scale * log(branch size) per branch. */
export const CONTINUOUS_TARGET_ENTROPY_SCALE = 1.0;
export const DISCRETE_TARGET_ENTROPY_SCALE = 0.2;

export interface SacOptimizerSettings {
  readonly hyperparameters: Pick<SACSettings, 'learning_rate' | 'learning_rate_schedule' | 'tau' | 'init_entcoef'>;
  /** The behavior's max_steps: where a linear learning rate reaches its floor. */
  readonly maxSteps: number;
  /**
   * Per reward signal, in the model's rewardSignals order: its gamma, strength, and whether its
   * Q target bootstraps past a true done (ignoreDone, upstream's use_dones_in_backup 0).
   */
  readonly signals: ReadonlyArray<{ readonly gamma: number; readonly strength: number; readonly ignoreDone?: boolean }>;
  /** The reward signals' providers by signal, saved and restored with the networks; none when not given. */
  readonly rewardProviders?: ReadonlyMap<string, RewardProvider>;
  /** behavioral_cloning, when configured: a round after each update (updateAndClonePass), saved and restored with the networks. */
  readonly behavioralCloning?: BehavioralCloning | null;
  /** Seeds the Q networks' initial weights and the update's action samples. */
  readonly seed: number;
}

/** What one update reports, under upstream's stat names. */
export interface SacUpdateStats {
  readonly 'Losses/Policy Loss': number;
  readonly 'Losses/Value Loss': number;
  readonly 'Losses/Q1 Loss': number;
  readonly 'Losses/Q2 Loss': number;
  readonly 'Policy/Continuous Entropy Coeff'?: number;
  readonly 'Policy/Discrete Entropy Coeff'?: number;
  readonly 'Policy/Learning Rate': number;
}

/** The actor's side of one update: what the Q losses and the entropy coefficient update need. */
interface ActorPass {
  policyLoss: number;
  valueLoss: number;
  /** -mean(log alpha (log pi + target entropy)), over the branches and the continuous actions. */
  entropyLoss: number;
  /** d entropy loss / d log alpha, per coefficient (branches, then continuous). */
  entropyCoefficientGradient: Float64Array;
}

/** The four losses of one minibatch and their gradients, before any step is taken. */
export interface SacGradients extends ActorPass {
  q1Loss: number;
  q2Loss: number;
  /** d (policy loss + value loss) / d model parameters (the actor's from the one, V's from the other). */
  modelGradient: Float32Array;
  /** d Q loss / d each Q network's parameters (the networks' own gradient arrays). */
  q1Gradient: Float32Array;
  q2Gradient: Float32Array;
}

export class SacOptimizer extends CheckpointedOptimizer {
  protected readonly checkpointKind = 'sac';
  readonly q1: QNetwork;
  readonly q2: QNetwork;
  /** The value network's slow copy (only its critic body is used). */
  readonly target: ActorCritic;
  /** log alpha: one per discrete branch, then one for the continuous actions (upstream's LogEntCoef). */
  readonly logEntropyCoefficients: Float32Array;
  /** Adam over the actor and the value network (the same rate and step count as upstream's two). */
  readonly modelAdam: Adam;
  readonly q1Adam: Adam;
  readonly q2Adam: Adam;
  readonly entropyAdam: Adam;
  readonly behavioralCloning: BehavioralCloning | null;

  /** Draws the reparameterization noise (and seeded the Q networks); reseeding it replays a draw. */
  readonly random: SeededRandom;
  private readonly continuousSize: number;
  private readonly branches: readonly number[];
  private readonly branchStarts: number[];
  /** Rows per training sequence: sequence_length with memory, else 1. */
  private readonly sequenceLength: number;
  /** Q outputs per reward signal: one per discrete action, or one (upstream's num_value_outs). */
  private readonly qOutputs: number;
  private readonly targetEntropies: Float64Array;
  /** The parameter ranges of the value network, which the target follows. */
  private readonly criticRanges: Array<[number, number]>;

  constructor(
    readonly model: ActorCritic,
    spec: BehaviorSpec,
    readonly settings: SacOptimizerSettings,
  ) {
    super();
    this.random = new SeededRandom(settings.seed + 7);
    const actionSpec = model.actionSpec;
    this.continuousSize = actionSpec.continuousSize;
    this.branches = actionSpec.discreteBranches;
    this.branchStarts = [];
    let total = 0;
    for (const size of this.branches) {
      this.branchStarts.push(total);
      total += size;
    }
    this.qOutputs = Math.max(total, 1);
    this.sequenceLength = model.options.network.memory?.sequence_length ?? 1;
    const streams = model.rewardSignals.length;
    const qSettings = { network: model.options.network, continuousActions: this.continuousSize, outputs: streams * this.qOutputs };
    this.q1 = new QNetwork(spec, qSettings, this.random);
    this.q2 = new QNetwork(spec, qSettings, this.random);
    this.target = new ActorCritic(spec, model.options);
    this.target.parameters.set(model.parameters);
    this.target.parametersChanged();
    this.criticRanges = model.blocks
      .filter((block) => block.name.startsWith('critic.'))
      .map((block) => [block.offset, block.offset + block.shape.reduce((a, b) => a * b, 1)]);

    this.logEntropyCoefficients = new Float32Array(this.branches.length + 1).fill(Math.log(settings.hyperparameters.init_entcoef));
    this.targetEntropies = Float64Array.from([
      ...this.branches.map((size) => DISCRETE_TARGET_ENTROPY_SCALE * Math.log(size)),
      -CONTINUOUS_TARGET_ENTROPY_SCALE * this.continuousSize,
    ]);
    this.modelAdam = new Adam(model.parameters.length);
    this.q1Adam = new Adam(this.q1.parameters.length);
    this.q2Adam = new Adam(this.q2.parameters.length);
    this.entropyAdam = new Adam(this.logEntropyCoefficients.length);
    this.behavioralCloning = settings.behavioralCloning ?? null;
  }

  learningRateAt(step: number): number {
    const h = this.settings.hyperparameters;
    return decayedValue(h.learning_rate_schedule, h.learning_rate, MIN_LEARNING_RATE, this.settings.maxSteps, step);
  }

  /**
   * One update on one minibatch, at training step `step` (for the learning rate). `signalRewards`:
   * each signal's unscaled reward per row, in the model's rewardSignals order (the environment's
   * reward for every signal when not given); each is scaled by its signal's strength here.
   */
  update(batch: ReplayRows, step: number, signalRewards?: readonly Float32Array[]): SacUpdateStats {
    return runPass(this.updatePass(batch, step, signalRewards));
  }

  /** update() as a reading pass (tensor-io.ts): SAC's update worker runs it with runPassAsync, on WebGPU too. */
  *updatePass(batch: ReplayRows, step: number, signalRewards?: readonly Float32Array[]): ReadingPass<SacUpdateStats> {
    const model = this.model;
    const learningRate = this.learningRateAt(step);
    const gradients = yield* this.lossesAndGradientsPass(batch, signalRewards);
    const { policyLoss, valueLoss, q1Loss, q2Loss } = gradients;
    if (![policyLoss, valueLoss, q1Loss, q2Loss].every(Number.isFinite)) {
      throw new NonFiniteLossError(
        `A SAC loss is not finite at step ${step} (policy ${policyLoss}, value ${valueLoss}, Q1 ${q1Loss}, Q2 ${q2Loss}): ` +
          'the update was not applied.',
      );
    }
    this.modelAdam.apply(model.parameters, gradients.modelGradient, learningRate);
    model.parametersChanged();
    this.q1Adam.apply(this.q1.parameters, gradients.q1Gradient, learningRate);
    this.q1.parametersChanged();
    this.q2Adam.apply(this.q2.parameters, gradients.q2Gradient, learningRate);
    this.q2.parametersChanged();
    this.entropyAdam.apply(this.logEntropyCoefficients, Float32Array.from(gradients.entropyCoefficientGradient), learningRate);
    this.softUpdateTarget(this.settings.hyperparameters.tau);

    const coefficients = Array.from(this.logEntropyCoefficients, Math.exp);
    const discrete = coefficients.slice(0, this.branches.length);
    return {
      'Losses/Policy Loss': policyLoss,
      'Losses/Value Loss': valueLoss,
      'Losses/Q1 Loss': q1Loss,
      'Losses/Q2 Loss': q2Loss,
      ...(this.continuousSize > 0 ? { 'Policy/Continuous Entropy Coeff': coefficients[this.branches.length] } : {}),
      ...(discrete.length > 0 ? { 'Policy/Discrete Entropy Coeff': discrete.reduce((a, b) => a + b, 0) / discrete.length } : {}),
      'Policy/Learning Rate': learningRate,
    };
  }

  /**
   * One update, then with behavioral_cloning a round of cloning, as upstream's trainer runs them;
   * the statistics of both. A reading pass: SAC's trainer runs it with runPass, its update worker
   * with runPassAsync (on WebGPU too).
   */
  *updateAndClonePass(batch: ReplayRows, step: number, signalRewards?: readonly Float32Array[]): ReadingPass<Record<string, number>> {
    const stats = yield* this.updatePass(batch, step, signalRewards);
    const cloning = this.behavioralCloning === null ? {} : yield* this.behavioralCloning.updatePass(step);
    return { ...stats, ...cloning };
  }

  /** The losses of one minibatch and their gradients, all from the current parameters; changes nothing. */
  lossesAndGradients(batch: ReplayRows, signalRewards?: readonly Float32Array[]): SacGradients {
    return runPass(this.lossesAndGradientsPass(batch, signalRewards));
  }

  /**
   * lossesAndGradients() as a reading pass. Its tensors live in one scope: one encoding of the
   * observations per Q network serves the policy's sampled actions and the stored ones, and its
   * backward runs in the Q losses.
   */
  *lossesAndGradientsPass(batch: ReplayRows, signalRewards?: readonly Float32Array[]): ReadingPass<SacGradients> {
    return yield* scoped(this.unscopedLossesAndGradients(batch, signalRewards));
  }

  private *unscopedLossesAndGradients(batch: ReplayRows, signalRewards?: readonly Float32Array[]): ReadingPass<SacGradients> {
    const n = batch.count;
    const model = this.model;
    const inputs = model.networkInputs(batch.observations, n);
    const sequences = this.sequenceMemories(batch);

    // Targets of the Q losses: r + gamma (1 - done) V_target(s'), per reward signal.
    this.target.normalizer?.copyFrom(model.normalizer!);
    const nextValues = sequences === undefined ? yield* this.target.valuesPass(batch.nextObservations, n) : yield* this.targetValuesInSequences(batch, sequences);
    const backups = model.rewardSignals.map((name, s) => {
      const { gamma, strength, ignoreDone } = this.settings.signals[s];
      const next = nextValues[name];
      const doneWeight = ignoreDone === true ? 0 : 1;
      return Float64Array.from(signalRewards?.[s] ?? batch.rewards, (r, i) => r * strength + (1 - doneWeight * batch.dones[i]) * gamma * next[i]);
    });

    const q1Encoded = yield* this.q1.encodePass(batch.observations, inputs, n, true);
    const q2Encoded = yield* this.q2.encodePass(batch.observations, inputs, n, true);
    const { gradient: modelGradient, loss: actorPass } = yield* model.gradientPass(
      batch.observations,
      n,
      (outputs, gradients) => this.actorAndValueLoss(outputs, gradients, q1Encoded, q2Encoded, batch),
      sequences,
    );
    // The Q losses come last: their backward passes overwrite what Q1's dQ/da pass left in its gradient.
    const q1Loss = yield* this.qLoss(this.q1, q1Encoded, batch, backups);
    const q2Loss = yield* this.qLoss(this.q2, q2Encoded, batch, backups);
    yield* gradientsSettled();
    return { ...actorPass, q1Loss, q2Loss, modelGradient, q1Gradient: this.q1.gradient, q2Gradient: this.q2.gradient };
  }

  /** With memory: the memories the actor and V start each of the batch's sequences from. */
  private sequenceMemories(batch: ReplayRows): SequenceMemories | undefined {
    const size = this.model.memorySize;
    if (size === 0) return undefined;
    if (batch.memories === undefined || batch.criticMemories === undefined || batch.masks === undefined) {
      throw new Error('A SAC model with memory trains on sequences: the minibatch needs its memories, critic memories and masks.');
    }
    const length = this.sequenceLength;
    return { length, actor: rowsAtSequenceStarts(batch.memories, size, length), critic: rowsAtSequenceStarts(batch.criticMemories, size, length) };
  }

  /**
   * V_target over each sequence's next observations, from the memories V reaches after one step
   * on the sequence's first observation (upstream's next_value_memories); a reading pass.
   */
  private *targetValuesInSequences(batch: ReplayRows, sequences: SequenceMemories): ReadingPass<Record<string, Float32Array>> {
    const n = batch.count;
    const length = sequences.length;
    const firstObservations = batch.observations.map((obs) => rowsAtSequenceStarts(obs, obs.length / n, length));
    const nextMemories = (yield* this.model.criticSequencesPass(firstObservations, n / length, sequences.critic, 1)).memories;
    return (yield* this.target.criticSequencesPass(batch.nextObservations, n, nextMemories, length)).values;
  }

  /**
   * The policy and value losses from the actor's and V's outputs: samples a~ by
   * reparameterization, runs both Q networks at it (on their encodings of the observations), and
   * writes d loss / d head outputs into `gradients` (the policy loss's for the actor heads, the
   * value loss's for V).
   */
  private *actorAndValueLoss(
    outputs: HeadOutputs,
    gradients: HeadGradients,
    q1Encoded: Float32Array,
    q2Encoded: Float32Array,
    batch: ReplayRows,
  ): ReadingPass<ActorPass> {
    const n = outputs.count;
    const C = this.continuousSize;
    const B = this.branches.length;
    const K = this.qOutputs;
    const S = this.model.rewardSignals.length;
    const alphas = Array.from(this.logEntropyCoefficients, Math.exp);
    const continuousAlpha = alphas[B];
    const entropyCoefficientGradient = new Float64Array(B + 1);

    // The reparameterized sample: u = mu + sigma eps, a = tanh(u), and log pi per dimension.
    const unsquashed = new Float64Array(n * C);
    const noise = new Float64Array(n * C);
    const sampled = new Float32Array(n * C);
    const logProbs = new Float64Array(n * C);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < C; j++) {
        const mean = outputs.means[j * n + i];
        const logStd = clampLogSigma(outputs.logStd[j * n + i]);
        const eps = this.random.gaussian();
        const u = mean + Math.exp(logStd) * eps;
        noise[i * C + j] = eps;
        unsquashed[i * C + j] = u;
        sampled[i * C + j] = Math.tanh(u);
        logProbs[i * C + j] = squashedGaussianLogProb(u, mean, logStd);
      }
    }
    // Each branch's probabilities over the masked logits, side by side (n x sum of branch sizes).
    const probs = new Float64Array(n * (B > 0 ? K : 0));
    const scratch = new Float64Array(Math.max(1, ...this.branches));
    const allowed = new Float64Array(scratch.length);
    const logits = new Float64Array(scratch.length);
    for (let i = 0; i < n; i++) {
      for (let b = 0; b < B; b++) {
        const size = this.branches[b];
        const start = this.branchStarts[b];
        for (let k = 0; k < size; k++) {
          logits[k] = outputs.logits[(start + k) * n + i];
          allowed[k] = batch.actionMasks[i * K + start + k];
        }
        maskedSoftmax(logits, allowed, size, scratch);
        for (let k = 0; k < size; k++) probs[i * K + start + k] = scratch[k];
      }
    }

    const q1p = yield* this.q1.forwardPass(q1Encoded, sampled, n);
    const q2p = yield* this.q2.forwardPass(q2Encoded, sampled, n);

    // Policy loss: d/d mean Q1 (over the reward signals) of each output, for Q1's backward pass.
    const q1OutputGradient = new Float32Array(n * S * K);
    let policyLoss = 0;
    let valueLoss = 0;
    let entropyLoss = 0;
    const meanQ1 = new Float64Array(K);
    const byMeanQ1 = new Float64Array(K);
    const byProb = new Float64Array(scratch.length);
    // The policy and entropy losses are masked means (padding out); the value loss is a plain mean.
    const masks = batch.masks;
    const counted = masks === undefined ? n : maskedCount(masks);
    for (let i = 0; i < n; i++) {
      const mask = masks === undefined ? 1 : masks[i];
      meanQ1.fill(0);
      byMeanQ1.fill(0);
      for (let s = 0; s < S; s++) for (let k = 0; k < K; k++) meanQ1[k] += q1p[(i * S + s) * K + k] / S;
      let sampleLoss = 0;
      let continuousLogProb = 0;
      for (let j = 0; j < C; j++) continuousLogProb += logProbs[i * C + j];

      // The continuous part: alpha sum_j log pi_j - Q, with Q the expectation over the discrete
      // actions when there are branches (upstream's all_mean_q1).
      if (C > 0) {
        let expectedQ = meanQ1[0];
        if (B > 0) {
          expectedQ = 0;
          for (let k = 0; k < K; k++) expectedQ += probs[i * K + k] * meanQ1[k];
        }
        sampleLoss += continuousAlpha * continuousLogProb - expectedQ;
        for (let k = 0; k < K; k++) byMeanQ1[k] -= B > 0 ? probs[i * K + k] : 1;
      }
      // The discrete part, per branch: sum_k p_k (alpha_b log p_k - Q_k).
      for (let b = 0; b < B; b++) {
        const size = this.branches[b];
        const start = this.branchStarts[b];
        let weighted = 0;
        let negativeEntropy = 0;
        for (let k = 0; k < size; k++) {
          const p = probs[i * K + start + k];
          const logP = Math.log(p + EPSILON);
          sampleLoss += alphas[b] * p * logP - p * meanQ1[start + k];
          negativeEntropy += p * logP;
          byMeanQ1[start + k] -= p;
          byProb[k] = alphas[b] * (logP + p / (p + EPSILON)) - meanQ1[start + k] - (C > 0 ? meanQ1[start + k] : 0);
          weighted += byProb[k] * p;
        }
        // Through the softmax (a forbidden logit gets no gradient, as upstream's mask product).
        for (let k = 0; k < size; k++) {
          const p = probs[i * K + start + k];
          gradients.logits[(start + k) * n + i] = (p * (byProb[k] - weighted) * batch.actionMasks[i * K + start + k] * mask) / counted;
        }
        entropyCoefficientGradient[b] -= ((negativeEntropy + this.targetEntropies[b]) * mask) / (counted * B);
        entropyLoss -= (this.logEntropyCoefficients[b] * (negativeEntropy + this.targetEntropies[b]) * mask) / (counted * B);
      }
      policyLoss += (sampleLoss * mask) / counted;
      for (let s = 0; s < S; s++) for (let k = 0; k < K; k++) q1OutputGradient[(i * S + s) * K + k] = (byMeanQ1[k] * mask) / (S * counted);
      if (C > 0) {
        entropyCoefficientGradient[B] -= ((continuousLogProb + this.targetEntropies[B]) * mask) / counted;
        entropyLoss -= (this.logEntropyCoefficients[B] * (continuousLogProb + this.targetEntropies[B]) * mask) / counted;
      }

      // Value loss: V(s) against min over the two Q networks minus the entropy terms.
      for (let s = 0; s < S; s++) {
        let backup: number;
        if (B === 0) {
          backup = Math.min(q1p[i * S + s], q2p[i * S + s]) - continuousAlpha * continuousLogProb;
        } else {
          let q1Expected = 0;
          let q2Expected = 0;
          let entropyBonus = 0;
          for (let b = 0; b < B; b++) {
            const start = this.branchStarts[b];
            for (let k = 0; k < this.branches[b]; k++) {
              const p = probs[i * K + start + k];
              q1Expected += (p * q1p[(i * S + s) * K + start + k]) / B;
              q2Expected += (p * q2p[(i * S + s) * K + start + k]) / B;
              entropyBonus += (alphas[b] * p * Math.log(p + EPSILON)) / B;
            }
          }
          // Upstream adds the continuous term with this sign in the hybrid case.
          backup = Math.min(q1Expected, q2Expected) - entropyBonus + (C > 0 ? continuousAlpha * continuousLogProb : 0);
        }
        const value = outputs.values[s][i];
        valueLoss += (0.5 * (value - backup) ** 2) / (n * S);
        gradients.values[s][i] = (value - backup) / (n * S);
      }
    }

    // dL/da from Q1 (its LinearEncoder's input gradient; the policy loss trains no Q network, so its
    // encoders are left alone), then through tanh, the log probability and the clamp to the
    // actor's heads.
    if (C > 0) {
      const actionGradient = yield* this.q1.backwardPass(q1OutputGradient, false);
      for (let i = 0; i < n; i++) {
        for (let j = 0; j < C; j++) {
          const k = i * C + j;
          const mean = outputs.means[j * n + i];
          const rawLogStd = outputs.logStd[j * n + i];
          const std = Math.exp(clampLogSigma(rawLogStd));
          const u = unsquashed[k];
          const a = sampled[k];
          const byAction = actionGradient[k];
          const twoVariance = 2 * std * std + EPSILON;
          // d log pi / d u with mu and sigma held: the Gaussian's -2 (u - mu) / (2 sigma^2) and
          // the squashing's +2 tanh(u); u - mu = sigma eps does not depend on mu.
          const mask = masks === undefined ? 1 : masks[i];
          const byU = byAction * (1 - a * a) + (continuousAlpha * (-2 * (u - mean) / twoVariance + 2 * Math.tanh(u)) * mask) / counted;
          const byMean = byU + (continuousAlpha * (2 * (u - mean)) * mask) / twoVariance / counted;
          const direct = (u - mean) ** 2 * 4 * std / (twoVariance * twoVariance) - 1 / (std + EPSILON);
          const byStd = byU * noise[k] + (continuousAlpha * direct * mask) / counted;
          const inClamp = rawLogStd >= LOG_SIGMA_MIN && rawLogStd <= LOG_SIGMA_MAX;
          gradients.means[j * n + i] = byMean;
          gradients.logStd[j * n + i] = inClamp ? byStd * std : 0;
        }
      }
    }
    return { policyLoss, valueLoss, entropyLoss, entropyCoefficientGradient };
  }

  /**
   * One Q network's loss on the stored actions: 0.5 mean (Q(s, a) - backup)^2 averaged over the
   * reward signals, with Q of discrete actions the mean over the branches of the chosen action's
   * output; leaves the parameter gradient in the network.
   */
  private *qLoss(network: QNetwork, encoded: Float32Array, batch: ReplayRows, backups: readonly Float64Array[]): ReadingPass<number> {
    const n = batch.count;
    const S = backups.length;
    const K = this.qOutputs;
    const B = this.branches.length;
    const out = yield* network.forwardPass(encoded, batch.continuousActions, n);
    const outputGradient = new Float32Array(out.length);
    let loss = 0;
    for (let s = 0; s < S; s++) {
      for (let i = 0; i < n; i++) {
        const row = (i * S + s) * K;
        let q = out[row];
        if (B > 0) {
          q = 0;
          for (let b = 0; b < B; b++) q += out[row + this.branchStarts[b] + batch.discreteActions[i * B + b]] / B;
        }
        const error = q - backups[s][i];
        loss += (0.5 * error * error) / (n * S);
        const byQ = error / (n * S);
        if (B === 0) outputGradient[row] = byQ;
        for (let b = 0; b < B; b++) outputGradient[row + this.branchStarts[b] + batch.discreteActions[i * B + b]] += byQ / B;
      }
    }
    yield* network.backwardPass(outputGradient, true);
    return loss;
  }

  /** target = tau value network + (1 - tau) target, over the value network's parameters (its encoders' included). */
  private softUpdateTarget(tau: number): void {
    const source = this.model.parameters;
    const target = this.target.parameters;
    for (const [start, end] of this.criticRanges) {
      for (let i = start; i < end; i++) target[i] = tau * source[i] + (1 - tau) * target[i];
    }
    this.target.parametersChanged();
  }

  /**
   * Copies of what an update changes, by checkpoint name: every network's parameters, log alpha,
   * the four Adams and their step counts, and behavioral cloning's Adam and learning rate. SAC's
   * update worker and its trainer exchange them (./update.ts); the normalizer, which only the
   * trainer feeds, is not among them.
   */
  updatedState(): Array<[string, CheckpointArray]> {
    const adams = this.namedAdams().flatMap(([name, adam]) => adam.stateArraysWithStep(name));
    const cloning = behavioralCloningStateArrays(this.behavioralCloning);
    return [...this.trainedArrays(), ...adams, ...cloning].map(([key, values]) => [key, values.slice()]);
  }

  /** Puts updatedState()'s copies in place. */
  loadUpdatedState(state: ReadonlyArray<[string, CheckpointArray]>): void {
    const arrays = new Map(state);
    for (const [key, values] of this.trainedArrays()) values.set(requireCheckpointArray(arrays, key, values.length));
    for (const [name, adam] of this.namedAdams()) adam.loadStateArraysWithStep(name, arrays);
    loadBehavioralCloningStateArrays(this.behavioralCloning, arrays);
    this.model.parametersChanged();
    this.target.parametersChanged();
    this.q1.parametersChanged();
    this.q2.parametersChanged();
  }

  /** The arrays an update trains (views), by checkpoint name. */
  private trainedArrays(): Array<[string, Float32Array]> {
    return [
      ['parameters', this.model.parameters],
      ['target.parameters', this.target.parameters],
      ['q1.parameters', this.q1.parameters],
      ['q2.parameters', this.q2.parameters],
      ['log_entropy_coefficients', this.logEntropyCoefficients],
    ];
  }

  /** Every network, optimizer state and coefficient in one checkpoint. */
  saveState(step: number): Uint8Array {
    const arrays = new Map<string, CheckpointArray>([...this.model.stateArrays(), ...this.trainedArrays()]);
    const adams = this.namedAdams();
    for (const [name, adam] of adams) for (const [key, values] of adam.stateArrays(name)) arrays.set(key, values);
    for (const [key, values] of providersStateArrays(this.settings.rewardProviders ?? new Map())) arrays.set(key, values);
    for (const [key, values] of behavioralCloningStateArrays(this.behavioralCloning)) arrays.set(key, values);
    const adamSteps = Object.fromEntries(adams.map(([name, adam]) => [name, adam.step]));
    return encodeCheckpoint({ kind: 'sac', step, adamSteps, model: this.model.describe() }, arrays);
  }

  protected restoreState({ meta, arrays }: CheckpointContents): number {
    this.model.loadStateArrays(meta.model as ModelDescription, arrays);
    const restoreArray = (name: string, target: Float32Array): void => target.set(requireCheckpointArray(arrays, name, target.length));
    restoreArray('target.parameters', this.target.parameters);
    this.target.parametersChanged();
    restoreArray('q1.parameters', this.q1.parameters);
    this.q1.parametersChanged();
    restoreArray('q2.parameters', this.q2.parameters);
    this.q2.parametersChanged();
    restoreArray('log_entropy_coefficients', this.logEntropyCoefficients);
    const steps = meta.adamSteps as Record<string, number>;
    for (const [name, adam] of this.namedAdams()) adam.loadStateArrays(name, arrays, steps[name]);
    loadProvidersStateArrays(this.settings.rewardProviders ?? new Map(), arrays);
    loadBehavioralCloningStateArrays(this.behavioralCloning, arrays);
    return meta.step as number;
  }

  private namedAdams(): Array<[string, Adam]> {
    return [
      ['adam.model', this.modelAdam],
      ['adam.q1', this.q1Adam],
      ['adam.q2', this.q2Adam],
      ['adam.entropy', this.entropyAdam],
    ];
  }
}

/** How many rows a masked mean divides by: the unmasked ones, at least one (upstream's masked_mean). */
export function maskedCount(masks: Float32Array): number {
  let total = 0;
  for (const m of masks) total += m;
  return Math.max(total, 1);
}
