/**
 * MA-POCA's trainer for one behavior (upstream's poca/trainer.py): PPO's decentralized actor per
 * agent, trained against a centralized critic over the agent's group (../../networks/poca-critic.ts).
 * Each trajectory gets the critic's group values and the agent's counterfactual baselines, the
 * reward signals' rewards (the extrinsic one with the group reward and the groupmates' rewards),
 * TD(lambda) returns bootstrapped from the group's next state, and advantages = returns -
 * baselines; every buffer_size experiences the optimizer (./optimizer.ts) runs num_epoch passes
 * of minibatches. An agent that ends before its group is still bootstrapped from the group's value
 * (its trajectory truly ends only when every groupmate's has), as upstream.
 *
 * With network_settings.memory, the actor and the critic each have upstream's LSTM: the critic
 * runs over each trajectory sequence after sequence (upstream's _evaluate_by_sequence_team), its
 * value and baseline memories carried per agent across trajectory pieces and stored at each
 * step for training, on whole sequences as PPO's.
 *
 * With threaded: true the updates run in a worker thread (./update-worker.ts), as PPO's do
 * (../on-policy-trainer.ts; upstream's trainer controller threads every trainer whose settings say
 * so, POCA's included), on WebGPU when it was chosen for the updates. The exported policy is the
 * actor, as PPO's.
 */
import type { POCASettings, TrainerSettings } from '../../config/settings';
import { ActorCritic } from '../../networks/actor-critic';
import { CriticEstimates, GroupBatch, PocaCritic, PocaMemories } from '../../networks/poca-critic';
import { STAT_KEYS, StatsAggregationMethod } from '../../stats';
import { lambdaReturns } from '../advantages';
import { AgentMemories } from '../critic-memories';
import { AgentBuffer, BufferKey, RewardSignalKeys, groupSlots, padGroupSlots } from '../buffer';
import { rewardBatchOf } from '../reward-signals/reward-provider';
import { PpoUpdateMeans } from '../ppo/update';
import { PackedColumn, keepingEvaluatedNormalizers, providerNormalizers } from '../ppo/update-protocol';
import { ModelPolicy, REWARD_BUFFER_LENGTH, RlTrainerOptions, meanOf } from '../rl-trainer-base';
import { OnPolicyTrainer } from '../on-policy-trainer';
import { Trajectory } from '../trajectory';
import { PocaOptimizer } from './optimizer';
import { PocaUpdateReply, PocaUpdateRequest, createPocaNetworks, fedStateOf, groupBatchOf, restoreFedState, updatePocaOnBuffer } from './update';

/** A POCA behavior's settings (trainer_type: poca). */
export type PocaTrainerSettings = Extract<TrainerSettings, { trainer_type: 'poca' }>;

export class PocaTrainer extends OnPolicyTrainer<PocaTrainerSettings, PocaUpdateRequest, PocaUpdateReply> {
  readonly model: ActorCritic;
  readonly critic: PocaCritic;
  readonly optimizer: PocaOptimizer;
  readonly policy: ModelPolicy;
  /** The group rewards of the latest finished group episodes, oldest first. */
  readonly groupEpisodeRewards: number[] = [];

  private readonly hyperparameters: POCASettings;
  /** The group reward each agent collected in its current episode (upstream's collected_group_rewards). */
  private readonly collectedGroupRewards = new Map<string, number>();
  /** With memory, the critic's value and baseline memories per agent across trajectory pieces. */
  private readonly criticMemories = new AgentMemories<PocaMemories>();
  /** Training sequences' length: sequence_length with memory, else 1. */
  private readonly sequenceLength: number;

