/**
 * One PPO update over a full update buffer (upstream's PPOTrainer._update_policy): advantages
 * standardized over the buffer, then num_epoch passes of shuffled minibatches of batch_size, one
 * optimizer step each. Shared by the trainer (threaded: false) and the update worker (threaded: true).
 *
 * With memory the buffer holds whole sequences (the trainer appends each trajectory padded to a
 * multiple of sequence_length): the shuffle moves whole sequences, a minibatch is batch_size
 * rounded down to whole sequences, and each sequence starts from the memories stored at its first
 * step; the padding's mask 0 keeps it out of the loss.
 */
import type { PPOSettings } from '../../config/settings';
import type { BehaviorSpec } from '../../env/behavior-spec';
import { ActorCritic } from '../../networks/actor-critic';
import type { DeviceParameters } from '../../networks/device-parameters';
import { AgentBuffer, BufferKey, RewardSignalKeys, observationKey } from '../buffer';
import { rowsAtSequenceStarts } from '../critic-memories';
import { PpoMinibatch } from './loss';
import { PpoOptimizer, PpoUpdateStats } from './optimizer';
import { ReadingPass, runPass } from '../../networks/tensor-io';
import type { PpoTrainerSettings } from './trainer';
import type { Logger } from '../../common/logger';
import { RewardProvider, accumulateStats, rewardBatchOf } from '../reward-signals/reward-provider';
import { createRewardProviders } from '../reward-signals/registry';
import { BehavioralCloning, createBehavioralCloning } from '../behavioral-cloning';

/** A behavior's networks and their optimizer, the same for a seed in the trainer and in its update worker. */
export function createPpoNetworks(
  behavior: string,
  spec: BehaviorSpec,
  settings: PpoTrainerSettings,
  seed: number,
  logger: Logger | null = null,
): { model: ActorCritic; optimizer: PpoOptimizer } {
  const model = new ActorCritic(spec, {
    network: settings.network_settings,
    rewardSignals: Object.keys(settings.reward_signals),
    sharedCritic: settings.hyperparameters.shared_critic,
    seed,
  });
  const optimizer = new PpoOptimizer(model, {
    hyperparameters: settings.hyperparameters,
    maxSteps: settings.max_steps,
    rewardProviders: createRewardProviders(settings.reward_signals, behavior, spec, seed, logger),
    behavioralCloning: createBehavioralCloning(model, behavior, settings, seed),
  });
  return { model, optimizer };
}

/** The mean of each statistic over the update's minibatches: the optimizer's and the reward signals' (their own tags). */
export type PpoUpdateMeans = Map<keyof PpoUpdateStats | string, number>;

/**
 * Updates the optimizer's model on `buffer` (its advantages column is standardized in place) at
 * training step `step`; `random` gives floats in [0, 1) for the shuffles. A non-finite loss throws
 * NonFiniteLossError (src/trainers/non-finite-loss.ts).
 */
export function updateOnBuffer(
  optimizer: PpoOptimizer,
  buffer: AgentBuffer,
  hyperparameters: Pick<PPOSettings, 'batch_size' | 'num_epoch'>,
  random: () => number,
  step: number,
): PpoUpdateMeans {
  return runPass(updatePassOnBuffer(optimizer, buffer, hyperparameters, random, step));
}

/** updateOnBuffer() as a reading pass (tensor-io.ts): the update thread runs it with runPassAsync, on WebGPU too. */
export function updatePassOnBuffer(
  optimizer: PpoOptimizer,
  buffer: AgentBuffer,
  hyperparameters: Pick<PPOSettings, 'batch_size' | 'num_epoch'>,
  random: () => number,
  step: number,
): ReadingPass<PpoUpdateMeans> {
  const sequenceLength = optimizer.model.options.network.memory?.sequence_length ?? 1;
  const signals = optimizer.model.rewardSignals;
  const memory = optimizer.model.memorySize > 0 ? sequenceLength : null;
  return optimizer.updatingOnDevice(
    trainOnBuffer(buffer, { ...hyperparameters, sequenceLength }, optimizer, random, step, function* (batch) {
      return { ...(yield* optimizer.updatePass(minibatchOf(batch, signals, memory), step)) };
    }),
  );
}

/**
 * Upstream's OnPolicyTrainer._update_policy around any on-policy optimizer (PPO's, POCA's): the
 * advantages standardized over the buffer, then num_epoch passes of shuffled minibatches of
 * batch_size (whole sequences of `sequenceLength`), `updateMinibatch` on each, the reward signals
 * that train after it on the same minibatch, behavioral cloning once at the end; the mean of
 * each statistic.
 */
