/**
 * Curiosity (upstream's CuriosityRewardProvider and CuriosityNetwork: the intrinsic curiosity
 * module of Pathak et al., 2017). A state encoder (a network body over the observations, with the
 * signal's network_settings) encodes the state before and after each action, s and s'. Two models
 * read the encodings:
 *  - the inverse model predicts the action from [s; s'] (a LinearEncoder of 256 units, then the
 *    continuous actions' values and each discrete branch's logits);
 *  - the forward model predicts s' from [s; a] (a LinearEncoder of 256 units, then a linear layer
 *    back to the encoding's width), the action flattened as upstream's ActionFlattener does:
 *    continuous values, then each discrete branch one-hot.
 * The reward of an experience is the forward model's error, 0.5 sum (s' - prediction)^2, capped at
 * 1 / strength, and 0 until the first update (Adam's step count tells: a network restored by
 * --resume rewards at once, where upstream, which does not save that flag, waits for an update).
 * Training minimizes
 *   10 (0.2 forward_loss + 0.8 inverse_loss)
 * with forward_loss the uncapped error's mean and inverse_loss the mean over experiences of the squared
 * error summed over continuous actions plus the cross-entropy summed over discrete branches; both
 * means skip the padding of recurrent sequences (mask 0), as upstream. The encoder learns through
 * both models, s' included as the forward model's target, as upstream's. One parameter vector,
 * one Adam at the signal's learning_rate; the gradient is derived by hand (see lossAndGradient).
 *
 * With network_settings.normalize, vector observations go through a normalizer that upstream's
 * curiosity never updates: its initial statistics (mean 0, variance 1) clip them to [-5, 5].
 */
import * as tf from '@tensorflow/tfjs';
import type { CuriositySettings } from '../../config/settings';
import type { ActionSpec, BehaviorSpec } from '../../env/behavior-spec';
import type { Logger } from '../../common/logger';
import { SeededRandom } from '../../common/random';
import { STAT_KEYS } from '../../stats/stats-reporter';
import { Adam } from '../../networks/adam';
import { CheckpointArray, requireCheckpointArray } from '../../networks/checkpoint-file';
import { BodyInputLayout } from '../../networks/encoders/body-input';
import { Dense, DenseOutputPart, linearLayer } from '../../networks/layers/dense';
import { ParameterBlock, ParameterSource, sequentialAllocator } from '../../networks/layers/layer';
import { LinearEncoder } from '../../networks/layers/linear-encoder';
import { NetworkBody } from '../../networks/network-body';
import { RunningNormalizer } from '../../networks/normalizer';
import { ReadingPass, gradientsSettled, runPass, scoped } from '../../networks/tensor-io';
import type { RewardBatch, RewardProvider } from './reward-provider';

/** Upstream's beta: the forward loss's share of the loss, the inverse loss taking the rest. */
export const FORWARD_LOSS_WEIGHT = 0.2;
/** Upstream's loss_multiplier. */
export const LOSS_MULTIPLIER = 10;
/** Added to each predicted probability before its log, as upstream. */
const EPSILON = 1e-10;
/** The inverse and forward models' hidden units (fixed upstream). */
const MODEL_UNITS = 256;

/** The two losses of one batch and the gradient of their weighted sum. */
export interface CuriosityLosses {
  readonly forwardLoss: number;
  readonly inverseLoss: number;
  /** 10 (0.2 forwardLoss + 0.8 inverseLoss): what training minimizes. */
  readonly loss: number;
  readonly gradient: Float32Array;
}

