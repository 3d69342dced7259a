/**
 * MA-POCA's optimizer, as upstream's TorchPOCAOptimizer (poca/optimizer_torch.py): for each
 * minibatch, at the decayed learning rate, epsilon and beta of the step,
 *
 *   policy    = PPO's clipped surrogate on the advantages (returns - baselines)   ../ppo/loss.ts
 *   value     = trust-region value loss of the group values V(s) on the returns
 *   baseline  = trust-region value loss of the baselines Q(s, a-i) on the same returns
 *   loss      = policy + 0.5 (value + 0.5 baseline) - beta mean(entropy)
 *
 * and one Adam step over the actor's and the critic's weights. Upstream's one Adam over both
 * parameter lists is two here, one per parameter vector: Adam works weight by weight with one
 * step count, so the steps are the same.
 *
 * A minibatch is a reading pass (tensor-io.ts), so that the update thread runs it on WebGPU; there,
 * for a whole update, both networks keep their weights and Adams' moments on the GPU
 * (device-parameters.ts).
 */
import type { POCASettings } from '../../config/settings';
import { ActorCritic, ModelDescription } from '../../networks/actor-critic';
import { Adam } from '../../networks/adam';
import { DeviceParameters, adamStep, updatingOnDevice } from '../../networks/device-parameters';
import { ReadingPass, passReadingNothing, runPass, scoped } from '../../networks/tensor-io';
import { CheckpointArray, CheckpointContents, encodeCheckpoint } from '../../networks/checkpoint-file';
import { GroupActionBatch, PocaCritic, PocaCriticDescription, PocaSequences } from '../../networks/poca-critic';
import { STAT_KEYS } from '../../stats';
import { BehavioralCloning, behavioralCloningStateArrays, loadBehavioralCloningStateArrays } from '../behavioral-cloning';
import { NonFiniteLossError } from '../non-finite-loss';
import { CheckpointedOptimizer } from '../optimizer-checkpoint';
import { PpoMinibatch, ppoLoss, trustRegionValueLoss } from '../ppo/loss';
import { ppoScheduleAt } from '../ppo/optimizer';
import { RewardProvider, loadProvidersStateArrays, providersStateArrays } from '../reward-signals/reward-provider';

/**
 * A POCA minibatch: PPO's (its returns and oldValues per signal; with memory the actor's sequence
 * memories), the baselines made when acting, and the group; with memory, the critic's value and
 * baseline memories at each sequence's start.
 */
export interface PocaMinibatch extends PpoMinibatch {
  readonly oldBaselines: Readonly<Record<string, Float32Array>>;
  readonly group: GroupActionBatch;
  readonly criticSequences?: PocaSequences;
}

/** What one minibatch update reports, under upstream's stat names. */
export interface PocaUpdateStats {
  /** |policy loss|, as upstream reports it. */
  readonly 'Losses/Policy Loss': number;
  readonly 'Losses/Value Loss': number;
  readonly 'Losses/Baseline Loss': number;
  readonly 'Policy/Learning Rate': number;
  readonly 'Policy/Epsilon': number;
  readonly 'Policy/Beta': number;
}

export interface PocaOptimizerSettings {
  readonly hyperparameters: POCASettings;
  readonly maxSteps: number;
  readonly rewardProviders: ReadonlyMap<string, RewardProvider>;
  readonly behavioralCloning: BehavioralCloning | null;
}

export class PocaOptimizer extends CheckpointedOptimizer {
  protected readonly checkpointKind = 'poca';
  readonly actorAdam: Adam;
  readonly criticAdam: Adam;
  readonly rewardProviders: ReadonlyMap<string, RewardProvider>;
  readonly behavioralCloning: BehavioralCloning | null;
  /** During updatingOnDevice() on WebGPU: each network's weights and Adam's moments on the GPU. */
  private actorDevice: DeviceParameters | null = null;
  private criticDevice: DeviceParameters | null = null;

  constructor(
    readonly model: ActorCritic,
    readonly critic: PocaCritic,
    readonly settings: PocaOptimizerSettings,
  ) {
    super();
    this.actorAdam = new Adam(model.parameters.length);
    this.criticAdam = new Adam(critic.parameters.length);
    this.rewardProviders = settings.rewardProviders;
    this.behavioralCloning = settings.behavioralCloning;
  }

  /**
   * Runs a whole update's pass (./update.ts): on WebGPU, with the actor's and the critic's
   * weights and Adams' moments on the GPU from its first minibatch to its last (behavioral
   * cloning steps the actor's there too).
   */
  *updatingOnDevice<T>(pass: ReadingPass<T>): ReadingPass<T> {
    try {
      return yield* updatingOnDevice(this.model, this.actorAdam, (actor) => {
        this.actorDevice = actor;
        return updatingOnDevice(this.critic, this.criticAdam, (critic) => {
          this.criticDevice = critic;
          return pass;
        });
      });
    } finally {
      this.actorDevice = null;
      this.criticDevice = null;
    }
  }

