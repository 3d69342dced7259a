/**
 * GAIL, generative adversarial imitation learning (upstream's GAILRewardProvider and
 * DiscriminatorNetwork): a discriminator D learns to tell the demonstrations' experiences (D near 1)
 * from the policy's (D near 0), and an experience's reward is -log(1 - D): high where the policy
 * behaves as the demonstrator did.
 *
 * D is a LinearEncoder over the vector observations (normalized with network_settings.normalize),
 * with use_actions the actions (continuous values, then each branch one-hot) and the done flag
 * beside them, then a linear estimator and a sigmoid. Its loss, on a policy minibatch and as many
 * demonstration rows drawn at random:
 *
 *   loss = -mean(log(D(expert) + eps) + log(1 - D(policy) + eps))
 *        + 10 mean((sqrt(|dD/dx(x~)|^2 + eps) - 1)^2)     the gradient penalty (Gulrajani et al.)
 *
 * x~ mixing policy and expert inputs element by element at uniform random weights, dD/dx taken
 * with respect to the first observation only, as upstream takes it. With use_vail (VAIL, Peng et
 * al.), the encoding goes through a stochastic bottleneck z = mu + sigma noise of 128 features
 * and the loss adds beta (KL - 0.5), KL the divergence of the codes from a unit normal; beta
 * follows the KL (beta <- max(beta + 0.0005 (KL - 0.5), 0)) and, as upstream's, the gradient
 * takes the beta this step sets.
 *
 * The gradient comes from tfjs's autodiff over traced passes (Dense.tracedPass): the penalty holds
 * a gradient, which the hand-written passes do not differentiate. That inner gradient dD/dx is
 * itself written as traced ops (tfjs's nested tf.grad drops the paths through the tensors its
 * inner pass saves: measured against finite differences, it is wrong). Not derived by hand: one
 * update of upstream's test size (2 x 128, 16 rows) takes about 7 ms on wasm here, a few times
 * a SAC update of its policy, and a fraction of the wall time of a run. Images are not taken yet:
 * their encoders have no traced pass.
 */
import * as tf from '@tensorflow/tfjs';
import type { GAILSettings } from '../../config/settings';
import type { BehaviorSpec } from '../../env/behavior-spec';
import type { Logger } from '../../common/logger';
import { SeededRandom } from '../../common/random';
import { Adam } from '../../networks/adam';
import { CheckpointArray, requireCheckpointArray } from '../../networks/checkpoint-file';
import { BodyInputLayout, isVisual, observationLabel } from '../../networks/encoders/body-input';
import { Dense, TracedPass, linearLayer } from '../../networks/layers/dense';
import { sequentialAllocator, type ParameterBlock, type TracedParameters } from '../../networks/layers/layer';
import { LinearEncoder } from '../../networks/layers/linear-encoder';
import { NORMALIZED_CLIP, RunningNormalizer } from '../../networks/normalizer';
import { tensorValues } from '../../networks/tensor-io';
import type { AgentBuffer } from '../buffer';
import { loadDemonstrations } from '../demonstrations';
import { RewardBatch, RewardProvider, rewardBatchOf } from './reward-provider';

/** Upstream's DiscriminatorNetwork constants. */
export const GRADIENT_PENALTY_WEIGHT = 10.0;
export const Z_SIZE = 128;
export const BETA_STEP = 0.0005;
export const MUTUAL_INFORMATION = 0.5;
export const EPSILON = 1e-7;
export const INITIAL_BETA = 0.0;

/** Upstream's stat tags. */
export const GAIL_TAGS = {
  policyEstimate: 'Policy/GAIL Policy Estimate',
  expertEstimate: 'Policy/GAIL Expert Estimate',
  loss: 'Losses/GAIL Loss',
  beta: 'Policy/GAIL Beta',
  klLoss: 'Losses/GAIL KL Loss',
  gradientPenalty: 'Policy/GAIL Grad Mag Loss',
} as const;

/** The random draws of one loss: fixed, the loss is a function of the parameters alone. */
export interface DiscriminatorDraws {
  /** count x input width, in [0, 1): each input's weight on the policy's side of x~. */
  readonly mixing: Float32Array;
  /** With VAIL: count x Z_SIZE standard normals each for the policy, expert and mixed codes. */
  readonly noise: { readonly policy: Float32Array; readonly expert: Float32Array; readonly mixed: Float32Array } | null;
}

