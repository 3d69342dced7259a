/**
 * PPO's trainer for one behavior (upstream's ppo/trainer.py with the parts of rl_trainer.py and
 * trainer.py it relies on): turns each trajectory into buffer columns with value estimates,
 * per-signal rewards, GAE advantages and returns; updates the networks with the optimizer every
 * buffer_size experiences (num_epoch passes of shuffled minibatches of batch_size); writes the
 * summaries every summary_freq steps and asks for a checkpoint every checkpoint_interval steps.
 *
 * The policy that acts is the same model the optimizer updates: once an update is done, the
 * trainer hands the policy back through its policy queue, as upstream does.
 *
 * With threaded: true the updates run in a worker thread (./update-worker.ts; ../on-policy-trainer.ts
 * hands the buffers over and takes the results back).
 */
import type { PPOSettings, TrainerSettings } from '../../config/settings';
import { ActorCritic } from '../../networks/actor-critic';
import { STAT_KEYS } from '../../stats';
import { ModelPolicy, RlTrainerOptions, meanOf } from '../rl-trainer-base';
import { OnPolicyTrainer } from '../on-policy-trainer';
import { gae } from '../advantages';
import { CriticMemories } from '../critic-memories';
import { AgentBuffer, BufferKey, RewardSignalKeys, isNextObservationKey } from '../buffer';
import { Trajectory } from '../trajectory';
import { PpoOptimizer } from './optimizer';
import { rewardBatchOf } from '../reward-signals/reward-provider';
import { PpoUpdateMeans, createPpoNetworks, updateOnBuffer } from './update';
import { PackedColumn, UpdateReply, UpdateRequest, optimizerStateOf, providerNormalizers, restoreUpdatedState } from './update-protocol';

/** A PPO behavior's settings (trainer_type: ppo). */
export type PpoTrainerSettings = Extract<TrainerSettings, { trainer_type: 'ppo' }>;

export type PpoTrainerOptions = RlTrainerOptions<PpoTrainerSettings>;

export class PpoTrainer extends OnPolicyTrainer<PpoTrainerSettings, UpdateRequest, UpdateReply> {
  readonly model: ActorCritic;
  readonly optimizer: PpoOptimizer;
  readonly policy: ModelPolicy;

  private readonly hyperparameters: PPOSettings;
  /** The critic's memories per agent across trajectory pieces (with memory). */
  private readonly criticMemories: CriticMemories;

  constructor(options: PpoTrainerOptions) {
    super(options, 'ppo');
    this.hyperparameters = options.settings.hyperparameters;
    ({ model: this.model, optimizer: this.optimizer } = createPpoNetworks(options.behaviorName, options.spec, options.settings, options.seed, options.logger ?? null));
    this.policy = new ModelPolicy(this.model);
    this.criticMemories = new CriticMemories(this.model, this.sequenceLength);
  }

  protected get bufferFull(): boolean {
    return this.updateBuffer.numExperiences >= this.hyperparameters.buffer_size;
  }

  /** Upstream's _update_policy, on this thread. */
  protected updateOnThisThread(): PpoUpdateMeans {
    return updateOnBuffer(this.optimizer, this.updateBuffer, this.hyperparameters, () => this.random.next(), this.step);
  }

  /** The buffer's columns, the normalizer and the step; the weights and Adam state when the worker's are stale. */
  protected workerRequest(columns: readonly PackedColumn[], withNetworks: boolean): UpdateRequest {
    const normalizer = this.model.normalizer;
    return {
      step: this.step,
      columns,
      normalizer: normalizer === null ? null : { steps: normalizer.steps, mean: normalizer.mean, variance: normalizer.variance },
      optimizerState: withNetworks ? optimizerStateOf(this.optimizer) : null,
      rewardSignalNormalizers: providerNormalizers(this.optimizer.rewardProviders),
    };
  }

  /** Copies the worker's weights and Adam state into the acting model. */
  protected applyWorkerState(reply: Extract<UpdateReply, { kind: 'updated' }>): void {
    restoreUpdatedState(this.optimizer, reply.state, reply.addedToNormalizers);
  }

  processTrajectory(trajectory: Trajectory): void {
    const buffer = trajectory.toAgentBuffer();
    const n = trajectory.length;
    const observations = trajectory.steps.obs;
    if (this.shouldStillTrain) this.model.updateNormalization(observations, n);

    // The critic's estimates at each step, and after the last one. After a true end nothing
    // follows, except for the signals that ignore dones (upstream's get_trajectory_value_estimates).
    const providers = this.optimizer.rewardProviders;
    const trulyEnded = trajectory.doneReached && !trajectory.interrupted;
    const anyIgnoresDone = [...providers.values()].some((provider) => provider.ignoreDone);
    const { values, nextValues } = this.criticMemories.estimate(trajectory, buffer, !trulyEnded || anyIgnoresDone);

    const environmentRewards = buffer.get(BufferKey.ENVIRONMENT_REWARDS).rows;
    this.bookkeeping.addRewards('environment', trajectory.agentId, environmentRewards);
    const rewardBatch = rewardBatchOf(buffer);
    const advantages = new Float32Array(n);
    const returns = new Float32Array(n);
    for (const signal of this.signals) {
      const provider = providers.get(signal)!;
      const rewards = Float32Array.from(provider.evaluate(rewardBatch), (r) => r * provider.strength);
      const signalValues = values[signal];
      buffer.get(RewardSignalKeys.rewards(signal)).set(rewards, 1);
      this.stats.addStat(STAT_KEYS.valueEstimate(signal), meanOf(signalValues));
      this.bookkeeping.addRewards(signal, trajectory.agentId, rewards);

      const bootstrap = nextValues === null || (trulyEnded && !provider.ignoreDone) ? null : nextValues[signal][0];
      const estimate = gae(rewards, signalValues, bootstrap, provider.gamma, this.hyperparameters.lambd);
      buffer.get(RewardSignalKeys.returns(signal)).set(estimate.returns, 1);
      buffer.get(RewardSignalKeys.advantage(signal)).set(estimate.advantages, 1);
      for (let t = 0; t < n; t++) {
        advantages[t] += estimate.advantages[t] / this.signals.length;
        returns[t] += estimate.returns[t] / this.signals.length;
      }
    }
    buffer.get(BufferKey.ADVANTAGES).set(advantages, 1);
    buffer.get(BufferKey.DISCOUNTED_RETURNS).set(returns, 1);
    // With memory, as whole sequences, the last one padded (upstream's _append_to_update_buffer).
    if (this.shouldStillTrain) buffer.resequenceAndAppend(this.updateBuffer, { keys: this.updateKeys(buffer), trainingLength: this.sequenceLength });
    if (trajectory.doneReached) this.bookkeeping.endEpisode(trajectory.agentId);

    this.bookkeeping.stepsProcessed(this.step, n, this.shouldStillTrain, this.trainModel);
    this.step += n;
  }

  /**
   * The columns an update reads: all but the next observations, unless a reward signal trains on
   * them. Upstream keeps them regardless; leaving them out changes nothing PPO computes.
   */
  private updateKeys(buffer: AgentBuffer): string[] {
    const keys = buffer.keys();
    if ([...this.optimizer.rewardProviders.values()].some((provider) => provider.readsNextObservations === true)) return keys;
    return keys.filter((key) => !isNextObservationKey(key));
  }

  /** Training sequences' length: sequence_length with memory, else 1. */
  private get sequenceLength(): number {
    return this.settings.network_settings.memory?.sequence_length ?? 1;
  }
}
