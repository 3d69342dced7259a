/**
 * PPO's trainer for one behavior (upstream's ppo/trainer.py with the parts of rl_trainer.py and
 * trainer.py it relies on): turns each trajectory into buffer columns with value estimates,
 * per-signal rewards, GAE advantages and returns; updates the networks with the optimizer every
 * buffer_size experiences (num_epoch passes of shuffled minibatches of batch_size); writes the
 * summaries every summary_freq steps and asks for a checkpoint every checkpoint_interval steps.
 *
 * The policy that acts is the same model the optimizer updates: once an update is done, the
 * trainer hands the policy back through its policy queue, as upstream does.
 */
import type { PPOSettings, TrainerSettings } from '../../config/settings';
import { BehaviorSpec } from '../../env/behavior-spec';
import { DecisionSteps, allowedActions } from '../../env/steps';
import { ActorCritic } from '../../networks/actor-critic';
import { SeededRandom } from '../../communicator/random';
import { STAT_KEYS, StatsPropertyType, StatsReporter, type Hyperparameters } from '../../stats';
import { ActingPolicy, ActionInfo } from '../action-info';
import type { Trainer } from '../trainer';
import { gae } from '../advantages';
import { AgentManagerQueue } from '../agent-manager-queue';
import { AgentBuffer, BufferKey, RewardSignalKeys, observationKey } from '../buffer';
import { Trajectory } from '../trajectory';
import { NonFiniteLossError, PpoOptimizer, PpoUpdateStats } from './optimizer';
import { PpoMinibatch } from './loss';

/** A PPO behavior's settings (trainer_type: ppo). */
export type PpoTrainerSettings = Extract<TrainerSettings, { trainer_type: 'ppo' }>;

/** The networks acting for a behavior: one batched forward pass per call. */
export class PpoPolicy implements ActingPolicy {
  constructor(readonly model: ActorCritic) {}

  decide(decision: DecisionSteps): ActionInfo {
    const count = decision.length;
    const branches = this.model.actionSpec.discreteBranches;
    const masks = decision.actionMask === null || branches.length === 0 ? null : allowedActions(decision.actionMask, count, branches);
    const output = this.model.act(decision.obs, count, masks);
    return {
      action: output.action,
      envAction: output.envAction,
      logProbs: output.logProbs,
      entropy: output.entropy,
      agentIds: decision.agentId,
    };
  }
}


export interface PpoTrainerOptions {
  readonly behaviorName: string;
  readonly spec: BehaviorSpec;
  readonly settings: PpoTrainerSettings;
  readonly stats: StatsReporter;
  /** Seeds the initial weights, the sampling of actions and the shuffling of the update buffer. */
  readonly seed: number;
  /** false for --inference: trajectories are only reported, never trained on (default true). */
  readonly trainModel?: boolean;
  /** Called when a checkpoint is due (every checkpoint_interval steps), with the trainer's step. */
  readonly onCheckpoint?: (step: number) => void;
}

/** How many recent episode rewards the trainer keeps (upstream's reward_buffer). */
const REWARD_BUFFER_LENGTH = 1000;

export class PpoTrainer implements Trainer {
  readonly behaviorName: string;
  readonly settings: PpoTrainerSettings;
  readonly model: ActorCritic;
  readonly optimizer: PpoOptimizer;
  readonly policy: PpoPolicy;
  /** Experiences processed so far: the behavior's step count. */
  step = 0;
  /** The rewards of the latest finished episodes, oldest first. */
  readonly episodeRewards: number[] = [];
  /** The experiences waiting for the next update (upstream's update_buffer). */
  updateBuffer = new AgentBuffer();