export interface DiscriminatorLoss {
  readonly loss: number;
  /** d loss / d parameters (same layout). */
  readonly gradient: Float32Array;
  readonly stats: Record<string, number>;
  /** With VAIL, the beta this step sets (the loss and gradient used it). */
  readonly beta: number;
}

/** D of a batch, the code's mean (VAIL), and d(sum of D)/d(normalized input), all traced. */
interface Estimate {
  readonly estimate: tf.Tensor2D;
  readonly mean: tf.Tensor2D | null;
  readonly inputGradient: () => tf.Tensor2D;
}

/** VAIL's bottleneck: the code's mean from the encoding, and its standard deviations. */
interface Bottleneck {
  readonly mean: Dense;
  readonly sigma: ParameterBlock;
}

export class GailRewardProvider implements RewardProvider {
  readonly name = 'GAIL';
  readonly gamma: number;
  readonly strength: number;
  readonly ignoreDone = false;
  readonly trains = true;
  /** The discriminator's parameters: encoder, bottleneck (VAIL), estimator. */
  readonly parameters: Float32Array;
  readonly adam: Adam;
  readonly normalizer: RunningNormalizer | null;
  /** The demonstrations' rows (obs:i, actions, done). */
  readonly demonstrations: AgentBuffer;
  /** VAIL's beta: no gradient moves it, the KL divergence does. */
  beta = INITIAL_BETA;
  private readonly encoder: LinearEncoder;
  private readonly bottleneck: Bottleneck | null;
  private readonly estimator: Dense;
  private readonly layout: BodyInputLayout;
  private readonly useActions: boolean;
  private readonly continuousSize: number;
  private readonly branches: readonly number[];
  private readonly inputWidth: number;
  private readonly learningRate: number;
  private readonly random: SeededRandom;
  /** The parameter blocks, in allocation order. */
  private readonly blocks: readonly ParameterBlock[];

  /** `demonstrations` replaces the rows read from settings.demo_path (tests). */
  constructor(settings: GAILSettings, spec: BehaviorSpec, seed: number, logger?: Logger | null, demonstrations?: AgentBuffer) {
    this.gamma = settings.gamma;
    this.strength = settings.strength;
    this.learningRate = settings.learning_rate;
    this.useActions = settings.use_actions;
    let network = settings.network_settings;
    if (network.memory !== null) {
      logger?.warning('memory was specified in network_settings but is not supported by GAIL. It is being ignored.');
      network = { ...network, memory: null };
    }
    spec.observationSpecs.forEach((obs, k) => {
      if (obs.shape.length !== 1) {
        const kind = isVisual(obs.shape) ? 'an image' : 'a variable-length observation';
        throw new Error(
          `${observationLabel(spec, k)} is ${kind} (${obs.shape.join('x')}): the gail reward signal takes vector ` +
            'observations only so far. Remove reward_signals.gail, or train this behavior with vector observations only.',
        );
      }
    });
    this.layout = new BodyInputLayout(spec, network.hidden_units);
    this.continuousSize = spec.actionSpec.continuousSize;
    this.branches = spec.actionSpec.discreteBranches;
    // The actions flattened, then the done flag (upstream's ActionFlattener and its "+1 for dones").
    const actionWidth = this.useActions ? this.continuousSize + this.branches.reduce((a, b) => a + b, 0) + 1 : 0;
    this.inputWidth = this.layout.vectorWidth + actionWidth;

    const { allocate, blocks, size } = sequentialAllocator();
    this.blocks = blocks;
    this.encoder = new LinearEncoder(allocate, 'gail.encoder', this.inputWidth, network.hidden_units, network.num_layers);
    this.bottleneck = settings.use_vail
      ? {
          mean: linearLayer(allocate, 'gail.z_mu', network.hidden_units, Z_SIZE, { kind: 'kaimingNormal', gain: 0.1 }),
          sigma: allocate('gail.z_sigma', [Z_SIZE]),
        }
      : null;
    this.estimator = linearLayer(allocate, 'gail.estimator', settings.use_vail ? Z_SIZE : network.hidden_units, 1, { kind: 'xavierUniform', gain: 0.2 });
    this.parameters = new Float32Array(size());
    this.random = new SeededRandom(seed);
    this.encoder.initialize(this.parameters, this.random);
    if (this.bottleneck !== null) {
      this.bottleneck.mean.initialize(this.parameters, this.random);
      this.parameters.fill(1, this.bottleneck.sigma.offset, this.bottleneck.sigma.offset + Z_SIZE);
    }
    this.estimator.initialize(this.parameters, this.random);
    this.adam = new Adam(size());
    this.normalizer = network.normalize ? new RunningNormalizer(this.layout.vectorWidth) : null;
    this.demonstrations = demonstrations ?? loadDemonstrations(settings.demo_path, 1, { spec, setting: 'reward_signals.gail.demo_path' }).buffer;
  }