export class CuriosityRewardProvider implements RewardProvider {
  readonly name = 'Curiosity';
  readonly gamma: number;
  readonly strength: number;
  readonly ignoreDone = true;
  readonly trains = true;
  readonly readsNextObservations = true;
  /** Every weight of the four parts below, in one vector of these blocks. */
  readonly parameters: Float32Array;
  readonly blocks: readonly ParameterBlock[];
  readonly gradient: Float32Array;
  readonly adam: Adam;
  readonly stateEncoder: NetworkBody;
  readonly inverseModel: LinearEncoder;
  /** The continuous actions' values, then every branch's logits, side by side. */
  readonly actionPrediction: Dense;
  readonly forwardModel: LinearEncoder;
  readonly nextStatePrediction: Dense;
  private readonly layout: BodyInputLayout;
  /** Never fed, as upstream's: it only clips (see above). */
  private readonly inputNormalizer: RunningNormalizer | null;
  private readonly actions: ActionSpec;
  /** Values in a flattened action: continuous values, then one one-hot per branch. */
  private readonly flatActionSize: number;
  private readonly learningRate: number;
  private version = 0;

  constructor(settings: CuriositySettings, spec: BehaviorSpec, seed: number, logger?: Logger | null) {
    this.gamma = settings.gamma;
    this.strength = settings.strength;
    this.learningRate = settings.learning_rate;
    this.actions = spec.actionSpec;
    let network = settings.network_settings;
    if (network.memory !== null) {
      logger?.warning('memory was specified in network_settings but is not supported by Curiosity. It is being ignored.');
      network = { ...network, memory: null };
    }
    const hidden = network.hidden_units;
    const { continuousSize, discreteBranches } = this.actions;
    const branchTotal = discreteBranches.reduce((a, b) => a + b, 0);
    this.flatActionSize = continuousSize + branchTotal;

    const { allocate, blocks, size } = sequentialAllocator();
    this.blocks = blocks;
    this.layout = new BodyInputLayout(spec, hidden);
    this.stateEncoder = new NetworkBody(allocate, 'curiosity.state_encoder', this.layout, network);
    this.inverseModel = new LinearEncoder(allocate, 'curiosity.inverse_model', 2 * hidden, MODEL_UNITS, 1);
    const xavier = { kind: 'xavierUniform', gain: 1 } as const;
    const predictionParts: DenseOutputPart[] = [
      ...(continuousSize > 0 ? [{ name: 'curiosity.continuous_action_prediction', size: continuousSize, init: xavier }] : []),
      ...(branchTotal > 0 ? [{ name: 'curiosity.discrete_action_prediction', size: branchTotal, init: xavier }] : []),
    ];
    this.actionPrediction = new Dense(allocate, MODEL_UNITS, predictionParts);
    this.forwardModel = new LinearEncoder(allocate, 'curiosity.forward_model', hidden + this.flatActionSize, MODEL_UNITS, 1);
    this.nextStatePrediction = linearLayer(allocate, 'curiosity.next_state_prediction', MODEL_UNITS, hidden, xavier);
    this.parameters = new Float32Array(size());
    this.gradient = new Float32Array(size());
    const random = new SeededRandom(seed);
    this.stateEncoder.bodyEncoder.initialize(this.parameters, random);
    this.stateEncoder.initializeEncoders(this.parameters, random);
    for (const part of [this.inverseModel, this.actionPrediction, this.forwardModel, this.nextStatePrediction]) part.initialize(this.parameters, random);
    this.adam = new Adam(this.parameters.length);
    this.inputNormalizer = network.normalize ? new RunningNormalizer(this.layout.vectorWidth) : null;
  }

  /** The forward model's error on each experience, capped at 1 / strength; all 0 before the first update, as upstream. */
  evaluate(batch: RewardBatch): Float32Array {
    const rewards = new Float32Array(batch.count);
    if (this.adam.step === 0 || batch.count === 0) return rewards;
    const { states, predicted } = runPass(scoped(this.predictionPass(batch)));
    const hidden = this.stateEncoder.outputSize;
    const count = batch.count;
    for (let f = 0; f < hidden; f++) {
      for (let i = 0; i < count; i++) {
        const d = states[f * 2 * count + count + i] - predicted[f * count + i];
        rewards[i] += 0.5 * d * d;
      }
    }
    const cap = 1 / this.strength;
    for (let i = 0; i < rewards.length; i++) rewards[i] = Math.min(rewards[i], cap);
    return rewards;
  }

