/**
 * GAIL, generative adversarial imitation learning (upstream's GAILRewardProvider and
 * DiscriminatorNetwork): a discriminator D learns to tell the demonstrations' experiences (D near 1)
 * from the policy's (D near 0), and an experience's reward is -log(1 - D): high where the policy
 * behaves as the demonstrator did.
 *
 * D is upstream's NetworkBody over the observations (each image through its own visual encoder of
 * network_settings.vis_encode_type, the vector observations normalized with normalize, the
 * variable-length ones through the entity attention, a goal signal conditioning the body through
 * the hypernetwork with goal_conditioning_type hyper), with
 * use_actions the actions (continuous values, then each branch one-hot) and the done flag among
 * the body's inputs, then a linear estimator and a sigmoid. Its loss, on a policy minibatch and
 * as many demonstration rows drawn at random:
 *
 *   loss = -mean(log(D(expert) + eps) + log(1 - D(policy) + eps))
 *        + 10 mean((sqrt(|dD/dx(x~)|^2 + eps) - 1)^2)     the gradient penalty (Gulrajani et al.)
 *
 * x~ mixing policy and expert inputs (every observation, the actions, the done flag) value by
 * value at uniform random weights. As upstream's, dD/dx is taken with respect to the first
 * observation only (its raw values, through the normalization) and its square summed over that
 * observation's second axis: a vector's features, an image's channels, the mean then running
 * over the rows and, for an image, its pixels; a variable-length observation's sum runs over its
 * entities (its padded ones too: the mixing weighs each value, so a padded entity beside a present
 * one on the other side is mixed into a faint entity, which the attention masks only if its
 * squares sum under 0.01, as upstream's). With use_vail (VAIL, Peng et al.), the encoding
 * goes through a stochastic bottleneck z = mu + sigma noise of 128 features and the loss adds
 * beta (KL - 0.5), KL the divergence of the codes from a unit normal; beta follows the KL
 * (beta <- max(beta + 0.0005 (KL - 0.5), 0)) and, as upstream's, the gradient takes the beta
 * this step sets.
 *
 * The gradient comes from tfjs's autodiff over the layers' traced passes (TracedPass in
 * networks/layers/layer.ts): the penalty holds a gradient, which the hand-written passes do not
 * differentiate, so the inner dD/dx is itself written as traced ops, the convolutions' and max
 * pooling's as ops of their own whose gradients tfjs is given. Not derived by hand: one update of
 * upstream's test size (2 x 128, 16 rows, vector observations) takes about 7 ms on wasm here, a
 * few times a SAC update of its policy; on a 3x20x20 camera (simple encoder) 40 to 70 ms, most
 * of it the many small ops of the strided convolutions' input gradients; on one [10, 5]
 * variable-length observation about 4 times the vector case (the attention's 128-wide layers
 * over every entity, traced twice).
 */
import * as tf from '@tensorflow/tfjs';
import type { GAILSettings } from '../../config/settings';
import type { BehaviorSpec } from '../../env/behavior-spec';
import type { Logger } from '../../common/logger';
import { SeededRandom } from '../../common/random';
import { Adam } from '../../networks/adam';
import { CheckpointArray, requireCheckpointArray } from '../../networks/checkpoint-file';
import { BodyInputLayout } from '../../networks/encoders/body-input';
import { Dense, linearLayer } from '../../networks/layers/dense';
import { sequentialAllocator, type ParameterBlock, type TracedParameters, type TracedPass } from '../../networks/layers/layer';
import { NetworkBody } from '../../networks/network-body';
import { NORMALIZED_CLIP, RunningNormalizer } from '../../networks/normalizer';
import { ReadingPass, runPass, scoped, tensorValues, tidyValues } from '../../networks/tensor-io';
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

/**
 * A batch as the discriminator reads it: each image observation's values (count x its size),
 * each variable-length observation's (count x entities x entity size), and the rows (count x row
 * width: the vector observations side by side, then with use_actions the actions and the done flag).
 */
export interface DiscriminatorInput<T = Float32Array> {
  readonly images: readonly T[];
  /** Read by the attention as values (an input's gradient is traced, not differentiated). */
  readonly entities: readonly Float32Array[];
  readonly rows: T;
}