  /** The rewards of the episodes finished since the last update (what a checkpoint records). */
  private returnsSinceUpdate: number[] = [];
  private readonly hyperparameters: PPOSettings;
  private readonly signals: string[];
  private readonly stats: StatsReporter;
  private readonly random: SeededRandom;
  /** Per signal ('environment' too), the reward each agent has collected in its current episode. */
  private readonly collectedRewards = new Map<string, Map<string, number>>();
  private readonly onCheckpoint: (step: number) => void;
  private readonly trainModel: boolean;
  private nextSummaryStep = 0;
  private nextCheckpointStep = 0;

  constructor(options: PpoTrainerOptions) {
    const { settings } = options;
    this.behaviorName = options.behaviorName;
    this.settings = settings;
    this.hyperparameters = settings.hyperparameters;
    this.signals = Object.keys(settings.reward_signals);
    this.stats = options.stats;
    this.random = new SeededRandom(options.seed + 1);
    this.onCheckpoint = options.onCheckpoint ?? (() => undefined);
    this.trainModel = options.trainModel ?? true;
    this.model = new ActorCritic(options.spec, {
      network: settings.network_settings,
      rewardSignals: this.signals,
      sharedCritic: settings.hyperparameters.shared_critic,
      seed: options.seed,
    });
    this.optimizer = new PpoOptimizer(this.model, { hyperparameters: this.hyperparameters, maxSteps: settings.max_steps });
    this.policy = new PpoPolicy(this.model);
    for (const name of ['environment', ...this.signals]) this.collectedRewards.set(name, new Map());
    this.stats.addProperty(StatsPropertyType.HYPERPARAMETERS, settings as unknown as Hyperparameters);
  }

  /** False once max_steps experiences have been processed, and always in an inference run. */
  get shouldStillTrain(): boolean {
    return this.trainModel && this.step < this.settings.max_steps;
  }

  /**
   * Processes every waiting trajectory and updates when the buffer is full (upstream's advance).
   * Returns true when the policy changed, after putting it in `policyQueue`.
   */
  advance(trajectoryQueue: AgentManagerQueue<Trajectory>, policyQueue: AgentManagerQueue<ActingPolicy>): boolean {
    for (let trajectory = trajectoryQueue.tryGet(); trajectory !== undefined; trajectory = trajectoryQueue.tryGet()) {
      this.processTrajectory(trajectory);
    }
    if (!this.shouldStillTrain || this.updateBuffer.numExperiences < this.hyperparameters.buffer_size) return false;
    this.updatePolicy();
    policyQueue.put(this.policy);
    return true;
  }

  saveCheckpoint(file: string, step: number): void {
    this.optimizer.saveCheckpoint(file, step);
  }

  loadCheckpoint(file: string): number {
    return this.optimizer.loadCheckpoint(file);
  }

  /** Upstream's _process_trajectory, then the summary, checkpoint and step bookkeeping of rl_trainer. */
  processTrajectory(trajectory: Trajectory): void {
    const buffer = trajectory.toAgentBuffer();
    const n = trajectory.length;
    const observations = trajectory.steps.obs;
    if (this.shouldStillTrain) this.model.updateNormalization(observations, n);

    // The critic's estimates at each step, and after the last one: nothing follows a true end.
    const values = this.model.values(observations, n);
    const trulyEnded = trajectory.doneReached && !trajectory.interrupted;
    const nextValues = trulyEnded ? null : this.model.values(trajectory.nextObs, 1);

    const environmentRewards = buffer.get(BufferKey.ENVIRONMENT_REWARDS).rows;
    this.addToCollected('environment', trajectory.agentId, environmentRewards);
    const advantages = new Float32Array(n);
    const returns = new Float32Array(n);
    for (const signal of this.signals) {
      const settings = this.settings.reward_signals[signal as keyof PpoTrainerSettings['reward_signals']]!;
      const rewards = Float32Array.from(environmentRewards, (r) => r * settings.strength);
      const signalValues = values[signal];
      buffer.get(RewardSignalKeys.valueEstimates(signal)).set(signalValues, 1);
      buffer.get(RewardSignalKeys.rewards(signal)).set(rewards, 1);
      this.stats.addStat(STAT_KEYS.valueEstimate(signal), mean(signalValues));
      this.addToCollected(signal, trajectory.agentId, rewards);

      const bootstrap = nextValues === null ? null : nextValues[signal][0];
      const estimate = gae(rewards, signalValues, bootstrap, settings.gamma, this.hyperparameters.lambd);
      buffer.get(RewardSignalKeys.returns(signal)).set(estimate.returns, 1);
      buffer.get(RewardSignalKeys.advantage(signal)).set(estimate.advantages, 1);
      for (let t = 0; t < n; t++) {
        advantages[t] += estimate.advantages[t] / this.signals.length;
        returns[t] += estimate.returns[t] / this.signals.length;
      }
    }
    buffer.get(BufferKey.ADVANTAGES).set(advantages, 1);
    buffer.get(BufferKey.DISCOUNTED_RETURNS).set(returns, 1);
    if (this.shouldStillTrain) buffer.resequenceAndAppend(this.updateBuffer);
    if (trajectory.doneReached) this.endEpisode(trajectory.agentId);

    this.maybeWriteSummary(this.step + n);
    if (this.trainModel) this.maybeCheckpoint(this.step + n);
    this.step += n;
  }