  constructor(options: RlTrainerOptions<PocaTrainerSettings>) {
    super(options, 'poca');
    const { settings, spec, seed, behaviorName } = options;
    this.hyperparameters = settings.hyperparameters;
    this.sequenceLength = settings.network_settings.memory?.sequence_length ?? 1;
    for (const signal of this.signals) {
      if (signal !== 'extrinsic') {
        options.logger?.warning(`Reward signal ${signal} is not supported with the POCA trainer; results may be unexpected.`);
      }
    }
    ({ model: this.model, critic: this.critic, optimizer: this.optimizer } = createPocaNetworks(behaviorName, spec, settings, seed, options.logger ?? null));
    this.policy = new ModelPolicy(this.model);
  }

  override clearEpisodeRewards(): void {
    super.clearEpisodeRewards();
    this.groupEpisodeRewards.length = 0;
  }

  processTrajectory(trajectory: Trajectory): void {
    const buffer = trajectory.toAgentBuffer(true);
    const n = trajectory.length;
    const observations = trajectory.steps.obs;
    if (this.shouldStillTrain) {
      this.model.updateNormalization(observations, n);
      this.critic.updateNormalization(observations, n);
    }

    const { estimates, nextValues } = this.criticEstimates(trajectory, buffer);
    // The agent's trajectory truly ends only when its groupmates' have too.
    const groupEnded = trajectory.teammateDonesReached && trajectory.doneReached && !trajectory.interrupted;

    this.bookkeeping.addRewards('environment', trajectory.agentId, buffer.get(BufferKey.ENVIRONMENT_REWARDS).rows);
    let groupReward = this.collectedGroupRewards.get(trajectory.agentId) ?? 0;
    for (const r of buffer.get(BufferKey.GROUP_REWARD).rows) groupReward += r;
    this.collectedGroupRewards.set(trajectory.agentId, groupReward);

    const rewardBatch = rewardBatchOf(buffer);
    const advantages = new Float32Array(n);
    this.signals.forEach((signal, s) => {
      const provider = this.optimizer.rewardProviders.get(signal)!;
      const values = estimates.values[s];
      const baselines = estimates.baselines[s];
      buffer.get(RewardSignalKeys.baselineEstimates(signal)).set(baselines, 1);
      this.stats.addStat(STAT_KEYS.baselineEstimate(signal), meanOf(baselines));
      this.stats.addStat(STAT_KEYS.valueEstimate(signal), meanOf(values));
      const rewards = Float32Array.from(provider.evaluate(rewardBatch), (r) => r * provider.strength);
      buffer.get(RewardSignalKeys.rewards(signal)).set(rewards, 1);
      this.bookkeeping.addRewards(signal, trajectory.agentId, rewards);

      const bootstrap = groupEnded && !provider.ignoreDone ? 0 : nextValues[s][0];
      const returns = lambdaReturns(rewards, values, bootstrap, provider.gamma, this.hyperparameters.lambd);
      const signalAdvantages = Float32Array.from(returns, (r, t) => r - baselines[t]);
      buffer.get(RewardSignalKeys.returns(signal)).set(returns, 1);
      buffer.get(RewardSignalKeys.advantage(signal)).set(signalAdvantages, 1);
      for (let t = 0; t < n; t++) advantages[t] += signalAdvantages[t] / this.signals.length;
    });
    buffer.get(BufferKey.ADVANTAGES).set(advantages, 1);
    if (this.shouldStillTrain) this.appendToUpdateBuffer(buffer);

    if (trajectory.doneReached) {
      this.bookkeeping.endEpisode(trajectory.agentId);
      // An agent that leaves before its group: its group reward is the last one's to report.
      if (!trajectory.teammateDonesReached) this.collectedGroupRewards.delete(trajectory.agentId);
    }
    if (trajectory.doneReached && trajectory.teammateDonesReached) {
      const total = this.collectedGroupRewards.get(trajectory.agentId) ?? 0;
      this.stats.addStat(STAT_KEYS.groupCumulativeReward, total, StatsAggregationMethod.HISTOGRAM);
      this.groupEpisodeRewards.push(total);
      if (this.groupEpisodeRewards.length > REWARD_BUFFER_LENGTH) this.groupEpisodeRewards.shift();
      this.collectedGroupRewards.delete(trajectory.agentId);
    }
    this.bookkeeping.stepsProcessed(this.step, n, this.shouldStillTrain, this.trainModel);
    this.step += n;
  }