  update(batch: RewardBatch): Record<string, number> {
    return runPass(this.updatePass(batch));
  }

  *updatePass(batch: RewardBatch): ReadingPass<Record<string, number>> {
    const { forwardLoss, inverseLoss, gradient } = yield* this.lossAndGradientPass(batch);
    this.adam.apply(this.parameters, gradient, this.learningRate);
    this.version++;
    return { [STAT_KEYS.curiosityForwardLoss]: forwardLoss, [STAT_KEYS.curiosityInverseLoss]: inverseLoss };
  }

  /**
   * The losses on a batch and the gradient of the weighted loss with respect to every parameter;
   * changes nothing. By hand, as the layers' own backward passes chain: the loss's gradient with
   * respect to the forward model's prediction and to the predicted actions (squared errors;
   * softmax cross-entropy with upstream's epsilon inside the log), back through each model to its
   * input, whose encoding parts sum into d loss / d [s, s'], which runs back through the encoder.
   */
  lossAndGradient(batch: RewardBatch): CuriosityLosses {
    return runPass(this.lossAndGradientPass(batch));
  }

  /** lossAndGradient() as a reading pass. */
  lossAndGradientPass(batch: RewardBatch): ReadingPass<CuriosityLosses> {
    return scoped(this.gradientPass(batch));
  }

  private *gradientPass(batch: RewardBatch): ReadingPass<CuriosityLosses> {
    const count = batch.count;
    const hidden = this.stateEncoder.outputSize;
    const masks = batch.masks ?? new Float32Array(count).fill(1);
    // Means over the experiences, padding left out; a batch of padding alone gives 0 (upstream: NaN).
    const perExperience = 1 / Math.max(masks.reduce((a, b) => a + b, 0), 1);
    const source = this.source;
    // Forward model: 0.5 sum (s' - p)^2 per experience.
    const { states, predicted } = yield* this.predictionPass(batch, true);
    // d loss / d p, and the target's share of d loss / d s' (both hidden x count).
    const predictedGradient = new Float32Array(hidden * count);
    const targetGradient = new Float32Array(hidden * count);
    const forwardWeight = LOSS_MULTIPLIER * FORWARD_LOSS_WEIGHT;
    let forwardLoss = 0;
    for (let f = 0; f < hidden; f++) {
      for (let i = 0; i < count; i++) {
        const d = states[f * 2 * count + count + i] - predicted[f * count + i];
        const m = masks[i] * perExperience;
        forwardLoss += 0.5 * d * d * m;
        predictedGradient[f * count + i] = -forwardWeight * m * d;
        targetGradient[f * count + i] = forwardWeight * m * d;
      }
    }

    // Inverse model: squared error of the continuous actions, cross-entropy of each branch.
    const outputs = yield* this.predictActions(states, count, true);
    const outputsGradient = new Float32Array(outputs.length);
    const inverseLoss =
      this.continuousActionLoss(batch, outputs, outputsGradient, masks, perExperience) +
      this.discreteActionLoss(batch, outputs, outputsGradient, masks, perExperience);

    const forwardInput = this.forwardModel.backwardColumns(this.nextStatePrediction.backwardOutputColumns(predictedGradient, source, true)!, source, true)!;
    const inverseInput = this.inverseModel.backwardColumns(this.actionPrediction.backwardOutputColumns(outputsGradient, source, true)!, source, true)!;
    // The forward model's input is [s; a], the inverse model's [s; s']: their s rows and s' rows
    // sum into d loss / d states, feature-major as the states (s in the first count columns).
    const rowsOf = (gradient: tf.Tensor2D, first: number) => tf.slice(gradient, [first, 0], [hidden, count]);
    const byState = tf.add<tf.Tensor2D>(rowsOf(forwardInput, 0), rowsOf(inverseInput, 0));
    const byNextState = tf.add<tf.Tensor2D>(rowsOf(inverseInput, hidden), tf.tensor2d(targetGradient, [hidden, count]));
    this.stateEncoder.backwardColumns(tf.concat([byState, byNextState], 1), source);
    yield* gradientsSettled();
    const loss = LOSS_MULTIPLIER * (FORWARD_LOSS_WEIGHT * forwardLoss + (1 - FORWARD_LOSS_WEIGHT) * inverseLoss);
    return { forwardLoss, inverseLoss, loss, gradient: this.gradient };
  }