  /** Upstream's _write_summary: whether the behavior still trains, then every stat of the period. */
  private writeSummary(step: number): void {
    this.stats.setStat(STAT_KEYS.isTraining, this.shouldStillTrain ? 1 : 0);
    this.stats.writeStats(step);
  }

  /**
   * Upstream's _update_policy: advantages normalized over the buffer, then num_epoch passes over
   * it in shuffled minibatches of batch_size; the mean of each update statistic is reported.
   */
  private updatePolicy(): void {
    const h = this.hyperparameters;
    const buffer = this.updateBuffer;
    const length = buffer.numExperiences;
    const advantages = buffer.get(BufferKey.ADVANTAGES);
    advantages.set(standardized(advantages.rows), 1);

    const totals = new Map<keyof PpoUpdateStats, { sum: number; count: number }>();
    const batchCount = Math.floor(length / h.batch_size);
    for (let epoch = 0; epoch < h.num_epoch; epoch++) {
      buffer.shuffle(1, () => this.random.next());
      for (let b = 0; b < batchCount; b++) {
        const minibatch = this.minibatchOf(buffer.makeMiniBatch(b * h.batch_size, (b + 1) * h.batch_size));
        const stats = this.updateMinibatch(minibatch);
        for (const key of Object.keys(stats) as Array<keyof PpoUpdateStats>) {
          const total = totals.get(key) ?? { sum: 0, count: 0 };
          total.sum += stats[key];
          total.count++;
          totals.set(key, total);
        }
      }
    }
    for (const [key, { sum, count }] of totals) this.stats.addStat(key, sum / count);
    this.updateBuffer = new AgentBuffer();
    this.returnsSinceUpdate = [];
  }

  /** The mean reward of the episodes finished since the last update; null when none finished. */
  get meanRewardSinceUpdate(): number | null {
    const returns = this.returnsSinceUpdate;
    return returns.length === 0 ? null : returns.reduce((a, b) => a + b, 0) / returns.length;
  }

  /** One optimizer step; a non-finite loss stops the run, naming the behavior (its weights stay as they were). */
  private updateMinibatch(minibatch: PpoMinibatch): PpoUpdateStats {
    try {
      return this.optimizer.update(minibatch, this.step);
    } catch (error) {
      if (!(error instanceof NonFiniteLossError)) throw error;
      throw new NonFiniteLossError(`Behavior ${this.behaviorName}: ${error.message}`);
    }
  }

