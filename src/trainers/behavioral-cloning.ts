/**
 * Behavioral cloning (upstream's BCModule, torch_entities/components/bc/module.py): after each of
 * the trainer's updates, the actor learns to act as the demonstrations did, by an Adam of its own
 * whose learning rate starts at the trainer's learning_rate x strength and, when `steps` is above
 * 0, falls in a straight line to 1e-10 at step `steps` (then cloning stops). Each update runs
 * num_epoch passes of shuffled minibatches of batch_size demonstration rows, at most
 * samples_per_update rows a pass (0: all of them). Per minibatch, as upstream writes the loss:
 *
 *   continuous   mean over rows and actions of (a~ - a)^2, a~ the actor's own sample
 *                (mu + sigma eps, squashed by tanh for SAC's actor), a the demonstrated action
 *   discrete     mean over rows and branches of -log softmax(log(p + eps))[a]
 *   hybrid       the sum of both
 *
 * The gradient is written out here and runs through the actor by ActorCritic.computeGradient
 * (the critic gets none, so this Adam leaves it as it is).
 */
import type { BehavioralCloningSettings } from '../config/settings';
import { SeededRandom } from '../common/random';
import type { ActorCritic, HeadGradients, HeadOutputs, SequenceMemories } from '../networks/actor-critic';
import { Adam } from '../networks/adam';
import { DeviceParameters, adamStep } from '../networks/device-parameters';
import { CheckpointArray, requireCheckpointArray } from '../networks/checkpoint-file';
import { EPSILON, addCategoricalGradient, maskedSoftmax } from '../networks/distributions';
import { decayedValue } from '../networks/schedule';
import { ReadingPass, passReadingNothing, runPass, scoped } from '../networks/tensor-io';
import { LOG_SIGMA_MAX, LOG_SIGMA_MIN, clampLogSigma } from '../networks/squashed-gaussian';
import { AgentBuffer, BufferKey, observationKey } from './buffer';
import { loadDemonstrations } from './demonstrations';

/** Where a trainer checkpoint keeps this module's arrays. */
const BC_PREFIX = 'behavioral_cloning.';

/** Upstream's stat tag. */
export const PRETRAINING_LOSS_TAG = 'Losses/Pretraining Loss';
/** The learning rate's floor; cloning stops once the rate reaches it. */
export const MIN_LEARNING_RATE = 1e-10;
/** num_epoch when the settings leave it unset (upstream's default_num_epoch). */
export const DEFAULT_NUM_EPOCH = 3;

export interface BehavioralCloningOptions {
  /** The behavior's name, for errors. */
  readonly behavior: string;
  /** The trainer's hyperparameters.learning_rate. */
  readonly learningRate: number;
  /** The trainer's hyperparameters.batch_size: batch_size when the settings leave it unset. */
  readonly batchSize: number;
  /** Seeds the shuffles and the actor's samples. */
  readonly seed: number;
  /** The demonstration rows, replacing those read from settings.demo_path (tests). */
  readonly demonstrations?: AgentBuffer;
}

/** One minibatch of demonstrations as the loss reads it. */
export interface DemonstrationBatch {
  readonly count: number;
  readonly observations: readonly Float32Array[];
  /** count x continuous size */
  readonly continuousActions: Float32Array;
  /** count x branches */
  readonly discreteActions: Float32Array;
}

export class BehavioralCloning {
  readonly adam: Adam;
  readonly demonstrations: AgentBuffer;
  readonly batchSize: number;
  readonly numEpoch: number;
  /** The rate of the next update's steps (upstream's current_lr). */
  learningRate: number;
  private readonly initialLearningRate: number;
  private readonly annealSteps: number;
  private readonly samplesPerUpdate: number;
  private readonly sequenceLength: number;
  /** Sequences per minibatch (upstream's n_sequences). */
  private readonly sequences: number;
  private readonly random: SeededRandom;

  constructor(
    readonly model: ActorCritic,
    settings: BehavioralCloningSettings,
    options: BehavioralCloningOptions,
  ) {
    this.sequenceLength = model.options.network.memory?.sequence_length ?? 1;
    this.demonstrations =
      options.demonstrations ??
      loadDemonstrations(settings.demo_path, this.sequenceLength, { behavior: options.behavior, spec: model.behaviorSpec, setting: 'behavioral_cloning.demo_path' }).buffer;
    this.initialLearningRate = options.learningRate * settings.strength;
    this.learningRate = this.initialLearningRate;
    this.annealSteps = settings.steps;
    this.batchSize = settings.batch_size ?? options.batchSize;
    this.numEpoch = settings.num_epoch ?? DEFAULT_NUM_EPOCH;
    this.samplesPerUpdate = settings.samples_per_update;
    this.sequences = Math.max(Math.floor(Math.min(this.batchSize, this.demonstrations.numExperiences) / this.sequenceLength), 1);
    this.adam = new Adam(model.parameters.length);
    this.random = new SeededRandom(options.seed);
  }

