/**
 * What the controller needs from a behavior's trainer, whichever algorithm it runs (upstream's
 * Trainer and RLTrainer seen from the TrainerController): trajectories in, policies out, the step
 * count, the episode rewards, and checkpoints.
 */
import type { TrainerSettings } from '../config/settings';
import type { ActorCritic } from '../networks/actor-critic';
import type { ActingPolicy } from './action-info';
import type { AgentManagerQueue } from './agent-manager-queue';
import type { Trajectory } from './trajectory';

export interface Trainer {
  readonly behaviorName: string;
  readonly settings: TrainerSettings;
  /** The policy that acts for the behavior. */
  readonly policy: ActingPolicy;
  /** The networks the policy acts with: what an ONNX export and an inference run read. */
  readonly model: ActorCritic;
  /** Experiences processed so far: the behavior's step count. */
  step: number;
  /** The rewards of the latest finished episodes, oldest first (upstream's reward_buffer). */
  readonly episodeRewards: readonly number[];
  /** Forgets episodeRewards: a new curriculum lesson is judged on its own episodes only. */
  clearEpisodeRewards(): void;
  /** False once max_steps experiences have been processed, or when the run only does inference. */
  readonly shouldStillTrain: boolean;
  /** The mean reward of the episodes finished since the last update; null when none finished. */
  readonly meanRewardSinceUpdate: number | null;
  /**
   * Processes every waiting trajectory and updates when one is due. Returns true when the policy
   * changed, after putting it in `policyQueue`.
   */
  advance(trajectoryQueue: AgentManagerQueue<Trajectory>, policyQueue: AgentManagerQueue<ActingPolicy>): boolean;
  /** Writes the whole training state (weights, optimizer, normalizer, step) to a checkpoint file. */
  saveCheckpoint(file: string, step: number): void;
  /**
   * Restores a checkpoint file written by saveCheckpoint; returns the step it was saved at.
   * `resume` tells a --resume (which also restores what upstream restores only then, such as
   * SAC's replay buffer) from an --initialize-from.
   */
  loadCheckpoint(file: string, options?: { readonly resume?: boolean }): number;
  /** Trainers that update off the main thread (threaded: true): waits for the update in flight and applies it. */
  finishUpdate?(): Promise<void>;
  /**
   * Trainers that update off the main thread: resolves at once, unless the next update's buffer is
   * already full while the last update still runs; then once that update is done. The environments
   * wait meanwhile, as upstream's bounded trajectory queue makes them, so an update never trains
   * on much more than one buffer of experiences.
   */
  waitUntilReady?(): Promise<void>;
  /** Trainers that update off the main thread: ends their worker, dropping an update still in flight. */
  close?(): Promise<void>;
}
