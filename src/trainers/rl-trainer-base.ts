/**
 * What every reinforcement-learning trainer does around its algorithm (upstream's RLTrainer and
 * Trainer, shared by PPO and SAC): the reward each agent collects per signal until its episode
 * ends, the buffer of recent episode rewards, the summary every summary_freq steps and the
 * checkpoint request every checkpoint_interval steps; and the policy that acts with a trainer's
 * networks.
 */
import type { TrainerSettings } from '../config/settings';
import { DecisionSteps, allowedActions } from '../env/steps';
import type { ActorCritic } from '../networks/actor-critic';
import { STAT_KEYS, StatsReporter } from '../stats';
import type { ActingPolicy, ActionInfo } from './action-info';

/** How many recent episode rewards a trainer keeps (upstream's reward_buffer). */
export const REWARD_BUFFER_LENGTH = 1000;

/** The networks acting for a behavior: one batched forward pass per call. */
export class ModelPolicy implements ActingPolicy {
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
