/**
 * The extrinsic signal (upstream's ExtrinsicRewardProvider): the environment's own reward, with
 * nothing to train. Group rewards join it when POCA arrives.
 */
import type { RewardSignalSettings } from '../../config/settings';
import type { CheckpointArray } from '../../networks/checkpoint-file';
import type { RewardBatch, RewardProvider } from './reward-provider';

export class ExtrinsicRewardProvider implements RewardProvider {
  readonly name = 'Extrinsic';
  readonly gamma: number;
  readonly strength: number;
  readonly ignoreDone = false;
  readonly trains = false;

  constructor(settings: RewardSignalSettings) {
    this.gamma = settings.gamma;
    this.strength = settings.strength;
  }

  /** The environment rewards themselves (the same array: the trainers scale a copy). */
  evaluate(batch: RewardBatch): Float32Array {
    return batch.environmentRewards;
  }

  update(): Record<string, number> {
    return {};
  }

  stateArrays(): Map<string, CheckpointArray> {
    return new Map();
  }

  loadStateArrays(): void {}
}
