/**
 * SAC's networks, which its trainer and its update worker build alike, and the messages between
 * the two when the updates run in a worker thread (threaded: true, ./update-worker.ts).
 *
 * The trainer keeps the replay buffer, the schedule of updates (one per steps_per_update steps
 * after buffer_init_steps), the reward signals and the policy's normalizer. At each advance() it
 * draws the minibatches the new steps call for, each signal's rewards evaluated on them as
 * upstream does, and hands them to the worker in one request with the normalizer as it is now.
 * The worker owns a copy of the actor, V and its target, the twin Q networks, log alpha and
 * their Adams, and of behavioral cloning when configured (its demonstrations read there); it runs
 * the updates one after another, each with its round of cloning, on the update backend (WebGPU's
 * when one was chosen, while acting stays on the main thread) and answers with what they changed
 * (the optimizer's updatedState()) and each update's statistics, which the trainer copies into the
 * acting model at its next advance(). The trainer's own copy goes along only when it changed
 * outside the worker (the first update, a restored checkpoint).
 */
import type { BehaviorSpec } from '../../env/behavior-spec';
import { ActorCritic } from '../../networks/actor-critic';
import type { CheckpointArray } from '../../networks/checkpoint-file';
import type { NormalizerState } from '../../networks/normalizer';
import type { UpdateWorkerSetup } from '../ppo/update-protocol';
import type { SacOptimizerSettings } from './optimizer';
import type { ReplayRows } from './replay-buffer';
import type { SacTrainerSettings } from './trainer';

/** SAC's actor and value network (one ActorCritic: squashed Gaussian, conditional sigma, a separate critic). */
export function createSacModel(spec: BehaviorSpec, settings: SacTrainerSettings, seed: number): ActorCritic {
  return new ActorCritic(spec, {
    network: settings.network_settings,
    rewardSignals: Object.keys(settings.reward_signals),
    sharedCritic: false,
    seed,
    conditionalSigma: true,
    tanhSquash: true,
  });
}

/** What the worker builds its networks from: the reward signals' gamma, strength and use of dones besides PPO's setup. */
export interface SacWorkerSetup extends UpdateWorkerSetup<SacTrainerSettings> {
  readonly signals: SacOptimizerSettings['signals'];
}

/** One update's minibatch and each signal's unscaled rewards on it, in the model's rewardSignals order. */
export interface SacMinibatch {
  readonly rows: ReplayRows;
  readonly signalRewards: readonly Float32Array[];
}

export interface SacUpdateRequest {
  /** The training step the learning rate is read at. */
  readonly step: number;
  readonly minibatches: readonly SacMinibatch[];
  readonly normalizer: NormalizerState | null;
  /** The trainer's networks and Adams (updatedState()), when the worker's are stale. */
  readonly state: ReadonlyArray<[string, CheckpointArray]> | null;
}

export type SacUpdateReply =
  /** `stats`: each update's statistics, behavioral cloning's round after it included. */
  | { readonly kind: 'updated'; readonly state: ReadonlyArray<[string, CheckpointArray]>; readonly stats: ReadonlyArray<Readonly<Record<string, number>>> }
  /** The optimizer's NonFiniteLossError message: nothing of the request reaches the acting model. */
  | { readonly kind: 'nonFiniteLoss'; readonly message: string };

/**
 * The memory a request's minibatches move to the worker with: their replay rows, which each
 * sample() makes afresh. The signals' rewards are copied (a provider may hand back a view of memory it keeps).
 */
export function minibatchMemory(minibatches: readonly SacMinibatch[]): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  for (const { rows } of minibatches) {
    const arrays = [...rows.observations, ...rows.nextObservations, rows.continuousActions, rows.discreteActions, rows.actionMasks, rows.rewards, rows.dones];
    for (const array of [...arrays, rows.memories, rows.criticMemories, rows.masks]) {
      if (array !== undefined && array.byteLength > 0) buffers.add(array.buffer as ArrayBuffer);
    }
  }
  return [...buffers];
}