/** The random draws of one loss: fixed, the loss is a function of the parameters alone. */
export interface DiscriminatorDraws {
  /** In [0, 1), laid out as the input: each value's weight on the policy's side of x~. */
  readonly mixing: DiscriminatorInput;
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

/** VAIL's beta from a batch's KL divergence (a scalar no gradient flows through): the rule of its update, or a fixed value (tests). */
export type BetaRule = (kl: tf.Scalar) => tf.Scalar | number;

/** Upstream's step of VAIL's beta: max(beta + 0.0005 (KL - 0.5), 0). */
export function nextBeta(beta: number, kl: tf.Scalar): tf.Scalar {
  return tf.relu(tf.add(beta, tf.mul(BETA_STEP, tf.sub(kl, MUTUAL_INFORMATION)))) as tf.Scalar;
}

/** x forward, no gradient back (the KL divergence read by the beta rule). */
const stopGradient = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
  const x = args[0] as tf.Tensor;
  return { value: tf.clone(x), gradFunc: () => tf.zerosLike(x) };
}) as (x: tf.Scalar) => tf.Scalar;

/** D of a batch, the code's mean (VAIL), and d(sum of D)/d(first observation), all traced. */
interface Estimate {
  readonly estimate: tf.Tensor2D;
  readonly mean: tf.Tensor2D | null;
  readonly firstObservationGradient: () => tf.Tensor;
}

export interface GailOptions {
  /** The behavior's name, for errors. */
  readonly behavior: string;
  readonly logger?: Logger | null;
  /** Replaces the rows read from settings.demo_path (tests). */
  readonly demonstrations?: AgentBuffer;
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
  /** The discriminator's parameters: body (image encoders, then its layers), bottleneck (VAIL), estimator. */
  readonly parameters: Float32Array;
  readonly adam: Adam;
  /** The vector observations' normalizer (network_settings.normalize); null without, or without vector observations. */
  readonly normalizer: RunningNormalizer | null;
  /** The demonstrations' rows (obs:i, actions, done). */
  readonly demonstrations: AgentBuffer;
  /** VAIL's beta: no gradient moves it, the KL divergence does. */
  beta = INITIAL_BETA;
  /** Upstream's encoder: a NetworkBody over the observations, the actions and done its extra inputs. */
  readonly body: NetworkBody;
  /** The parameter blocks, in allocation order. */
  readonly blocks: readonly ParameterBlock[];
  private readonly bottleneck: Bottleneck | null;
  private readonly estimator: Dense;
  private readonly layout: BodyInputLayout;
  private readonly useActions: boolean;
  private readonly continuousSize: number;
  private readonly branches: readonly number[];
  /** Values in a row: vector observations, actions, done. */
  private readonly rowWidth: number;
  private readonly learningRate: number;
  private readonly random: SeededRandom;

  constructor(settings: GAILSettings, spec: BehaviorSpec, seed: number, options: GailOptions) {
    const { logger, demonstrations } = options;
    this.gamma = settings.gamma;
    this.strength = settings.strength;
    this.learningRate = settings.learning_rate;
    this.useActions = settings.use_actions;
    let network = settings.network_settings;
    if (network.memory !== null) {
      logger?.warning('memory was specified in network_settings but is not supported by GAIL. It is being ignored.');
      network = { ...network, memory: null };
    }
    this.layout = new BodyInputLayout(spec, network.hidden_units);
    this.continuousSize = spec.actionSpec.continuousSize;
    this.branches = spec.actionSpec.discreteBranches;
    // The actions flattened, then the done flag (upstream's ActionFlattener and its "+1 for dones").
    const actionWidth = this.useActions ? this.continuousSize + this.branches.reduce((a, b) => a + b, 0) + 1 : 0;
    this.rowWidth = this.layout.vectorWidth + actionWidth;

    const { allocate, blocks, size } = sequentialAllocator();
    this.blocks = blocks;
    this.body = new NetworkBody(allocate, 'gail.encoder', this.layout, network, actionWidth);
    this.bottleneck = settings.use_vail
      ? {
          mean: linearLayer(allocate, 'gail.z_mu', network.hidden_units, Z_SIZE, { kind: 'kaimingNormal', gain: 0.1 }),
          sigma: allocate('gail.z_sigma', [Z_SIZE]),
        }
      : null;
    this.estimator = linearLayer(allocate, 'gail.estimator', settings.use_vail ? Z_SIZE : network.hidden_units, 1, { kind: 'xavierUniform', gain: 0.2 });
    this.parameters = new Float32Array(size());
    this.random = new SeededRandom(seed);
    this.body.bodyEncoder.initialize(this.parameters, this.random);
    for (const encoder of this.body.encoders) encoder.initialize(this.parameters, this.random);
    if (this.bottleneck !== null) {
      this.bottleneck.mean.initialize(this.parameters, this.random);
      this.parameters.fill(1, this.bottleneck.sigma.offset, this.bottleneck.sigma.offset + Z_SIZE);
    }
    this.estimator.initialize(this.parameters, this.random);
    this.adam = new Adam(size());
    this.normalizer = network.normalize && this.layout.vectorWidth > 0 ? new RunningNormalizer(this.layout.vectorWidth) : null;
    this.demonstrations = demonstrations ?? loadDemonstrations(settings.demo_path, 1, { behavior: options.behavior, spec, setting: 'reward_signals.gail.demo_path' }).buffer;
  }