  private minibatchOf(batch: AgentBuffer): PpoMinibatch {
    const count = batch.numExperiences;
    const rows = (key: string): Float32Array => (batch.has(key) ? batch.get(key).rows : new Float32Array(0));
    const returns: Record<string, Float32Array> = {};
    const oldValues: Record<string, Float32Array> = {};
    for (const signal of this.signals) {
      returns[signal] = rows(RewardSignalKeys.returns(signal));
      oldValues[signal] = rows(RewardSignalKeys.valueEstimates(signal));
    }
    return {
      count,
      observations: observationKeys(batch).map((key) => batch.get(key).rows),
      continuousActions: rows(BufferKey.CONTINUOUS_ACTION),
      discreteActions: Int32Array.from(rows(BufferKey.DISCRETE_ACTION)),
      actionMasks: batch.has(BufferKey.ACTION_MASK) ? batch.get(BufferKey.ACTION_MASK).rows : null,
      oldContinuousLogProbs: rows(BufferKey.CONTINUOUS_LOG_PROBS),
      oldDiscreteLogProbs: rows(BufferKey.DISCRETE_LOG_PROBS),
      advantages: rows(BufferKey.ADVANTAGES),
      returns,
      oldValues,
    };
  }

  private addToCollected(signal: string, agentId: string, rewards: Float32Array): void {
    const collected = this.collectedRewards.get(signal)!;
    let sum = collected.get(agentId) ?? 0;
    for (const r of rewards) sum += r;
    collected.set(agentId, sum);
  }

  /** Upstream's _update_end_episode_stats: the episode's reward per signal, and the reward buffer. */
  private endEpisode(agentId: string): void {
    for (const [signal, collected] of this.collectedRewards) {
      const total = collected.get(agentId) ?? 0;
      collected.delete(agentId);
      if (signal === 'environment') {
        this.episodeRewards.push(total);
        this.returnsSinceUpdate.push(total);
        if (this.episodeRewards.length > REWARD_BUFFER_LENGTH) this.episodeRewards.shift();
      } else {
        this.stats.addStat(STAT_KEYS.signalReward(signal), total);
      }
    }
  }

  /** As upstream, the first summary comes at the first multiple of summary_freq after step 0. */
  private maybeWriteSummary(stepAfter: number): void {
    const every = this.settings.summary_freq;
    if (this.nextSummaryStep === 0) this.nextSummaryStep = nextMultiple(this.step, every);
    if (stepAfter >= this.nextSummaryStep && this.step !== 0) {
      this.writeSummary(this.nextSummaryStep);
      this.nextSummaryStep = nextMultiple(stepAfter, every);
    }
  }

  private maybeCheckpoint(stepAfter: number): void {
    const every = this.settings.checkpoint_interval;
    if (this.nextCheckpointStep === 0) this.nextCheckpointStep = nextMultiple(this.step, every);
    if (stepAfter >= this.nextCheckpointStep && this.step !== 0) {
      this.onCheckpoint(stepAfter);
      this.nextCheckpointStep = nextMultiple(stepAfter, every);
    }
  }
}

/** The obs:i keys of a buffer, in observation order. */
function observationKeys(buffer: AgentBuffer): string[] {
  const keys: string[] = [];
  for (let i = 0; buffer.has(observationKey(i)); i++) keys.push(observationKey(i));
  return keys;
}

/** The first multiple of `interval` strictly after `step` (upstream's _get_next_interval_step). */
function nextMultiple(step: number, interval: number): number {
  return step + (interval - (step % interval));
}

function mean(values: Float32Array): number {
  let sum = 0;
  for (const v of values) sum += v;
  return values.length === 0 ? 0 : sum / values.length;
}

/** (x - mean) / (std + 1e-10), std the population one, as upstream normalizes advantages. */
function standardized(values: Float32Array): Float32Array {
  const m = mean(values);
  let squares = 0;
  for (const v of values) squares += (v - m) * (v - m);
  const std = Math.sqrt(squares / values.length);
  return Float32Array.from(values, (v) => (v - m) / (std + 1e-10));
}
