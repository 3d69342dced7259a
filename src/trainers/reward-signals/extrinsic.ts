/**
 * The extrinsic signal (upstream's ExtrinsicRewardProvider): the environment's own reward plus
 * the group reward, with nothing to train. POCA also adds the groupmates' own rewards
 * (addGroupmateRewards), so that an agent learns to help the others earn theirs.
 */
import type { RewardSignalSettings } from '../../config/settings';
import type { CheckpointArray } from '../../networks/checkpoint-file';
import { ReadingPass, passReadingNothing } from '../../networks/tensor-io';
import type { RewardBatch, RewardProvider } from './reward-provider';

export class ExtrinsicRewardProvider implements RewardProvider {
  readonly name = 'Extrinsic';
  readonly gamma: number;
  readonly strength: number;
  readonly ignoreDone = false;
  readonly trains = false;
  /** Set by POCA, as upstream's optimizer sets add_groupmate_rewards. */
  addGroupmateRewards = false;

  constructor(settings: RewardSignalSettings) {
    this.gamma = settings.gamma;
    this.strength = settings.strength;
  }

  /** Each step's own reward, plus the groupmates' (with addGroupmateRewards), plus the group reward. */
  evaluate(batch: RewardBatch): Float32Array {
    const rewards = batch.environmentRewards.slice();
    const mates = this.addGroupmateRewards ? batch.groupmateRewards : undefined;
    if (mates !== undefined) {
      const slots = mates.length / batch.count;
      for (let i = 0; i < batch.count; i++) {
        for (let m = 0; m < slots; m++) rewards[i] += mates[i * slots + m];
      }
    }
    const group = batch.groupRewards;
    if (group !== undefined) for (let i = 0; i < batch.count; i++) rewards[i] += group[i];
    return rewards;
  }

  update(): Record<string, number> {
    return {};
  }

  updatePass(): ReadingPass<Record<string, number>> {
    return passReadingNothing(() => ({}));
  }

  stateArrays(): Map<string, CheckpointArray> {
    return new Map();
  }

  loadStateArrays(): void {}
}