export function* trainOnBuffer(
  buffer: AgentBuffer,
  hyperparameters: Pick<PPOSettings, 'batch_size' | 'num_epoch'> & { readonly sequenceLength: number },
  optimizer: {
    readonly rewardProviders: ReadonlyMap<string, RewardProvider>;
    readonly behavioralCloning: BehavioralCloning | null;
    /** The policy's weights on the GPU during an update that holds them there (PpoOptimizer.updatingOnDevice). */
    readonly deviceParameters?: DeviceParameters | null;
  },
  random: () => number,
  step: number,
  updateMinibatch: (batch: AgentBuffer) => ReadingPass<Record<string, number>>,
): ReadingPass<PpoUpdateMeans> {
  const { num_epoch: numEpoch, sequenceLength } = hyperparameters;
  // As upstream: at least one sequence, and whole ones.
  const batchSize = Math.max(hyperparameters.batch_size - (hyperparameters.batch_size % sequenceLength), sequenceLength);
  const advantages = buffer.get(BufferKey.ADVANTAGES);
  advantages.set(standardized(advantages.rows), 1);

  const totals = new Map<string, { sum: number; count: number }>();
  const batchCount = Math.floor(buffer.numExperiences / batchSize);
  const trainedSignals = [...optimizer.rewardProviders.values()].filter((provider) => provider.trains);
  for (let epoch = 0; epoch < numEpoch; epoch++) {
    buffer.shuffle(sequenceLength, random);
    for (let b = 0; b < batchCount; b++) {
      const batch = buffer.makeMiniBatch(b * batchSize, (b + 1) * batchSize);
      accumulateStats(totals, yield* updateMinibatch(batch));
      // Upstream's update_reward_signals: each signal trains on the same minibatch, after the policy.
      if (trainedSignals.length > 0) {
        const rewardBatch = rewardBatchOf(batch);
        for (const provider of trainedSignals) accumulateStats(totals, yield* provider.updatePass(rewardBatch));
      }
    }
  }
  const means: PpoUpdateMeans = new Map([...totals].map(([key, { sum, count }]) => [key, sum / count]));
  // Upstream's bc_module.update(), after the policy's update.
  const cloning = optimizer.behavioralCloning === null ? {} : yield* optimizer.behavioralCloning.updatePass(step, optimizer.deviceParameters ?? null);
  for (const [key, value] of Object.entries(cloning)) means.set(key, value);
  return means;
}

/** A minibatch's arrays; `sequenceLength` with memory (null without). */
export function minibatchOf(batch: AgentBuffer, signals: readonly string[], sequenceLength: number | null): PpoMinibatch {
  const count = batch.numExperiences;
  const rows = (key: string): Float32Array => (batch.has(key) ? batch.get(key).rows : new Float32Array(0));
  // Each sequence's memories: those stored at its first step.
  const startsOf = (key: string, length: number): Float32Array => rowsAtSequenceStarts(batch.get(key).rows, batch.get(key).width, length);
  const returns: Record<string, Float32Array> = {};
  const oldValues: Record<string, Float32Array> = {};
  for (const signal of signals) {
    returns[signal] = rows(RewardSignalKeys.returns(signal));
    // Upstream's value_estimates_key names its returns column: by the update the returns have
    // overwritten the estimates, so its trust-region value loss clips around the returns, which
    // leaves the plain squared error. We match what it computes.
    oldValues[signal] = returns[signal];
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
    ...(sequenceLength === null
      ? {}
      : {
          masks: rows(BufferKey.MASKS),
          sequences: {
            length: sequenceLength,
            actor: startsOf(BufferKey.MEMORY, sequenceLength),
            critic: startsOf(BufferKey.CRITIC_MEMORY, sequenceLength),
          },
        }),
  };
}

/** The obs:i keys of a buffer, in observation order. */
function observationKeys(buffer: AgentBuffer): string[] {
  const keys: string[] = [];
  for (let i = 0; buffer.has(observationKey(i)); i++) keys.push(observationKey(i));
  return keys;
}

/** (x - mean) / (std + 1e-10), std the population one, as upstream normalizes advantages. */
function standardized(values: Float32Array): Float32Array {
  let sum = 0;
  for (const v of values) sum += v;
  const m = values.length === 0 ? 0 : sum / values.length;
  let squares = 0;
  for (const v of values) squares += (v - m) * (v - m);
  const std = Math.sqrt(squares / values.length);
  return Float32Array.from(values, (v) => (v - m) / (std + 1e-10));
}
