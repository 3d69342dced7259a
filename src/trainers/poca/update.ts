/**
 * POCA's networks and one update over a full buffer (upstream's POCATrainer._update_policy, the
 * on-policy loop of ../ppo/update.ts with POCA's minibatches), shared by the trainer
 * (threaded: false) and its update worker (threaded: true, ./update-worker.ts); and the messages
 * between the two.
 *
 * The worker owns a copy of the actor, the critic, their Adams, the reward signals and behavioral
 * cloning, which travel as one checkpoint's bytes (the optimizer's saveState): the main thread's
 * copy when the worker's is stale (its first update, a restored checkpoint), the worker's after
 * each update. The main thread keeps feeding the actor's and the critic's normalizers and the
 * critic's count of members (upstream's _current_max_agents) while an update runs: each request
 * carries them as they are, and the main thread keeps its own when it takes the worker's state
 * (the count: the larger). Reward signals' normalizers are kept as PPO's are (../ppo/update-protocol.ts).
 */
import type { Logger } from '../../common/logger';
import type { BehaviorSpec } from '../../env/behavior-spec';
import { ActorCritic } from '../../networks/actor-critic';
import type { NormalizerState } from '../../networks/normalizer';
import { PocaCritic } from '../../networks/poca-critic';
import { createBehavioralCloning } from '../behavioral-cloning';
import { AgentBuffer, BufferKey, RewardSignalKeys, groupObservationKey, groupSlots, observationKey } from '../buffer';
import { rowsAtSequenceStarts } from '../critic-memories';
import { PackedColumn } from '../ppo/update-protocol';
import { PpoUpdateMeans, minibatchOf, trainOnBuffer } from '../ppo/update';
import { ReadingPass, runPass } from '../../networks/tensor-io';
import { ExtrinsicRewardProvider } from '../reward-signals/extrinsic';
import { createRewardProviders } from '../reward-signals/registry';
import { GroupActionBatch } from '../../networks/poca-critic';
import { PocaMinibatch, PocaOptimizer } from './optimizer';
import type { PocaTrainerSettings } from './trainer';

export interface PocaNetworks {
  readonly model: ActorCritic;
  readonly critic: PocaCritic;
  readonly optimizer: PocaOptimizer;
}

/** A behavior's actor, centralized critic and their optimizer, the same for a seed in the trainer and in its update worker. */
export function createPocaNetworks(behavior: string, spec: BehaviorSpec, settings: PocaTrainerSettings, seed: number, logger: Logger | null = null): PocaNetworks {
  const signals = Object.keys(settings.reward_signals);
  const model = new ActorCritic(spec, { network: settings.network_settings, rewardSignals: signals, sharedCritic: false, actorOnly: true, seed });
  const critic = new PocaCritic(spec, settings.network_settings, signals, seed + 1);
  const rewardProviders = createRewardProviders(settings.reward_signals, behavior, spec, seed, logger);
  // Upstream's POCA optimizer: an agent's extrinsic reward includes its groupmates' own.
  for (const provider of rewardProviders.values()) if (provider instanceof ExtrinsicRewardProvider) provider.addGroupmateRewards = true;
  const optimizer = new PocaOptimizer(model, critic, {
    hyperparameters: settings.hyperparameters,
    maxSteps: settings.max_steps,
    rewardProviders,
    behavioralCloning: createBehavioralCloning(model, behavior, settings, seed),
  });
  return { model, critic, optimizer };
}

/** Updates the actor and the critic on `buffer` at training step `step`; `random` gives the shuffles' floats in [0, 1). */
export function updatePocaOnBuffer(optimizer: PocaOptimizer, buffer: AgentBuffer, settings: PocaTrainerSettings, random: () => number, step: number): PpoUpdateMeans {
  return runPass(updatePocaPassOnBuffer(optimizer, buffer, settings, random, step));
}

/** updatePocaOnBuffer() as a reading pass (tensor-io.ts): the update thread runs it with runPassAsync, on WebGPU too. */
export function updatePocaPassOnBuffer(optimizer: PocaOptimizer, buffer: AgentBuffer, settings: PocaTrainerSettings, random: () => number, step: number): ReadingPass<PpoUpdateMeans> {
  const sequenceLength = settings.network_settings.memory?.sequence_length ?? 1;
  const signals = Object.keys(settings.reward_signals);
  const memory = optimizer.critic.memorySize > 0 ? sequenceLength : null;
  return optimizer.updatingOnDevice(
    trainOnBuffer(buffer, { ...settings.hyperparameters, sequenceLength }, optimizer, random, step, function* (batch) {
      return { ...(yield* optimizer.updatePass(pocaMinibatchOf(batch, signals, memory), step)) };
    }),
  );
}