  /**
   * The critic's values and baselines at each step of a trajectory, and the group's value after
   * it. With memory, from where the agent's previous piece left the critic, the memories each
   * step's sequence started from stored in `buffer` (critic_memory, poca_baseline_memory).
   */
  private criticEstimates(trajectory: Trajectory, buffer: AgentBuffer): { estimates: CriticEstimates; nextValues: Float32Array[] } {
    const group = groupBatchOf(buffer, trajectory.length);
    const size = this.critic.memorySize;
    if (size === 0) return { estimates: this.critic.estimate(group), nextValues: this.critic.values(nextGroupBatch(trajectory)) };
    const start = this.criticMemories.get(trajectory.agentId) ?? { value: new Float32Array(size), baseline: new Float32Array(size) };
    const estimates = this.critic.estimateInSequences(group, start, this.sequenceLength);
    buffer.get(BufferKey.CRITIC_MEMORY).set(estimates.stepMemories.value, size);
    buffer.get(BufferKey.BASELINE_MEMORY).set(estimates.stepMemories.baseline, size);
    this.criticMemories.keep(trajectory, estimates.finalMemories);
    return { estimates, nextValues: this.critic.values(nextGroupBatch(trajectory), estimates.finalMemories.value) };
  }

  /**
   * Appends a trajectory's columns, the group columns of both widened to the most groupmate
   * slots; with memory, as whole sequences, the last one padded (upstream's _append_to_update_buffer).
   */
  private appendToUpdateBuffer(buffer: AgentBuffer): void {
    const slots = Math.max(groupSlots(buffer), groupSlots(this.updateBuffer));
    padGroupSlots(buffer, slots);
    padGroupSlots(this.updateBuffer, slots);
    buffer.resequenceAndAppend(this.updateBuffer, { trainingLength: this.sequenceLength });
  }

  /** As upstream's POCA, an update is due once the buffer holds more than buffer_size experiences. */
  protected get bufferFull(): boolean {
    return this.updateBuffer.numExperiences > this.hyperparameters.buffer_size;
  }

  protected updateOnThisThread(): PpoUpdateMeans {
    return updatePocaOnBuffer(this.optimizer, this.updateBuffer, this.settings, () => this.random.next(), this.step);
  }

  /** The buffer's columns, what the main thread feeds and the step; the optimizer's state when the worker's is stale. */
  protected workerRequest(columns: readonly PackedColumn[], withNetworks: boolean): PocaUpdateRequest {
    return {
      step: this.step,
      columns,
      state: withNetworks ? this.optimizer.saveState(this.step) : null,
      fed: fedStateOf(this),
      rewardSignalNormalizers: providerNormalizers(this.optimizer.rewardProviders),
    };
  }

  /** Takes the worker's state, keeping what this thread fed meanwhile. */
  protected applyWorkerState(reply: Extract<PocaUpdateReply, { kind: 'updated' }>): void {
    const fed = fedStateOf(this);
    keepingEvaluatedNormalizers(this.optimizer.rewardProviders, reply.addedToNormalizers, () => this.optimizer.loadState(reply.state));
    restoreFedState(this, fed);
  }
}

/** The group's state after a trajectory: the agent's next observation and its groupmates' (one empty slot when it has none). */
function nextGroupBatch(trajectory: Trajectory): GroupBatch {
  const mates = trajectory.nextGroupObs;
  const slots = Math.max(1, mates.length);
  return {
    count: 1,
    slots,
    observations: trajectory.nextObs.map((obs) => Float32Array.from(obs)),
    groupObservations: trajectory.nextObs.map((obs, k) => {
      const values = new Float32Array(slots * obs.length).fill(NaN);
      mates.forEach((mate, m) => values.set(mate[k], m * obs.length));
      return values;
    }),
  };
}
