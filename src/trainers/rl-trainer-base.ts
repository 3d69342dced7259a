/**
 * What every reinforcement-learning trainer does around its algorithm (upstream's RLTrainer and
 * Trainer, shared by PPO and SAC): the reward each agent collects per signal until its episode
 * ends, the buffer of recent episode rewards, the summary every summary_freq steps and the
 * checkpoint request every checkpoint_interval steps; the policy that acts with a trainer's
 * networks; and RlTrainer, the base class that holds these for a trainer.
 */
import type { Logger } from '../common/logger';
import { SeededRandom } from '../common/random';
import type { TrainerSettings } from '../config/settings';
import type { BehaviorSpec } from '../env/behavior-spec';
import { DecisionSteps, allowedActions } from '../env/steps';
import type { ActorCritic } from '../networks/actor-critic';
import { STAT_KEYS, StatsPropertyType, StatsReporter, type Hyperparameters } from '../stats';
import type { ActingPolicy, ActionInfo } from './action-info';
import type { AgentManagerQueue } from './agent-manager-queue';
import { NonFiniteLossError } from './non-finite-loss';
import type { Trainer } from './trainer';
import type { Trajectory } from './trajectory';

/** How many recent episode rewards a trainer keeps (upstream's reward_buffer). */
export const REWARD_BUFFER_LENGTH = 1000;

/** The networks acting for a behavior: one batched forward pass per call. */
export class ModelPolicy implements ActingPolicy {
  constructor(readonly model: ActorCritic) {}

  get memorySize(): number {
    return this.model.memorySize;
  }

  decide(decision: DecisionSteps, memories: Float32Array | null = null): ActionInfo {
    const count = decision.length;
    const branches = this.model.actionSpec.discreteBranches;
    const masks = decision.actionMask === null || branches.length === 0 ? null : allowedActions(decision.actionMask, count, branches);
    const output = this.model.act(decision.obs, count, masks, memories === null ? {} : { memories });
    return {
      action: output.action,
      envAction: output.envAction,
      logProbs: output.logProbs,
      entropy: output.entropy,
      agentIds: decision.agentId,
      ...(output.memories === undefined ? {} : { memories: output.memories }),
    };
  }
}

export interface EpisodeBookkeepingOptions {
  readonly settings: Pick<TrainerSettings, 'summary_freq' | 'checkpoint_interval'>;
  /** The reward signals; 'environment' is kept besides them. */
  readonly signals: readonly string[];
  readonly stats: StatsReporter;
  /** Called when a checkpoint is due, with the step it is due at. */
  readonly onCheckpoint: (step: number) => void;
}

export class EpisodeBookkeeping {
  /** The rewards of the latest finished episodes, oldest first. */
  readonly episodeRewards: number[] = [];
  /** The rewards of the episodes finished since the last update (what a checkpoint records). */
  private returnsSinceUpdate: number[] = [];
  /** Per signal ('environment' too), the reward each agent has collected in its current episode. */
  private readonly collectedRewards = new Map<string, Map<string, number>>();
  private nextSummaryStep = 0;
  private nextCheckpointStep = 0;

  constructor(private readonly options: EpisodeBookkeepingOptions) {
    for (const name of ['environment', ...options.signals]) this.collectedRewards.set(name, new Map());
  }

  /** Adds rewards to what an agent collected for a signal ('environment' or a reward signal). */
  addRewards(signal: string, agentId: string, rewards: Float32Array): void {
    const collected = this.collectedRewards.get(signal)!;
    let sum = collected.get(agentId) ?? 0;
    for (const r of rewards) sum += r;
    collected.set(agentId, sum);
  }

  /** Upstream's _update_end_episode_stats: the episode's reward per signal, and the reward buffer. */
  endEpisode(agentId: string): void {
    for (const [signal, collected] of this.collectedRewards) {
      const total = collected.get(agentId) ?? 0;
      collected.delete(agentId);
      if (signal === 'environment') {
        this.episodeRewards.push(total);
        this.returnsSinceUpdate.push(total);
        if (this.episodeRewards.length > REWARD_BUFFER_LENGTH) this.episodeRewards.shift();
      } else {
        this.options.stats.addStat(STAT_KEYS.signalReward(signal), total);
      }
    }
  }

  /** The mean reward of the episodes finished since the last update; null when none finished. */
  get meanRewardSinceUpdate(): number | null {
    const returns = this.returnsSinceUpdate;
    return returns.length === 0 ? null : returns.reduce((a, b) => a + b, 0) / returns.length;
  }

  /** An update started: the next checkpoint's reward counts the episodes from here. */
  policyUpdated(): void {
    this.returnsSinceUpdate = [];
  }

  clearEpisodeRewards(): void {
    this.episodeRewards.length = 0;
  }