  /** -log(1 - D (1 - eps)) per row, D without VAIL's noise. */
  evaluate(batch: RewardBatch): Float32Array {
    if (batch.count === 0) return new Float32Array(0);
    const rows = this.inputRows(batch);
    const estimates = tf.tidy(() => tensorValues(this.estimate(this.traced(this.blockTensors()), this.inputTensor(rows, batch.count), null).estimate));
    return Float32Array.from(estimates, (d) => -Math.log(1 - d * (1 - EPSILON)));
  }

  /** One Adam step on the policy's minibatch against as many demonstration rows drawn at random. */
  update(batch: RewardBatch): Record<string, number> {
    const count = batch.count;
    const expert = rewardBatchOf(this.demonstrations.sampleMiniBatch(count, 1, () => this.random.next()));
    // As upstream: the demonstrations feed the normalizer before the loss reads it.
    this.normalizer?.update(this.layout.vectorRows(expert.observations, count), count);
    const result = this.discriminatorLoss(batch, expert, this.draw(count), (kl) => Math.max(this.beta + BETA_STEP * (kl - MUTUAL_INFORMATION), 0));
    this.adam.apply(this.parameters, result.gradient, this.learningRate);
    this.beta = result.beta;
    return result.stats;
  }

  /** The random draws one loss on `count` rows takes. */
  draw(count: number): DiscriminatorDraws {
    const mixing = Float32Array.from({ length: count * this.inputWidth }, () => this.random.next());
    const normals = () => Float32Array.from({ length: count * Z_SIZE }, () => this.random.gaussian());
    return { mixing, noise: this.bottleneck === null ? null : { policy: normals(), expert: normals(), mixed: normals() } };
  }

  /**
   * The discriminator's loss on a policy and an expert batch of the same size, its gradient and
   * statistics; changes nothing. `betaFor` gives VAIL's beta from the batch's KL divergence.
   */
  discriminatorLoss(policy: RewardBatch, expert: RewardBatch, draws: DiscriminatorDraws, betaFor: (kl: number) => number): DiscriminatorLoss {
    const count = policy.count;
    if (expert.count !== count) throw new Error(`GAIL's loss takes policy and expert batches of one size (got ${count} and ${expert.count}).`);
    const policyRows = this.inputRows(policy);
    const expertRows = this.inputRows(expert);
    const mixedRows = Float32Array.from(draws.mixing, (w, i) => w * policyRows[i] + (1 - w) * expertRows[i]);
    const stats: Record<string, number> = {};
    let beta = this.beta;
    let loss = 0;
    const gradient = tf.tidy(() => {
      // One pass over the policy's, the expert's and the mixed rows, one after another: a third of
      // the ops of three passes, and tfjs's cost here is per op.
      const rows = new Float32Array(3 * count * this.inputWidth);
      [policyRows, expertRows, mixedRows].forEach((part, k) => rows.set(part, k * count * this.inputWidth));
      const inputs = this.inputTensor(rows, 3 * count);
      const noise = draws.noise === null ? null : tf.tensor2d(Float32Array.from([...draws.noise.policy, ...draws.noise.expert, ...draws.noise.mixed]), [3 * count, Z_SIZE]);
      const part = (tensor: tf.Tensor2D, k: number) => tf.slice(tensor, [k * count, 0], [count, -1]);
      const total = (...blockTensors: tf.Tensor[]): tf.Scalar => {
        const theta = this.traced(blockTensors);
        const all = this.estimate(theta, inputs, noise);
        const [policyEstimate, expertEstimate] = [part(all.estimate, 0), part(all.estimate, 1)];
        const discriminator = tf.neg(tf.mean(tf.add(tf.log(tf.add(expertEstimate, EPSILON)), tf.log(tf.add(tf.sub(1, policyEstimate), EPSILON)))));
        stats[GAIL_TAGS.policyEstimate] = tf.mean(policyEstimate).dataSync()[0];
        stats[GAIL_TAGS.expertEstimate] = tf.mean(expertEstimate).dataSync()[0];
        stats[GAIL_TAGS.loss] = discriminator.dataSync()[0];
        let sum: tf.Scalar = discriminator as tf.Scalar;
        if (all.mean !== null) {
          const kl = this.klDivergence(theta, part(all.mean, 0), part(all.mean, 1));
          stats[GAIL_TAGS.klLoss] = kl.dataSync()[0];
          beta = betaFor(stats[GAIL_TAGS.klLoss]);
          stats[GAIL_TAGS.beta] = beta;
          sum = tf.add(sum, tf.mul(beta, tf.sub(kl, MUTUAL_INFORMATION)));
        }
        const penalty = tf.mul(GRADIENT_PENALTY_WEIGHT, this.gradientMagnitude(part(all.inputGradient(), 2), mixedRows, count));
        stats[GAIL_TAGS.gradientPenalty] = penalty.dataSync()[0];
        return tf.add(sum, penalty) as tf.Scalar;
      };
      const { value, grads } = tf.valueAndGrads(total)(this.blockTensors());
      loss = value.dataSync()[0];
      const flat = new Float32Array(this.parameters.length);
      grads.forEach((grad, b) => flat.set(grad.dataSync(), this.blocks[b].offset));
      return flat;
    });
    return { loss, gradient, stats, beta };
  }