  /** One round of cloning at training step `step`; the mean loss under upstream's tag. */
  update(step: number): Record<string, number> {
    return runPass(this.updatePass(step));
  }

  /**
   * update() as a reading pass (tensor-io.ts): PPO's update thread runs it with runPassAsync, on
   * WebGPU too, where `device` holds the weights of the trainer's update: this Adam steps them there.
   */
  *updatePass(step: number, device: DeviceParameters | null = null): ReadingPass<Record<string, number>> {
    const decayed = decayedValue(this.annealSteps > 0 ? 'linear' : 'constant', this.initialLearningRate, MIN_LEARNING_RATE, this.annealSteps, step);
    if (this.learningRate <= MIN_LEARNING_RATE) return { [PRETRAINING_LOSS_TAG]: 0 };
    const possible = Math.floor(this.demonstrations.numExperiences / this.sequences);
    const most = Math.floor(this.samplesPerUpdate / this.sequences);
    const batches = most === 0 ? possible : Math.min(possible, most);
    const rows = this.sequences * this.sequenceLength;
    let sum = 0;
    let count = 0;
    for (let epoch = 0; epoch < this.numEpoch; epoch++) {
      this.demonstrations.shuffle(this.sequenceLength, () => this.random.next());
      // As upstream: the batch count is divided by the sequence length once more.
      for (let b = 0; b < Math.floor(batches / this.sequenceLength); b++) {
        const { loss, gradient } = yield* this.lossAndGradientPass(demonstrationBatch(this.demonstrations.makeMiniBatch(b * rows, (b + 1) * rows)));
        adamStep(device, this.adam, this.model.parameters, gradient, this.learningRate);
        this.model.parametersChanged();
        sum += loss;
        count++;
      }
    }
    // As upstream: the rate computed at this update's step serves the next update.
    this.learningRate = decayed;
    return { [PRETRAINING_LOSS_TAG]: count === 0 ? NaN : sum / count };
  }

  /** The cloning loss on one minibatch and its gradient with respect to the model's parameters; changes nothing. */
  lossAndGradient(batch: DemonstrationBatch, noise = this.drawNoise(batch.count)): { loss: number; gradient: Float32Array } {
    return runPass(this.lossAndGradientPass(batch, noise));
  }

  /** lossAndGradient() as a reading pass. */
  lossAndGradientPass(batch: DemonstrationBatch, noise = this.drawNoise(batch.count)): ReadingPass<{ loss: number; gradient: Float32Array }> {
    const memorySize = this.model.memorySize;
    // As upstream, every sequence starts from zero memories.
    const sequences: SequenceMemories | undefined =
      memorySize === 0
        ? undefined
        : { length: this.sequenceLength, actor: new Float32Array((batch.count / this.sequenceLength) * memorySize), critic: new Float32Array((batch.count / this.sequenceLength) * memorySize) };
    const cloningLoss = (outputs: HeadOutputs, gradients: HeadGradients) => passReadingNothing(() => this.cloningLoss(outputs, gradients, batch, noise));
    return scoped(this.model.gradientPass(batch.observations, batch.count, cloningLoss, sequences, true));
  }

  /** count x continuous size standard normals: the noise of the actor's samples (zeros when deterministic). */
  drawNoise(count: number): Float32Array {
    const noise = new Float32Array(count * this.model.actionSpec.continuousSize);
    if (!this.model.deterministic) for (let i = 0; i < noise.length; i++) noise[i] = this.random.gaussian();
    return noise;
  }

  stateArrays(): Map<string, CheckpointArray> {
    return new Map<string, CheckpointArray>([...this.adam.stateArraysWithStep('adam'), ['learning_rate', new Float64Array([this.learningRate])]]);
  }

  loadStateArrays(arrays: ReadonlyMap<string, CheckpointArray>): void {
    this.adam.loadStateArraysWithStep('adam', arrays);
    this.learningRate = requireCheckpointArray(arrays, 'learning_rate', 1)[0];
  }

