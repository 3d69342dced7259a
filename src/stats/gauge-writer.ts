/**
 * Mirrors every summary into the timer gauges (stats.py GaugeWriter), so that timers.json ends
 * with the last mean and sum of each stat: `<category>.<key>.mean` and `.sum`, with "/" turned
 * into "." and spaces removed ("3DBall.Environment.CumulativeReward.mean").
 */
import type { StatsSummary, StatsWriter } from './stats-reporter';
import { timers, type TimerStack } from './timers';

function gaugeName(text: string): string {
  return text.replaceAll('/', '.').replaceAll(' ', '');
}

export class GaugeWriter implements StatsWriter {
  constructor(private readonly stack: TimerStack = timers) {}

  writeStats(category: string, values: ReadonlyMap<string, StatsSummary>): void {
    for (const [key, summary] of values) {
      this.stack.setGauge(gaugeName(`${category}.${key}.mean`), summary.mean);
      this.stack.setGauge(gaugeName(`${category}.${key}.sum`), summary.sum);
    }
  }
}