  /** -log(1 - D (1 - eps)) per row, D without VAIL's noise. */
  evaluate(batch: RewardBatch): Float32Array {
    if (batch.count === 0) return new Float32Array(0);
    const input = this.inputOf(batch);
    const estimates = tidyValues(() => tensorValues(this.estimate(this.traced(this.blockTensors()), this.inputTensors(input, batch.count), null).estimate));
    return Float32Array.from(estimates, (d) => -Math.log(1 - d * (1 - EPSILON)));
  }

  /** One Adam step on the policy's minibatch against as many demonstration rows drawn at random. */
  update(batch: RewardBatch): Record<string, number> {
    return runPass(this.updatePass(batch));
  }

  *updatePass(batch: RewardBatch): ReadingPass<Record<string, number>> {
    const count = batch.count;
    const expert = rewardBatchOf(this.demonstrations.sampleMiniBatch(count, 1, () => this.random.next()));
    // As upstream: the demonstrations feed the normalizer before the loss reads it.
    this.normalizer?.update(this.layout.vectorRows(expert.observations, count), count);
    const beta = this.beta;
    const result = yield* this.discriminatorLossPass(batch, expert, this.draw(count), (kl) => nextBeta(beta, kl));
    this.adam.apply(this.parameters, result.gradient, this.learningRate);
    this.beta = result.beta;
    return result.stats;
  }

  /** The random draws one loss on `count` rows takes. */
  draw(count: number): DiscriminatorDraws {
    const uniform = (length: number) => Float32Array.from({ length }, () => this.random.next());
    const mixing = {
      images: this.layout.visualObservations.map((k) => uniform(count * this.layout.observationSizes[k])),
      entities: this.layout.entityObservations.map(({ observation }) => uniform(count * this.layout.observationSizes[observation])),
      rows: uniform(count * this.rowWidth),
    };
    const normals = () => Float32Array.from({ length: count * Z_SIZE }, () => this.random.gaussian());
    return { mixing, noise: this.bottleneck === null ? null : { policy: normals(), expert: normals(), mixed: normals() } };
  }

  /**
   * The discriminator's loss on a policy and an expert batch of the same size, its gradient and
   * statistics; changes nothing. `betaFor` gives VAIL's beta from the batch's KL divergence.
   */
  discriminatorLoss(policy: RewardBatch, expert: RewardBatch, draws: DiscriminatorDraws, betaFor: BetaRule): DiscriminatorLoss {
    return runPass(this.discriminatorLossPass(policy, expert, draws, betaFor));
  }

  /** discriminatorLoss() as a reading pass: loss, statistics and gradient read back at once. */
  discriminatorLossPass(policy: RewardBatch, expert: RewardBatch, draws: DiscriminatorDraws, betaFor: BetaRule): ReadingPass<DiscriminatorLoss> {
    return scoped(this.lossPass(policy, expert, draws, betaFor));
  }

