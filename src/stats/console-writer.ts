/**
 * The console lines of mlagents-learn (stats.py ConsoleWriter), word for word:
 *
 *     3DBall. Step: 12000. Time Elapsed: 10.123 s. Mean Reward: 1.234. Std of Reward: 0.567. Training.
 *
 * and the hyperparameters of each behavior when its trainer starts. Lines go to a Logger, which
 * adds the `[INFO] ` prefix.
 */
import type { Logger } from '../common/logger';
import { formatFixed, hyperparametersText, type Hyperparameters } from './python-format';
import { STAT_KEYS, StatsPropertyType, type StatsSummary, type StatsWriter } from './stats-reporter';

export class ConsoleWriter implements StatsWriter {
  private readonly startSeconds: number;
  private selfPlay = false;

  /** `clock` gives seconds; elapsed time counts from construction, as upstream's. */
  constructor(
    private readonly logger: Logger,
    private readonly clock: () => number = () => performance.now() / 1000,
  ) {
    this.startSeconds = clock();
  }

  writeStats(category: string, values: ReadonlyMap<string, StatsSummary>, step: number): void {
    const isTraining = values.get(STAT_KEYS.isTraining);
    const trainingState = isTraining !== undefined && isTraining.aggregatedValue > 0 ? 'Training' : 'Not Training';
    const parts = [
      category,
      `Step: ${step}`,
      `Time Elapsed: ${formatFixed(this.clock() - this.startSeconds, 3)} s`,
    ];
    const reward = values.get(STAT_KEYS.cumulativeReward);
    if (reward !== undefined) {
      parts.push(`Mean Reward: ${formatFixed(reward.mean, 3)}`);
      const groupReward = values.get(STAT_KEYS.groupCumulativeReward);
      parts.push(
        groupReward !== undefined
          ? `Mean Group Reward: ${formatFixed(groupReward.mean, 3)}`
          : `Std of Reward: ${formatFixed(reward.std, 3)}`,
      );
      parts.push(trainingState);
      const elo = values.get(STAT_KEYS.selfPlayElo);
      if (this.selfPlay && elo !== undefined) parts.push(`ELO: ${formatFixed(elo.mean, 3)}`);
    } else {
      parts.push('No episode was completed since last summary', trainingState);
    }
    this.logger.info(`${parts.join('. ')}.`);
  }

  addProperty(category: string, type: StatsPropertyType, value: unknown): void {
    if (type === StatsPropertyType.HYPERPARAMETERS) {
      this.logger.info(
        `Hyperparameters for behavior name ${category}: \n${hyperparametersText(value as Hyperparameters)}`,
      );
    } else if (type === StatsPropertyType.SELF_PLAY) {
      this.selfPlay = value === true;
    }
  }
}
