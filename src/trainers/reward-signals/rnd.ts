/**
 * Random Network Distillation (upstream's RNDRewardProvider and RNDNetwork): a network body with
 * fixed random weights (the target) and one of the same architecture trained to reproduce its
 * encoding (the predictor), both over the current observations. The reward of an experience is
 * the squared prediction error summed over the encoding's features: it falls on what the agent
 * has seen often. The loss is that error's mean over the batch; the predictor alone trains, by
 * Adam at the signal's learning_rate, its gradient derived by hand through the body.
 *
 * With network_settings.normalize, vector observations are normalized by running statistics
 * that every forward pass (evaluate and update alike) feeds afterwards, as upstream's encoders
 * do; both of upstream's networks see the same data, so one normalizer serves both here.
 */
import * as tf from '@tensorflow/tfjs';
import type { NetworkSettings, RNDSettings } from '../../config/settings';
import type { BehaviorSpec } from '../../env/behavior-spec';
import type { Logger } from '../../common/logger';
import { SeededRandom } from '../../common/random';
import { Adam } from '../../networks/adam';
import { CheckpointArray, requireCheckpointArray } from '../../networks/checkpoint-file';
import { BodyInputLayout } from '../../networks/encoders/body-input';
import { ParameterSource, sequentialAllocator } from '../../networks/layers/layer';
import { NetworkBody } from '../../networks/network-body';
import { RunningNormalizer } from '../../networks/normalizer';
import { ReadingPass, gradientsSettled, runPass, scoped } from '../../networks/tensor-io';
import type { RewardBatch, RewardProvider } from './reward-provider';

/** Upstream's stat tag for the predictor's loss. */
export const RND_LOSS_TAG = 'Losses/RND Loss';

/** One network body with a parameter vector of its own. */
class RndNetwork {
  readonly body: NetworkBody;
  readonly parameters: Float32Array;
  readonly gradient: Float32Array;
  private version = 0;

  constructor(name: string, layout: BodyInputLayout, network: NetworkSettings, random: SeededRandom) {
    const { allocate, size } = sequentialAllocator();
    this.body = new NetworkBody(allocate, name, layout, network);
    this.parameters = new Float32Array(size());
    this.gradient = new Float32Array(size());
    this.body.bodyEncoder.initialize(this.parameters, random);
    this.body.initializeEncoders(this.parameters, random);
  }

  get source(): ParameterSource {
    return { parameters: this.parameters, gradient: this.gradient, version: this.version };
  }

  parametersChanged(): void {
    this.version++;
  }

  /** The encoding, feature-major (hidden x count), a reading pass run in one scope. With `keep`, backward() may follow. */
  forward(observations: readonly Float32Array[], vectorRows: Float32Array, count: number, keep: boolean): ReadingPass<tf.Tensor2D> {
    return this.body.forwardColumns(observations, vectorRows, count, this.source, keep);
  }

  /** forward()'s backward from d loss / d encoding (hidden x count); fills `gradient`. */
  backward(encodingGradient: tf.Tensor2D): void {
    this.body.backwardColumns(encodingGradient, this.source);
  }
}

export class RndRewardProvider implements RewardProvider {
  readonly name = 'RND';
  readonly gamma: number;
  readonly strength: number;
  readonly ignoreDone = true;
  readonly trains = true;
  readonly target: RndNetwork;
  readonly predictor: RndNetwork;
  readonly adam: Adam;
  readonly normalizer: RunningNormalizer | null;
  private readonly layout: BodyInputLayout;
  private readonly learningRate: number;

  constructor(settings: RNDSettings, spec: BehaviorSpec, seed: number, logger?: Logger | null) {
    this.gamma = settings.gamma;
    this.strength = settings.strength;
    this.learningRate = settings.learning_rate;
    let network = settings.network_settings;
    if (network.memory !== null) {
      logger?.warning('memory was specified in network_settings but is not supported by RND. It is being ignored.');
      network = { ...network, memory: null };
    }
    this.layout = new BodyInputLayout(spec, network.hidden_units);
    const random = new SeededRandom(seed);
    this.target = new RndNetwork('rnd.target', this.layout, network, random);
    this.predictor = new RndNetwork('rnd.predictor', this.layout, network, random);
    this.adam = new Adam(this.predictor.parameters.length);
    this.normalizer = network.normalize ? new RunningNormalizer(this.layout.vectorWidth) : null;
  }