  /** During updatingOnDevice() on WebGPU: the actor's weights on the GPU, which behavioral cloning steps too; else null. */
  get deviceParameters(): DeviceParameters | null {
    return this.actorDevice;
  }

  /** One gradient step on one minibatch, at training step `step` (for the schedules). */
  update(batch: PocaMinibatch, step: number): PocaUpdateStats {
    return runPass(this.updatePass(batch, step));
  }

  /** update() as a reading pass (tensor-io.ts): runPassAsync runs it on WebGPU. */
  *updatePass(batch: PocaMinibatch, step: number): ReadingPass<PocaUpdateStats> {
    const { learningRate, epsilon, beta } = ppoScheduleAt(this.settings.hyperparameters, this.settings.maxSteps, step);
    const signals = this.critic.rewardSignals;
    const masks = batch.masks ?? new Float32Array(batch.count).fill(1);
    // The actor has no value heads: ppoLoss gives policy - beta entropy and their gradient.
    const actor = yield* scoped(
      this.model.gradientPass(
        batch.observations,
        batch.count,
        (outputs, gradients) => passReadingNothing(() => ppoLoss(outputs, batch, this.model.actionSpec, [], epsilon, beta, gradients)),
        batch.sequences,
      ),
    );
    const critic = yield* scoped(
      this.critic.gradientPass(
        batch.group,
        (estimates, gradients) => ({
          value: trustRegionValueLoss(estimates.values, batch.oldValues, batch.returns, signals, epsilon, masks, { values: gradients.values, weight: 0.5 }),
          baseline: trustRegionValueLoss(estimates.baselines, batch.oldBaselines, batch.returns, signals, epsilon, masks, { values: gradients.baselines, weight: 0.25 }),
        }),
        batch.criticSequences,
      ),
    );
    const { policyLoss } = actor.loss;
    const { value: valueLoss, baseline: baselineLoss } = critic.loss;
    const total = actor.loss.loss + 0.5 * (valueLoss + 0.5 * baselineLoss);
    if (!Number.isFinite(total)) {
      throw new NonFiniteLossError(
        `The POCA loss is ${total} (policy loss ${policyLoss}, value loss ${valueLoss}, baseline loss ${baselineLoss}) ` +
          `at step ${step}: the update was not applied.`,
      );
    }
    adamStep(this.actorDevice, this.actorAdam, this.model.parameters, actor.gradient, learningRate);
    this.model.parametersChanged();
    adamStep(this.criticDevice, this.criticAdam, this.critic.parameters, critic.gradient, learningRate);
    this.critic.parametersChanged();
    return {
      [STAT_KEYS.policyLoss]: Math.abs(policyLoss),
      [STAT_KEYS.valueLoss]: valueLoss,
      [STAT_KEYS.baselineLoss]: baselineLoss,
      [STAT_KEYS.learningRate]: learningRate,
      [STAT_KEYS.epsilon]: epsilon,
      [STAT_KEYS.beta]: beta,
    };
  }

  /** The actor, the critic (upstream's Optimizer:critic), both Adams, the reward signals and behavioral cloning, in one checkpoint. */
  saveState(step: number): Uint8Array {
    const arrays = new Map<string, CheckpointArray>([
      ...this.model.stateArrays(),
      ...this.actorAdam.stateArrays('adam'),
      ...this.critic.stateArrays(CRITIC_PREFIX),
      ...this.criticAdam.stateArrays('critic_adam'),
      ...providersStateArrays(this.rewardProviders),
      ...behavioralCloningStateArrays(this.behavioralCloning),
    ]);
    const meta = {
      kind: 'poca',
      step,
      adamStep: this.actorAdam.step,
      model: this.model.describe(),
      critic: this.critic.describe(),
    };
    return encodeCheckpoint(meta, arrays);
  }

  protected restoreState({ meta, arrays }: CheckpointContents): number {
    this.model.loadStateArrays(meta.model as ModelDescription, arrays);
    this.actorAdam.loadStateArrays('adam', arrays, meta.adamStep as number);
    this.critic.loadStateArrays(CRITIC_PREFIX, meta.critic as PocaCriticDescription, arrays);
    this.criticAdam.loadStateArrays('critic_adam', arrays, meta.adamStep as number);
    loadProvidersStateArrays(this.rewardProviders, arrays);
    loadBehavioralCloningStateArrays(this.behavioralCloning, arrays);
    return meta.step as number;
  }
}

/** The critic's arrays in a checkpoint: critic.parameters, critic.current_max_agents, critic.normalizer.*. */
const CRITIC_PREFIX = 'critic.';
