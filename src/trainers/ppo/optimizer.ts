/**
 * PPO's optimizer, as upstream's TorchPPOOptimizer: for each minibatch, the decayed learning
 * rate, epsilon and beta at the current step, the clipped PPO loss (./loss.ts), its gradient
 * through the actor and the critic, and one Adam step over both; the statistics upstream reports
 * for the update.
 */
import type { PPOSettings } from '../../config/settings';
import { ActorCritic, ModelDescription } from '../../networks/actor-critic';
import { Adam } from '../../networks/adam';
import { DeviceParameters, adamStep, updatingOnDevice } from '../../networks/device-parameters';
import { ReadingPass, passReadingNothing, runPass, scoped } from '../../networks/tensor-io';
import { CheckpointArray, CheckpointContents, encodeCheckpoint } from '../../networks/checkpoint-file';
import { CheckpointedOptimizer } from '../optimizer-checkpoint';
import { decayedValue } from '../../networks/schedule';
import { PpoMinibatch, ppoLoss } from './loss';
import { NonFiniteLossError } from '../non-finite-loss';
import { RewardProvider, loadProvidersStateArrays, providersStateArrays } from '../reward-signals/reward-provider';
import { BehavioralCloning, behavioralCloningStateArrays, loadBehavioralCloningStateArrays } from '../behavioral-cloning';

/** The floors the linear schedules decay to, as upstream's optimizer sets them. */
export const MIN_LEARNING_RATE = 1e-10;
export const MIN_EPSILON = 0.1;
export const MIN_BETA = 1e-5;

/** The checkpoint arrays of the optimizer's Adam state: adam.first_moment, adam.second_moment. */
const ADAM_PREFIX = 'adam';

export type PpoScheduleSettings = Pick<
  PPOSettings,
  'learning_rate' | 'beta' | 'epsilon' | 'learning_rate_schedule' | 'beta_schedule' | 'epsilon_schedule'
>;

export interface PpoSchedule {
  readonly learningRate: number;
  readonly epsilon: number;
  readonly beta: number;
}

/** The learning rate, epsilon and beta at a training step (PPO's and POCA's, which decay alike). */
export function ppoScheduleAt(h: PpoScheduleSettings, maxSteps: number, step: number): PpoSchedule {
  return {
    learningRate: decayedValue(h.learning_rate_schedule, h.learning_rate, MIN_LEARNING_RATE, maxSteps, step),
    epsilon: decayedValue(h.epsilon_schedule, h.epsilon, MIN_EPSILON, maxSteps, step),
    beta: decayedValue(h.beta_schedule, h.beta, MIN_BETA, maxSteps, step),
  };
}

export interface PpoOptimizerSettings {
  readonly hyperparameters: PpoScheduleSettings;
  /** The behavior's max_steps: where linear schedules reach their floor. */
  readonly maxSteps: number;
  /** The reward signals' providers by signal (upstream's optimizer.reward_signals); none when not given. */
  readonly rewardProviders?: ReadonlyMap<string, RewardProvider>;
  /** behavioral_cloning, when configured (upstream's optimizer.bc_module). */
  readonly behavioralCloning?: BehavioralCloning | null;
}

/** What one minibatch update reports, under upstream's stat names. */
export interface PpoUpdateStats {
  /** |policy loss|, as upstream reports it. */
  readonly 'Losses/Policy Loss': number;
  readonly 'Losses/Value Loss': number;
  readonly 'Policy/Learning Rate': number;
  readonly 'Policy/Epsilon': number;
  readonly 'Policy/Beta': number;
}

export class PpoOptimizer extends CheckpointedOptimizer {
  protected readonly checkpointKind = 'ppo';
  readonly adam: Adam;
  readonly rewardProviders: ReadonlyMap<string, RewardProvider>;
  readonly behavioralCloning: BehavioralCloning | null;
  /** During updatingOnDevice() on WebGPU: the weights and Adam's moments on the GPU. */
  private device: DeviceParameters | null = null;

  constructor(
    readonly model: ActorCritic,
    readonly settings: PpoOptimizerSettings,
  ) {
    super();
    this.adam = new Adam(model.parameters.length);
    this.rewardProviders = settings.rewardProviders ?? new Map();
    this.behavioralCloning = settings.behavioralCloning ?? null;
  }

  /** The learning rate, epsilon and beta at a training step. */
  scheduleAt(step: number): PpoSchedule {
    return ppoScheduleAt(this.settings.hyperparameters, this.settings.maxSteps, step);
  }