  stateArrays(): Map<string, CheckpointArray> {
    return new Map<string, CheckpointArray>([
      ['parameters', this.parameters],
      ...this.adam.stateArraysWithStep('adam'),
      ...(this.bottleneck === null ? [] : ([['beta', new Float64Array([this.beta])]] as Array<[string, CheckpointArray]>)),
      ...(this.normalizer?.stateArrays() ?? []),
    ]);
  }

  loadStateArrays(arrays: ReadonlyMap<string, CheckpointArray>): void {
    this.parameters.set(requireCheckpointArray(arrays, 'parameters', this.parameters.length));
    this.adam.loadStateArraysWithStep('adam', arrays);
    if (this.bottleneck !== null) this.beta = requireCheckpointArray(arrays, 'beta', 1)[0];
    this.normalizer?.loadStateArrays(arrays);
  }

  /**
   * D (count x 1) of raw input rows, with VAIL the code's mean, and d(sum of D)/d(normalized
   * input) as traced ops; `noise` null takes the mean itself as the code (evaluation). Call
   * inside tf.tidy.
   */
  private estimate(theta: TracedParameters, rows: tf.Tensor2D, noise: tf.Tensor2D | null): Estimate {
    const encoder = this.encoder.tracedPass(this.normalized(rows), theta);
    let code = encoder.output;
    let meanPass: TracedPass | null = null;
    if (this.bottleneck !== null) {
      meanPass = this.bottleneck.mean.tracedPass(code, theta);
      code = noise === null ? meanPass.output : tf.add(meanPass.output, tf.mul(noise, this.sigma(theta)));
    }
    const estimator = this.estimator.tracedPass(code, theta);
    const estimate = tf.sigmoid(estimator.output);
    const inputGradient = () => {
      // The noise is added: d code / d mean is 1.
      const byCode = estimator.inputGradient(tf.mul(estimate, tf.sub(1, estimate)));
      return encoder.inputGradient(meanPass === null ? byCode : meanPass.inputGradient(byCode));
    };
    return { estimate, mean: meanPass?.output ?? null, inputGradient };
  }

  /** mean over rows of -sum(1 + log sigma^2 - mu_e^2 / 2 - mu_p^2 / 2 - sigma^2), as upstream writes it. */
  private klDivergence(theta: TracedParameters, policyMean: tf.Tensor2D, expertMean: tf.Tensor2D): tf.Scalar {
    const variance = tf.square(this.sigma(theta));
    const terms = tf.sub(tf.sub(tf.add(1, tf.log(variance)), tf.add(tf.mul(0.5, tf.square(expertMean)), tf.mul(0.5, tf.square(policyMean)))), variance);
    return tf.mean(tf.neg(tf.sum(terms, 1)));
  }

