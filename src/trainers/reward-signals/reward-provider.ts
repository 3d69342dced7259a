/**
 * The reward-provider plug-in (upstream's torch_entities/components/reward_providers): each
 * reward signal of a behavior's reward_signals gives a reward per experience (evaluate), may
 * train on minibatches (update), and carries its own gamma, strength and done handling. PPO and
 * SAC drive every signal through this interface; a new signal is one file and one line in
 * ./registry.ts.
 */
import type { CheckpointArray } from '../../networks/checkpoint-file';
import type { RunningNormalizer } from '../../networks/normalizer';
import type { ReadingPass } from '../../networks/tensor-io';
import { AgentBuffer, BufferKey, nextObservationKey, observationKey } from '../buffer';

/** The experiences a provider reads: rows of the trajectory, update buffer or replay sample. */
export interface RewardBatch {
  readonly count: number;
  /** Each observation, count x its size (obs:i). */
  readonly observations: readonly Float32Array[];
  /** Each next observation (next_obs:i), where the source holds them. */
  readonly nextObservations?: readonly Float32Array[];
  readonly environmentRewards: Float32Array;
  /** The group reward that followed each step (group_reward), where the source holds it. */
  readonly groupRewards?: Float32Array;
  /** The groupmates' rewards, count x slots, absent ones 0 (groupmate_reward), where the source holds them. */
  readonly groupmateRewards?: Float32Array;
  readonly continuousActions?: Float32Array;
  readonly discreteActions?: Float32Array | Int32Array;
  readonly dones?: Float32Array;
  /** 1 on experiences, 0 on the padding of recurrent sequences (upstream's masks); all 1 when absent. */
  readonly masks?: Float32Array;
}

export interface RewardProvider {
  /** Upstream's provider name ("Extrinsic", "RND"): stat tags are built from it. */
  readonly name: string;
  readonly gamma: number;
  readonly strength: number;
  /**
   * When true, a return runs on past a true episode end (the bootstrap value is kept): upstream
   * sets it for the intrinsic signals, whose rewards have no natural end.
   */
  readonly ignoreDone: boolean;
  /** Whether update() trains anything (the extrinsic signal does not). */
  readonly trains: boolean;
  /**
   * Whether update() reads nextObservations (curiosity's forward model does). Without such a
   * signal PPO keeps no next observations in its update buffer: for a camera they are half of it.
   */
  readonly readsNextObservations?: boolean;
  /**
   * The observation normalizer that its passes feed (RND's: evaluate() and update() alike), if
   * any. PPO's threaded updates merge what each thread's passes added (../ppo/update-protocol.ts).
   */
  readonly normalizer?: RunningNormalizer | null;
  /** The unscaled reward of each row (strength is applied by the trainer). */
  evaluate(batch: RewardBatch): Float32Array;
  /** One training step on a minibatch; the statistics under upstream's tags. */
  update(batch: RewardBatch): Record<string, number>;
  /** update() as a reading pass (tensor-io.ts): PPO's update thread runs it with runPassAsync, on WebGPU too. */
  updatePass(batch: RewardBatch): ReadingPass<Record<string, number>>;
  /** Everything training changes (weights, optimizer state, normalizer), under names of its own. */
  stateArrays(): Map<string, CheckpointArray>;
  /** Restores stateArrays(); a missing or misshapen array throws, naming it. */
  loadStateArrays(arrays: ReadonlyMap<string, CheckpointArray>): void;
}

/** A provider's arrays inside a trainer checkpoint: reward_signals.<signal>.<array>. */
export function providerArrayPrefix(signal: string): string {
  return `reward_signals.${signal}.`;
}

/** Every provider's arrays, prefixed with its signal (for the trainers' checkpoints). */
export function providersStateArrays(providers: ReadonlyMap<string, RewardProvider>): Array<[string, CheckpointArray]> {
  const arrays: Array<[string, CheckpointArray]> = [];
  for (const [signal, provider] of providers) {
    for (const [key, values] of provider.stateArrays()) arrays.push([providerArrayPrefix(signal) + key, values]);
  }
  return arrays;
}

/** Restores providersStateArrays() into each provider. */
export function loadProvidersStateArrays(providers: ReadonlyMap<string, RewardProvider>, arrays: ReadonlyMap<string, CheckpointArray>): void {
  for (const [signal, provider] of providers) {
    const prefix = providerArrayPrefix(signal);
    const own = new Map<string, CheckpointArray>();
    for (const [key, values] of arrays) if (key.startsWith(prefix)) own.set(key.slice(prefix.length), values);
    provider.loadStateArrays(own);
  }
}

/** The rows of an AgentBuffer (a trajectory's or a minibatch's) as a provider reads them. */
export function rewardBatchOf(buffer: AgentBuffer): RewardBatch {
  const columns = (key: (i: number) => string): Float32Array[] => {
    const found: Float32Array[] = [];
    for (let i = 0; buffer.has(key(i)); i++) found.push(buffer.get(key(i)).rows);
    return found;
  };
  const optional = (key: string): Float32Array | undefined => (buffer.has(key) ? buffer.get(key).rows : undefined);
  return {
    count: buffer.numExperiences,
    observations: columns(observationKey),
    nextObservations: columns(nextObservationKey),
    environmentRewards: buffer.get(BufferKey.ENVIRONMENT_REWARDS).rows,
    groupRewards: optional(BufferKey.GROUP_REWARD),
    groupmateRewards: optional(BufferKey.GROUPMATE_REWARDS),
    continuousActions: optional(BufferKey.CONTINUOUS_ACTION),
    discreteActions: optional(BufferKey.DISCRETE_ACTION),
    dones: optional(BufferKey.DONE),
    masks: optional(BufferKey.MASKS),
  };
}

/** Mean of each statistic over a list of update() results (upstream averages them per update). */
export function accumulateStats(totals: Map<string, { sum: number; count: number }>, stats: Record<string, number>): void {
  for (const [key, value] of Object.entries(stats)) {
    const total = totals.get(key) ?? { sum: 0, count: 0 };
    total.sum += value;
    total.count++;
    totals.set(key, total);
  }
}