  evaluate(batch: RewardBatch): Float32Array {
    const { rewards } = runPass(scoped(this.squaredErrors(batch, false)));
    this.updateNormalization(batch);
    return rewards;
  }

  update(batch: RewardBatch): Record<string, number> {
    return runPass(this.updatePass(batch));
  }

  *updatePass(batch: RewardBatch): ReadingPass<Record<string, number>> {
    const { loss, gradient } = yield* this.lossAndGradientPass(batch);
    this.adam.apply(this.predictor.parameters, gradient, this.learningRate);
    this.predictor.parametersChanged();
    this.updateNormalization(batch);
    return { [RND_LOSS_TAG]: loss };
  }

  /** The loss on a batch and its gradient with respect to the predictor's parameters; changes nothing. */
  lossAndGradient(batch: RewardBatch): { loss: number; gradient: Float32Array } {
    return runPass(this.lossAndGradientPass(batch));
  }

  /** lossAndGradient() as a reading pass. */
  lossAndGradientPass(batch: RewardBatch): ReadingPass<{ loss: number; gradient: Float32Array }> {
    return scoped(this.predictorGradient(batch));
  }

  private *predictorGradient(batch: RewardBatch): ReadingPass<{ loss: number; gradient: Float32Array }> {
    const { rewards, difference } = yield* this.squaredErrors(batch, true);
    let loss = 0;
    for (const r of rewards) loss += r;
    loss /= batch.count;
    // d mean_i sum_f (p - t)^2 / d p = 2 (p - t) / count, feature-major like the encoding.
    this.predictor.backward(tf.mul(difference, 2 / batch.count));
    yield* gradientsSettled();
    return { loss, gradient: this.predictor.gradient };
  }

  stateArrays(): Map<string, CheckpointArray> {
    return new Map<string, CheckpointArray>([
      ['target.parameters', this.target.parameters],
      ['predictor.parameters', this.predictor.parameters],
      ...this.adam.stateArraysWithStep('adam'),
      ...(this.normalizer?.stateArrays() ?? []),
    ]);
  }

  loadStateArrays(arrays: ReadonlyMap<string, CheckpointArray>): void {
    this.target.parameters.set(requireCheckpointArray(arrays, 'target.parameters', this.target.parameters.length));
    this.target.parametersChanged();
    this.predictor.parameters.set(requireCheckpointArray(arrays, 'predictor.parameters', this.predictor.parameters.length));
    this.predictor.parametersChanged();
    this.adam.loadStateArraysWithStep('adam', arrays);
    this.normalizer?.loadStateArrays(arrays);
  }

  /**
   * Per row, sum over features of (prediction - target)^2, and prediction - target itself
   * (feature-major, hidden x count), read back once. Run in one scope; `keep` readies the predictor's backward.
   */
  private *squaredErrors(batch: RewardBatch, keep: boolean): ReadingPass<{ rewards: Float32Array; difference: tf.Tensor2D }> {
    const count = batch.count;
    const vectorRows = this.layout.vectorRows(batch.observations, count);
    this.normalizer?.normalizeRows(vectorRows, count);
    const target = yield* this.target.forward(batch.observations, vectorRows, count, false);
    const prediction = yield* this.predictor.forward(batch.observations, vectorRows, count, keep);
    const difference = tf.sub<tf.Tensor2D>(prediction, target);
    const values = yield difference;
    const rewards = new Float32Array(count);
    for (let f = 0; f < this.predictor.body.outputSize; f++) {
      for (let i = 0; i < count; i++) rewards[i] += values[f * count + i] * values[f * count + i];
    }
    return { rewards, difference };
  }

  private updateNormalization(batch: RewardBatch): void {
    if (this.normalizer === null || batch.count === 0) return;
    this.normalizer.update(this.layout.vectorRows(batch.observations, batch.count), batch.count);
  }
}