  /**
   * mean((sqrt(|dD/d obs 0|^2 + eps) - 1)^2), from d(sum of D)/d(normalized input) at the mixed
   * rows (count x input width, traced) and the mixed rows themselves.
   */
  private gradientMagnitude(inputGradient: tf.Tensor2D, mixed: Float32Array, count: number): tf.Scalar {
    const first = this.layout.observationSizes[0];
    let slope = tf.slice(inputGradient, [0, 0], [-1, first]);
    if (this.normalizer !== null) slope = tf.mul(slope, tf.tensor2d(this.normalizationSlopes(mixed, count, first), [count, first]));
    return tf.mean(tf.square(tf.sub(tf.sqrt(tf.add(tf.sum(tf.square(slope), 1), EPSILON)), 1)));
  }

  /** d normalized / d raw of the first `columns` inputs: 1 / std inside the clip, 0 where it clips (as torch.clamp). */
  private normalizationSlopes(rows: Float32Array, count: number, columns: number): Float32Array {
    const normalizer = this.normalizer!;
    const slopes = new Float32Array(count * columns);
    for (let f = 0; f < columns; f++) {
      const std = Math.sqrt(normalizer.variance[f] / normalizer.steps);
      for (let i = 0; i < count; i++) {
        const scaled = (rows[i * this.inputWidth + f] - normalizer.mean[f]) / std;
        slopes[i * columns + f] = Math.abs(scaled) <= NORMALIZED_CLIP ? 1 / std : 0;
      }
    }
    return slopes;
  }

  private sigma(theta: TracedParameters): tf.Tensor {
    return theta(this.bottleneck!.sigma);
  }

  /** Each parameter block's values as a tensor of its shape, in allocation order. */
  private blockTensors(): tf.Tensor[] {
    return this.blocks.map((block) => tf.tensor(this.parameters.subarray(block.offset, block.offset + block.shape.reduce((a, b) => a * b, 1)), [...block.shape]));
  }

  /** The blocks' tensors looked up by block. */
  private traced(tensors: readonly tf.Tensor[]): TracedParameters {
    const byBlock = new Map(this.blocks.map((block, b) => [block, tensors[b]]));
    return (block) => byBlock.get(block)!;
  }

  /** The vector observations normalized (clip((x - mean) / std, -5, 5)), the actions and dones as they are. */
  private normalized(rows: tf.Tensor2D): tf.Tensor2D {
    const normalizer = this.normalizer;
    if (normalizer === null) return rows;
    const width = normalizer.size;
    const std = Float32Array.from(normalizer.variance, (v) => Math.sqrt(v / normalizer.steps));
    const observations = tf.div(tf.sub(tf.slice(rows, [0, 0], [-1, width]), tf.tensor1d(Float32Array.from(normalizer.mean))), tf.tensor1d(std));
    const clipped = tf.clipByValue(observations, -NORMALIZED_CLIP, NORMALIZED_CLIP) as tf.Tensor2D;
    return width < this.inputWidth ? tf.concat([clipped, tf.slice(rows, [0, width], [-1, -1])], 1) : clipped;
  }

  private inputTensor(rows: Float32Array, count: number): tf.Tensor2D {
    return tf.tensor2d(rows, [count, this.inputWidth]);
  }

  /** The discriminator's raw input (count x width): vector observations, then with use_actions the actions and done. */
  private inputRows(batch: RewardBatch): Float32Array {
    const count = batch.count;
    const vectorWidth = this.layout.vectorWidth;
    const observations = this.layout.vectorRows(batch.observations, count);
    if (!this.useActions) return observations;
    const width = this.inputWidth;
    const rows = new Float32Array(count * width);
    const C = this.continuousSize;
    const continuous = batch.continuousActions ?? new Float32Array(0);
    const discrete = batch.discreteActions ?? new Int32Array(0);
    if (continuous.length !== count * C || discrete.length !== count * this.branches.length || batch.dones === undefined) {
      throw new Error('GAIL with use_actions needs the batch\'s actions and done flags.');
    }
    for (let i = 0; i < count; i++) {
      const row = i * width;
      rows.set(observations.subarray(i * vectorWidth, (i + 1) * vectorWidth), row);
      let column = row + vectorWidth;
      for (let j = 0; j < C; j++) rows[column++] = continuous[i * C + j];
      this.branches.forEach((size, b) => {
        rows[column + discrete[i * this.branches.length + b]] = 1;
        column += size;
      });
      rows[column] = batch.dones[i];
    }
    return rows;
  }
}