  stateArrays(): Map<string, CheckpointArray> {
    return new Map<string, CheckpointArray>([
      ['parameters', this.parameters],
      ...this.adam.stateArraysWithStep('adam'),
    ]);
  }

  loadStateArrays(arrays: ReadonlyMap<string, CheckpointArray>): void {
    this.parameters.set(requireCheckpointArray(arrays, 'parameters', this.parameters.length));
    this.adam.loadStateArraysWithStep('adam', arrays);
    this.version++;
  }

  private get source(): ParameterSource {
    return { parameters: this.parameters, gradient: this.gradient, version: this.version };
  }

  /**
   * The encodings of s and s' (states) and the forward model's prediction of s' (hidden x count),
   * read back; run in one scope, `keep` readying the backward passes.
   */
  private *predictionPass(batch: RewardBatch, keep = false): ReadingPass<{ states: Float32Array; predicted: Float32Array }> {
    const states = yield* this.encodeStates(batch, keep);
    return { states, predicted: yield* this.predictNextState(states, batch, keep) };
  }

  /**
   * The encodings of the states before and after each action, from one pass of the encoder over
   * both: hidden x 2 count, feature-major, s in the first count columns and s' in the others.
   * Run in one scope; `keep` readies the encoder's backward.
   */
  private *encodeStates(batch: RewardBatch, keep: boolean): ReadingPass<Float32Array> {
    const { count, nextObservations } = batch;
    if (nextObservations === undefined || nextObservations.length !== batch.observations.length) {
      throw new Error('The curiosity reward signal needs each experience\'s next observations (next_obs:i), and this batch has none.');
    }
    const both = 2 * count;
    const observations = batch.observations.map((current, k) => {
      const joined = new Float32Array(current.length + nextObservations[k].length);
      joined.set(current);
      joined.set(nextObservations[k], current.length);
      return joined;
    });
    const vectorRows = this.layout.vectorRows(observations, both);
    this.inputNormalizer?.normalizeRows(vectorRows, both);
    return yield yield* this.stateEncoder.forwardColumns(observations, vectorRows, both, this.source, keep);
  }

  /** The forward model's prediction of s' (hidden x count) from s (in `states`) and the flattened actions. */
  private predictNextState(states: Float32Array, batch: RewardBatch, keep: boolean): ReadingPass<Float32Array> {
    const count = batch.count;
    const hidden = this.stateEncoder.outputSize;
    const input = new Float32Array((hidden + this.flatActionSize) * count);
    for (let f = 0; f < hidden; f++) input.set(states.subarray(f * 2 * count, f * 2 * count + count), f * count);
    this.flattenActions(batch, input, hidden * count);
    const features = this.forwardModel.forwardColumns(tf.tensor2d(input, [hidden + this.flatActionSize, count]), this.source, keep);
    return this.nextStatePrediction.forwardOutputColumns(features, this.source, keep);
  }

  /** The inverse model's outputs (continuous values, then branch logits; each count wide) from [s; s']. */
  private predictActions(states: Float32Array, count: number, keep: boolean): ReadingPass<Float32Array> {
    const hidden = this.stateEncoder.outputSize;
    const input = new Float32Array(2 * hidden * count);
    for (let f = 0; f < hidden; f++) {
      input.set(states.subarray(f * 2 * count, f * 2 * count + count), f * count);
      input.set(states.subarray(f * 2 * count + count, (f + 1) * 2 * count), (hidden + f) * count);
    }
    const features = this.inverseModel.forwardColumns(tf.tensor2d(input, [2 * hidden, count]), this.source, keep);
    return this.actionPrediction.forwardOutputColumns(features, this.source, keep);
  }