  /** The loss from the actor's outputs; writes d loss / d outputs into `gradients`. */
  private cloningLoss(outputs: HeadOutputs, gradients: HeadGradients, batch: DemonstrationBatch, noise: Float32Array): number {
    const n = outputs.count;
    const { continuousSize: C, discreteBranches } = this.model.actionSpec;
    const squash = this.model.options.tanhSquash === true;
    const conditional = this.model.conditionalSigma;
    let loss = 0;
    for (let j = 0; j < C; j++) {
      for (let i = 0; i < n; i++) {
        const rawLogStd = conditional ? outputs.logStd[j * n + i] : outputs.logStd[j];
        const std = Math.exp(conditional ? clampLogSigma(rawLogStd) : rawLogStd);
        const eps = noise[i * C + j];
        const u = outputs.means[j * n + i] + std * eps;
        const action = squash ? Math.tanh(u) : u;
        const error = action - batch.continuousActions[i * C + j];
        loss += (error * error) / (n * C);
        const byU = ((2 * error) / (n * C)) * (squash ? 1 - action * action : 1);
        gradients.means[j * n + i] += byU;
        // d u / d log sigma = sigma eps; the clamp passes no gradient outside its range.
        const byLogStd = byU * std * eps;
        if (!conditional) gradients.logStd[j] += byLogStd;
        else if (rawLogStd >= LOG_SIGMA_MIN && rawLogStd <= LOG_SIGMA_MAX) gradients.logStd[j * n + i] += byLogStd;
      }
    }
    const B = discreteBranches.length;
    const widest = Math.max(0, ...discreteBranches);
    const logits = new Float64Array(widest);
    const probs = new Float64Array(widest);
    const logitGradient = new Float64Array(widest);
    let firstRow = 0;
    discreteBranches.forEach((size, b) => {
      for (let i = 0; i < n; i++) {
        for (let k = 0; k < size; k++) logits[k] = outputs.logits[(firstRow + k) * n + i];
        maskedSoftmax(logits, null, size, probs);
        const choice = batch.discreteActions[i * B + b];
        // log softmax of log(p + eps): log(p_a + eps) - log(1 + size eps), the probabilities summing to 1.
        loss -= (Math.log(probs[choice] + EPSILON) - Math.log(1 + size * EPSILON)) / (n * B);
        logitGradient.fill(0, 0, size);
        addCategoricalGradient(probs, null, size, choice, -1 / (n * B), 0, logitGradient);
        for (let k = 0; k < size; k++) gradients.logits[(firstRow + k) * n + i] += logitGradient[k];
      }
      firstRow += size;
    });
    return loss;
  }
}

/** A minibatch of the demonstration buffer as the loss reads it. */
function demonstrationBatch(buffer: AgentBuffer): DemonstrationBatch {
  const observations: Float32Array[] = [];
  for (let k = 0; buffer.has(observationKey(k)); k++) observations.push(buffer.get(observationKey(k)).rows);
  const rows = (key: string) => (buffer.has(key) ? buffer.get(key).rows : new Float32Array(0));
  return {
    count: buffer.numExperiences,
    observations,
    continuousActions: rows(BufferKey.CONTINUOUS_ACTION),
    discreteActions: rows(BufferKey.DISCRETE_ACTION),
  };
}

/**
 * The module a trainer's behavioral_cloning settings ask for, null without them; the trainer's
 * learning_rate and batch_size are its defaults (upstream's TorchOptimizer).
 */
export function createBehavioralCloning(
  model: ActorCritic,
  behavior: string,
  settings: { readonly behavioral_cloning: BehavioralCloningSettings | null; readonly hyperparameters: { readonly learning_rate: number; readonly batch_size: number } },
  seed: number,
): BehavioralCloning | null {
  if (settings.behavioral_cloning === null) return null;
  const { learning_rate: learningRate, batch_size: batchSize } = settings.hyperparameters;
  // Its own stream of shuffles and samples, apart from the trainer's and the reward signals'.
  return new BehavioralCloning(model, settings.behavioral_cloning, { behavior, learningRate, batchSize, seed: seed + 500 });
}

/** A trainer checkpoint's arrays of behavioral cloning: behavioral_cloning.<array>; none without it. */
export function behavioralCloningStateArrays(cloning: BehavioralCloning | null): Array<[string, CheckpointArray]> {
  return cloning === null ? [] : [...cloning.stateArrays()].map(([key, values]) => [`${BC_PREFIX}${key}`, values]);
}

/** Restores behavioralCloningStateArrays(). */
export function loadBehavioralCloningStateArrays(cloning: BehavioralCloning | null, arrays: ReadonlyMap<string, CheckpointArray>): void {
  if (cloning === null) return;
  const own = new Map<string, CheckpointArray>();
  for (const [key, values] of arrays) if (key.startsWith(BC_PREFIX)) own.set(key.slice(BC_PREFIX.length), values);
  cloning.loadStateArrays(own);
}