  private *lossPass(policy: RewardBatch, expert: RewardBatch, draws: DiscriminatorDraws, betaFor: BetaRule): ReadingPass<DiscriminatorLoss> {
    const count = policy.count;
    if (expert.count !== count) throw new Error(`GAIL's loss takes policy and expert batches of one size (got ${count} and ${expert.count}).`);
    const policyInput = this.inputOf(policy);
    const expertInput = this.inputOf(expert);
    const mix = (weights: Float32Array, policyValues: Float32Array, expertValues: Float32Array) =>
      Float32Array.from(weights, (w, i) => w * policyValues[i] + (1 - w) * expertValues[i]);
    const mixed: DiscriminatorInput = {
      images: draws.mixing.images.map((weights, e) => mix(weights, policyInput.images[e], expertInput.images[e])),
      entities: draws.mixing.entities.map((weights, e) => mix(weights, policyInput.entities[e], expertInput.entities[e])),
      rows: mix(draws.mixing.rows, policyInput.rows, expertInput.rows),
    };
    // One pass over the policy's, the expert's and the mixed inputs, one after another: a third
    // of the ops of three passes, and tfjs's cost here is per op.
    const inputs = this.inputTensors(stacked([policyInput, expertInput, mixed]), 3 * count);
    const noise = draws.noise === null ? null : tf.tensor2d(Float32Array.from([...draws.noise.policy, ...draws.noise.expert, ...draws.noise.mixed]), [3 * count, Z_SIZE]);
    const part = <T extends tf.Tensor>(tensor: T, k: number): T => tf.slice(tensor, k * count, count);
    // The statistics stay tensors until the one read below (kept: valueAndGrads frees the rest of its pass).
    const statTensors = new Map<string, tf.Scalar>();
    const stat = (tag: string, value: tf.Scalar) => statTensors.set(tag, tf.keep(value));
    const total = (...blockTensors: tf.Tensor[]): tf.Scalar => {
      const theta = this.traced(blockTensors);
      const all = this.estimate(theta, inputs, noise);
      const [policyEstimate, expertEstimate] = [part(all.estimate, 0), part(all.estimate, 1)];
      const discriminator = tf.neg(tf.mean(tf.add(tf.log(tf.add(expertEstimate, EPSILON)), tf.log(tf.add(tf.sub(1, policyEstimate), EPSILON))))) as tf.Scalar;
      stat(GAIL_TAGS.policyEstimate, tf.mean(policyEstimate));
      stat(GAIL_TAGS.expertEstimate, tf.mean(expertEstimate));
      stat(GAIL_TAGS.loss, discriminator);
      let sum = discriminator;
      if (all.mean !== null) {
        const kl = this.klDivergence(theta, part(all.mean, 0), part(all.mean, 1));
        const rule = betaFor(stopGradient(kl));
        const beta = typeof rule === 'number' ? tf.scalar(rule) : rule;
        stat(GAIL_TAGS.klLoss, kl);
        stat(GAIL_TAGS.beta, beta);
        sum = tf.add(sum, tf.mul(beta, tf.sub(kl, MUTUAL_INFORMATION)));
      }
      const penalty = tf.mul(GRADIENT_PENALTY_WEIGHT, this.gradientMagnitude(part(all.firstObservationGradient(), 2), mixed.rows, count)) as tf.Scalar;
      stat(GAIL_TAGS.gradientPenalty, penalty);
      return tf.add(sum, penalty);
    };
    const { value, grads } = tf.valueAndGrads(total)(this.blockTensors());
    const tags = [...statTensors.keys()];
    const values = yield tf.concat([value, ...statTensors.values(), ...grads].map((tensor) => tf.reshape(tensor, [-1])));
    tf.dispose([...statTensors.values()]);
    const stats: Record<string, number> = Object.fromEntries(tags.map((tag, i) => [tag, values[1 + i]]));
    const gradient = new Float32Array(this.parameters.length);
    let start = 1 + tags.length;
    grads.forEach((grad, b) => {
      gradient.set(values.subarray(start, start + grad.size), this.blocks[b].offset);
      start += grad.size;
    });
    return { loss: values[0], gradient, stats, beta: stats[GAIL_TAGS.beta] ?? this.beta };
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
   * D (count x 1) of an input, with VAIL the code's mean, and d(sum of D)/d(first observation) as
   * traced ops; `noise` null takes the mean itself as the code (evaluation). Call inside tf.tidy.
   */
  private estimate(theta: TracedParameters, input: DiscriminatorInput<tf.Tensor>, noise: tf.Tensor2D | null): Estimate {
    // The attention reads the variable-length observations by their index.
    const observations: Float32Array[] = this.layout.observationSizes.map(() => new Float32Array(0));
    this.layout.entityObservations.forEach(({ observation }, e) => (observations[observation] = input.entities[e]));
    const body = this.body.tracedPass(input.images as tf.Tensor4D[], this.normalized(input.rows as tf.Tensor2D), theta, observations);
    let code = body.output;
    let meanPass: TracedPass<tf.Tensor2D> | null = null;
    if (this.bottleneck !== null) {
      meanPass = this.bottleneck.mean.tracedPass(code, theta);
      code = noise === null ? meanPass.output : tf.add(meanPass.output, tf.mul(noise, this.sigma(theta)));
    }
    const estimator = this.estimator.tracedPass(code, theta);
    const estimate = tf.sigmoid(estimator.output);
    const firstObservationGradient = () => {
      // The noise is added: d code / d mean is 1.
      const byCode = estimator.inputGradient(tf.mul(estimate, tf.sub(1, estimate)));
      return body.observationGradient(meanPass === null ? byCode : meanPass.inputGradient(byCode), 0);
    };
    return { estimate, mean: meanPass?.output ?? null, firstObservationGradient };
  }

  /** mean over rows of -sum(1 + log sigma^2 - mu_e^2 / 2 - mu_p^2 / 2 - sigma^2), as upstream writes it. */
  private klDivergence(theta: TracedParameters, policyMean: tf.Tensor2D, expertMean: tf.Tensor2D): tf.Scalar {
    const variance = tf.square(this.sigma(theta));
    const terms = tf.sub(tf.sub(tf.add(1, tf.log(variance)), tf.add(tf.mul(0.5, tf.square(expertMean)), tf.mul(0.5, tf.square(policyMean)))), variance);
    return tf.mean(tf.neg(tf.sum(terms, 1)));
  }

  /**
   * mean((sqrt(sum of squares of dD/d obs 0 over its second axis + eps) - 1)^2), as upstream's
   * torch.sum(gradient ** 2, dim=1): over a vector's features, an image's channels or a
   * variable-length observation's entities (the mean then over rows and pixels or entity values).
   * `gradient` is d(sum of D)/d(obs 0) at the mixed inputs (traced), `mixedRows` those inputs' rows.
   */
  private gradientMagnitude(gradient: tf.Tensor, mixedRows: Float32Array, count: number): tf.Scalar {
    const image = this.layout.visualObservations.indexOf(0);
    let squares: tf.Tensor;
    if (image >= 0) {
      squares = tf.sum(tf.square(gradient), this.body.encoders[image].layout.channelFirst ? 1 : 3);
    } else if (!this.layout.isVector(0)) {
      squares = tf.sum(tf.square(gradient), 1);
    } else {
      const first = this.layout.observationSizes[0];
      const slope = this.normalizer === null ? gradient : tf.mul(gradient, tf.tensor2d(this.normalizationSlopes(mixedRows, count, first), [count, first]));
      squares = tf.sum(tf.square(slope), 1);
    }
    return tf.mean(tf.square(tf.sub(tf.sqrt(tf.add(squares, EPSILON)), 1)));
  }

  /** d normalized / d raw of the first `columns` row values: 1 / std inside the clip, 0 where it clips (as torch.clamp). */
  private normalizationSlopes(rows: Float32Array, count: number, columns: number): Float32Array {
    const normalizer = this.normalizer!;
    const slopes = new Float32Array(count * columns);
    for (let f = 0; f < columns; f++) {
      const std = Math.sqrt(normalizer.variance[f] / normalizer.steps);
      for (let i = 0; i < count; i++) {
        const scaled = (rows[i * this.rowWidth + f] - normalizer.mean[f]) / std;
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
    return width < this.rowWidth ? tf.concat([clipped, tf.slice(rows, [0, width], [-1, -1])], 1) : clipped;
  }

  /** An input of `count` rows as tensors: each image [count, ...its shape], the rows count x row width (the entities stay values). */
  private inputTensors(input: DiscriminatorInput, count: number): DiscriminatorInput<tf.Tensor> {
    const { spec, visualObservations } = this.layout;
    return {
      images: visualObservations.map((k, e) => tf.tensor(input.images[e], [count, ...spec.observationSpecs[k].shape])),
      entities: input.entities,
      rows: tf.tensor2d(input.rows, [count, this.rowWidth]),
    };
  }

  /** A batch's images and rows. */
  private inputOf(batch: RewardBatch): DiscriminatorInput {
    return {
      images: this.layout.visualObservations.map((k) => batch.observations[k]),
      entities: this.layout.entityObservations.map(({ observation }) => batch.observations[observation]),
      rows: this.inputRows(batch),
    };
  }

  /** The discriminator's rows (count x row width): vector observations, then with use_actions the actions and done. */
  private inputRows(batch: RewardBatch): Float32Array {
    const count = batch.count;
    const vectorWidth = this.layout.vectorWidth;
    const observations = this.layout.vectorRows(batch.observations, count);
    if (!this.useActions) return observations;
    const width = this.rowWidth;
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

/** Inputs of one size one after another, as one input. */
function stacked(inputs: readonly DiscriminatorInput[]): DiscriminatorInput {
  const join = (parts: readonly Float32Array[]) => {
    const joined = new Float32Array(parts.reduce((total, part) => total + part.length, 0));
    let offset = 0;
    for (const part of parts) {
      joined.set(part, offset);
      offset += part.length;
    }
    return joined;
  };
  return {
    images: inputs[0].images.map((_, e) => join(inputs.map((input) => input.images[e]))),
    entities: inputs[0].entities.map((_, e) => join(inputs.map((input) => input.entities[e]))),
    rows: join(inputs.map((input) => input.rows)),
  };
}