  /**
   * After a trajectory of `length` steps processed at `step`: writes the summary when one is due
   * (with `isTraining`) and, when `checkpoints`, asks for the checkpoint that is due.
   */
  stepsProcessed(step: number, length: number, isTraining: boolean, checkpoints: boolean): void {
    const stepAfter = step + length;
    const { summary_freq: summaryEvery, checkpoint_interval: checkpointEvery } = this.options.settings;
    // As upstream, the first summary comes at the first multiple of summary_freq after step 0.
    if (this.nextSummaryStep === 0) this.nextSummaryStep = nextMultiple(step, summaryEvery);
    if (stepAfter >= this.nextSummaryStep && step !== 0) {
      this.options.stats.setStat(STAT_KEYS.isTraining, isTraining ? 1 : 0);
      this.options.stats.writeStats(this.nextSummaryStep);
      this.nextSummaryStep = nextMultiple(stepAfter, summaryEvery);
    }
    if (!checkpoints) return;
    if (this.nextCheckpointStep === 0) this.nextCheckpointStep = nextMultiple(step, checkpointEvery);
    if (stepAfter >= this.nextCheckpointStep && step !== 0) {
      this.options.onCheckpoint(stepAfter);
      this.nextCheckpointStep = nextMultiple(stepAfter, checkpointEvery);
    }
  }
}

/** The first multiple of `interval` strictly after `step` (upstream's _get_next_interval_step). */
function nextMultiple(step: number, interval: number): number {
  return step + (interval - (step % interval));
}

/** What a trainer is built from; the trainer factory passes the same for every trainer type. */
export interface RlTrainerOptions<Settings extends TrainerSettings = TrainerSettings> {
  readonly behaviorName: string;
  readonly spec: BehaviorSpec;
  readonly settings: Settings;
  readonly stats: StatsReporter;
  /** Seeds the initial weights, the sampling of actions and the trainer's own draws (shuffles, minibatches). */
  readonly seed: number;
  /** false for --inference: trajectories are only reported, never trained on (default true). */
  readonly trainModel?: boolean;
  /** Called when a checkpoint is due (every checkpoint_interval steps), with the trainer's step. */
  readonly onCheckpoint?: (step: number) => void;
  /** Where a trainer reports what it does besides statistics (warnings, replay buffer files). */
  readonly logger?: Logger;
}

/**
 * The part of a trainer every algorithm shares (upstream's RLTrainer): its identity and step
 * count, the episode bookkeeping, when it still trains, and the draining of its trajectory
 * queue. A subclass builds its networks and says how it processes a trajectory and updates.
 */
export abstract class RlTrainer<Settings extends TrainerSettings> implements Trainer {
  readonly behaviorName: string;
  readonly settings: Settings;
  abstract readonly model: ActorCritic;
  abstract readonly policy: ModelPolicy;
  /** Experiences processed so far: the behavior's step count. */
  step = 0;

  protected readonly signals: string[];
  protected readonly stats: StatsReporter;
  /** The trainer's own draws (PPO's shuffles, SAC's minibatches), seeded apart from the networks'. */
  protected readonly random: SeededRandom;
  protected readonly bookkeeping: EpisodeBookkeeping;
  protected readonly trainModel: boolean;

  constructor(options: RlTrainerOptions<Settings>) {
    const { settings } = options;
    this.behaviorName = options.behaviorName;
    this.settings = settings;
    this.signals = Object.keys(settings.reward_signals);
    this.stats = options.stats;
    this.random = new SeededRandom(options.seed + 1);
    this.trainModel = options.trainModel ?? true;
    this.bookkeeping = new EpisodeBookkeeping({
      settings,
      signals: this.signals,
      stats: this.stats,
      onCheckpoint: options.onCheckpoint ?? (() => undefined),
    });
    this.stats.addProperty(StatsPropertyType.HYPERPARAMETERS, settings as unknown as Hyperparameters);
  }

  abstract advance(trajectoryQueue: AgentManagerQueue<Trajectory>, policyQueue: AgentManagerQueue<ActingPolicy>): boolean;
  abstract saveCheckpoint(file: string, step: number): void;
  abstract loadCheckpoint(file: string, options?: { readonly resume?: boolean }): number;
  /** Upstream's _process_trajectory, then the summary, checkpoint and step bookkeeping of rl_trainer. */
  abstract processTrajectory(trajectory: Trajectory): void;

  /** False once max_steps experiences have been processed, and always in an inference run. */
  get shouldStillTrain(): boolean {
    return this.trainModel && this.step < this.settings.max_steps;
  }

  /** The rewards of the latest finished episodes, oldest first. */
  get episodeRewards(): readonly number[] {
    return this.bookkeeping.episodeRewards;
  }

  /** The mean reward of the episodes finished since the last update; null when none finished. */
  get meanRewardSinceUpdate(): number | null {
    return this.bookkeeping.meanRewardSinceUpdate;
  }

  clearEpisodeRewards(): void {
    this.bookkeeping.clearEpisodeRewards();
  }

  /** Processes every trajectory waiting in the queue, oldest first. */
  protected processWaitingTrajectories(trajectoryQueue: AgentManagerQueue<Trajectory>): void {
    for (let trajectory = trajectoryQueue.tryGet(); trajectory !== undefined; trajectory = trajectoryQueue.tryGet()) {
      this.processTrajectory(trajectory);
    }
  }

  /** A non-finite loss stops the run: its message gains the behavior's name. */
  protected behaviorLossError(error: unknown): unknown {
    return error instanceof NonFiniteLossError ? new NonFiniteLossError(`Behavior ${this.behaviorName}: ${error.message}`) : error;
  }
}

/** The mean of the values; 0 for none. */
export function meanOf(values: Float32Array): number {
  let sum = 0;
  for (const v of values) sum += v;
  return values.length === 0 ? 0 : sum / values.length;
}