  /**
   * Runs a whole update's pass (./update.ts): on WebGPU, with the weights and Adam's moments on
   * the GPU from its first minibatch to its last (../../networks/device-parameters.ts).
   */
  *updatingOnDevice<T>(pass: ReadingPass<T>): ReadingPass<T> {
    try {
      return yield* updatingOnDevice(this.model, this.adam, (device) => {
        this.device = device;
        return pass;
      });
    } finally {
      this.device = null;
    }
  }

  /** During updatingOnDevice() on WebGPU: the weights on the GPU, which behavioral cloning steps too; else null. */
  get deviceParameters(): DeviceParameters | null {
    return this.device;
  }

  /** One gradient step on one minibatch, at training step `step` (for the schedules). */
  update(batch: PpoMinibatch, step: number): PpoUpdateStats {
    return runPass(this.updatePass(batch, step));
  }

  /** update() as a reading pass (tensor-io.ts): runPassAsync runs it on WebGPU. */
  *updatePass(batch: PpoMinibatch, step: number): ReadingPass<PpoUpdateStats> {
    checkMinibatch(batch, this.model);
    const { learningRate, epsilon, beta } = this.scheduleAt(step);
    const model = this.model;
    const { gradient, loss } = yield* scoped(
      model.gradientPass(batch.observations, batch.count, (outputs, gradients) =>
        passReadingNothing(() => ppoLoss(outputs, batch, model.actionSpec, model.rewardSignals, epsilon, beta, gradients)),
        batch.sequences,
      ),
    );
    const { policyLoss, valueLoss, loss: total } = loss;
    if (!Number.isFinite(total)) {
      throw new NonFiniteLossError(
        `The PPO loss is ${total} (policy loss ${policyLoss}, value loss ${valueLoss}) at step ${step}: ` +
          'the update was not applied.',
      );
    }
    adamStep(this.device, this.adam, model.parameters, gradient, learningRate);
    model.parametersChanged();
    return {
      'Losses/Policy Loss': Math.abs(policyLoss),
      'Losses/Value Loss': valueLoss,
      'Policy/Learning Rate': learningRate,
      'Policy/Epsilon': epsilon,
      'Policy/Beta': beta,
    };
  }

  /** Weights, normalizer and optimizer state in one checkpoint. */
  saveState(step: number): Uint8Array {
    const arrays = new Map<string, CheckpointArray>([
      ...this.model.stateArrays(),
      ...this.adam.stateArrays(ADAM_PREFIX),
      ...providersStateArrays(this.rewardProviders),
      ...behavioralCloningStateArrays(this.behavioralCloning),
    ]);
    const meta = { kind: 'ppo', step, adamStep: this.adam.step, model: this.model.describe() };
    return encodeCheckpoint(meta, arrays);
  }

  protected restoreState({ meta, arrays }: CheckpointContents): number {
    this.model.loadStateArrays(meta.model as ModelDescription, arrays);
    this.adam.loadStateArrays(ADAM_PREFIX, arrays, meta.adamStep as number);
    loadProvidersStateArrays(this.rewardProviders, arrays);
    loadBehavioralCloningStateArrays(this.behavioralCloning, arrays);
    return meta.step as number;
  }
}

/** Refuses a minibatch whose arrays do not fit the model, naming the array. */
function checkMinibatch(batch: PpoMinibatch, model: ActorCritic): void {
  const n = batch.count;
  const continuous = model.actionSpec.continuousSize;
  const branches = model.actionSpec.discreteSize;
  const maskWidth = model.actionSpec.discreteBranches.reduce((a, b) => a + b, 0);
  const expect = (name: string, length: number | undefined, wanted: number) => {
    if (length !== wanted) {
      throw new Error(`The PPO minibatch's ${name} holds ${length ?? 'no'} values; ${wanted} were expected for ${n} samples.`);
    }
  };
  if (!(n > 0)) throw new Error('The PPO minibatch is empty.');
  expect('continuousActions', batch.continuousActions.length, n * continuous);
  expect('oldContinuousLogProbs', batch.oldContinuousLogProbs.length, n * continuous);
  expect('discreteActions', batch.discreteActions.length, n * branches);
  expect('oldDiscreteLogProbs', batch.oldDiscreteLogProbs.length, n * branches);
  if (batch.actionMasks !== null) expect('actionMasks', batch.actionMasks.length, n * maskWidth);
  expect('advantages', batch.advantages.length, n);
  for (const name of model.rewardSignals) {
    expect(`returns.${name}`, batch.returns[name]?.length, n);
    expect(`oldValues.${name}`, batch.oldValues[name]?.length, n);
  }
}