/** A POCA minibatch of a buffer's rows: PPO's, the baselines and the group; `sequenceLength` with memory (null without). */
function pocaMinibatchOf(batch: AgentBuffer, signals: readonly string[], sequenceLength: number | null): PocaMinibatch {
  const oldBaselines: Record<string, Float32Array> = {};
  for (const signal of signals) oldBaselines[signal] = batch.get(RewardSignalKeys.baselineEstimates(signal)).rows;
  const ppo = minibatchOf(batch, signals, sequenceLength);
  const baselineMemories = batch.get(BufferKey.BASELINE_MEMORY);
  return {
    ...ppo,
    oldBaselines,
    group: groupBatchOf(batch, ppo.count),
    ...(ppo.sequences === undefined
      ? {}
      : {
          criticSequences: {
            length: ppo.sequences.length,
            value: ppo.sequences.critic,
            baseline: rowsAtSequenceStarts(baselineMemories.rows, baselineMemories.width, ppo.sequences.length),
          },
        }),
  };
}

/** The critic's view of `count` rows of a buffer with group columns. */
export function groupBatchOf(buffer: AgentBuffer, count: number): GroupActionBatch {
  const observations: Float32Array[] = [];
  const groupObservations: Float32Array[] = [];
  for (let k = 0; buffer.has(observationKey(k)); k++) {
    observations.push(buffer.get(observationKey(k)).rows);
    groupObservations.push(buffer.get(groupObservationKey(k)).rows);
  }
  const rows = (key: string) => (buffer.has(key) ? buffer.get(key).rows : new Float32Array(0));
  return {
    count,
    slots: groupSlots(buffer),
    observations,
    groupObservations,
    groupContinuousActions: rows(BufferKey.GROUP_CONTINUOUS_ACTION),
    groupDiscreteActions: rows(BufferKey.GROUP_DISCRETE_ACTION),
  };
}

/** What the main thread feeds while an update runs, as it is when the update starts. */
export interface PocaFedState {
  readonly actorNormalizer: NormalizerState | null;
  readonly criticNormalizer: NormalizerState | null;
  readonly maxAgents: number;
}

export interface PocaUpdateRequest {
  /** The training step the schedules are read at. */
  readonly step: number;
  readonly columns: readonly PackedColumn[];
  /** The main thread's optimizer state (saveState's bytes), when the worker's is stale. */
  readonly state: Uint8Array | null;
  readonly fed: PocaFedState;
  /** The reward providers' normalizers on the main thread now, by signal. */
  readonly rewardSignalNormalizers: ReadonlyArray<[string, NormalizerState]>;
}

export type PocaUpdateReply =
  | {
      readonly kind: 'updated';
      /** The worker's optimizer state after the update (saveState's bytes). */
      readonly state: Uint8Array;
      readonly means: ReadonlyArray<[string, number]>;
      /** By signal, the statistics of the observations the worker's updates fed its normalizer. */
      readonly addedToNormalizers: ReadonlyArray<[string, NormalizerState]>;
    }
  /** The optimizer's NonFiniteLossError message: nothing of the update reaches the acting model. */
  | { readonly kind: 'nonFiniteLoss'; readonly message: string };

/** The normalizers and member count the main thread feeds. */
export function fedStateOf({ model, critic }: PocaNetworks): PocaFedState {
  return { actorNormalizer: model.normalizer?.state() ?? null, criticNormalizer: critic.normalizer?.state() ?? null, maxAgents: critic.maxAgents };
}

/** Puts a PocaFedState back; the member count never goes down (it is a maximum). */
export function restoreFedState({ model, critic }: PocaNetworks, fed: PocaFedState): void {
  if (fed.actorNormalizer !== null) model.normalizer!.copyFrom(fed.actorNormalizer);
  if (fed.criticNormalizer !== null) critic.normalizer!.copyFrom(fed.criticNormalizer);
  critic.maxAgents = Math.max(critic.maxAgents, fed.maxAgents);
}