  /** Upstream's ActionFlattener, feature-major into `target` from `offset`: continuous values, then each branch one-hot. */
  private flattenActions(batch: RewardBatch, target: Float32Array, offset: number): void {
    const count = batch.count;
    const { continuousSize, discreteBranches } = this.actions;
    const continuous = actionRows(batch.continuousActions, count, continuousSize, 'continuous');
    for (let c = 0; c < continuousSize; c++) {
      for (let i = 0; i < count; i++) target[offset + c * count + i] = continuous[i * continuousSize + c];
    }
    const discrete = actionRows(batch.discreteActions, count, discreteBranches.length, 'discrete');
    let row = continuousSize;
    discreteBranches.forEach((size, b) => {
      for (let i = 0; i < count; i++) target[offset + (row + discrete[i * discreteBranches.length + b]) * count + i] = 1;
      row += size;
    });
  }

  /**
   * The continuous part of the inverse loss, mean over experiences of sum (prediction - action)^2;
   * adds its weighted gradient to `outputsGradient` (rows of `outputs` are the predictions).
   */
  private continuousActionLoss(batch: RewardBatch, outputs: Float32Array, outputsGradient: Float32Array, masks: Float32Array, perExperience: number): number {
    const count = batch.count;
    const size = this.actions.continuousSize;
    const actions = actionRows(batch.continuousActions, count, size, 'continuous');
    const weight = LOSS_MULTIPLIER * (1 - FORWARD_LOSS_WEIGHT);
    let loss = 0;
    for (let c = 0; c < size; c++) {
      for (let i = 0; i < count; i++) {
        const e = outputs[c * count + i] - actions[i * size + c];
        const m = masks[i] * perExperience;
        loss += e * e * m;
        outputsGradient[c * count + i] = 2 * weight * m * e;
      }
    }
    return loss;
  }

  /**
   * The discrete part of the inverse loss: per experience, the sum over branches of
   * -log(softmax(logits)[action] + epsilon), its mean over experiences. With p the branch's
   * probabilities and t the action, d/d logit_j = p_t (p_j - [j = t]) / (p_t + epsilon).
   */
  private discreteActionLoss(batch: RewardBatch, outputs: Float32Array, outputsGradient: Float32Array, masks: Float32Array, perExperience: number): number {
    const count = batch.count;
    const branches = this.actions.discreteBranches;
    const actions = actionRows(batch.discreteActions, count, branches.length, 'discrete');
    const weight = LOSS_MULTIPLIER * (1 - FORWARD_LOSS_WEIGHT);
    let loss = 0;
    let first = this.actions.continuousSize;
    branches.forEach((size, b) => {
      const probabilities = new Float64Array(size);
      for (let i = 0; i < count; i++) {
        let max = -Infinity;
        for (let j = 0; j < size; j++) max = Math.max(max, outputs[(first + j) * count + i]);
        let total = 0;
        for (let j = 0; j < size; j++) total += probabilities[j] = Math.exp(outputs[(first + j) * count + i] - max);
        for (let j = 0; j < size; j++) probabilities[j] /= total;
        const taken = actions[i * branches.length + b];
        const p = probabilities[taken];
        const m = masks[i] * perExperience;
        loss -= Math.log(p + EPSILON) * m;
        for (let j = 0; j < size; j++) {
          outputsGradient[(first + j) * count + i] = (weight * m * p * (probabilities[j] - (j === taken ? 1 : 0))) / (p + EPSILON);
        }
      }
      first += size;
    });
    return loss;
  }
}

/** A batch's actions of one kind (count x width), checked; empty when the behavior has none. */
function actionRows(values: Float32Array | Int32Array | undefined, count: number, width: number, kind: string): Float32Array | Int32Array {
  if (width === 0) return new Float32Array(0);
  if (values === undefined || values.length !== count * width) {
    throw new Error(`The curiosity reward signal needs the ${kind} actions of each experience (${count} x ${width} values), got ${values?.length ?? 'none'}.`);
  }
  return values;
}
