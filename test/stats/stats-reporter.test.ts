import {
  STAT_KEYS,
  StatsAggregationMethod,
  StatsPropertyType,
  StatsRegistry,
  StatsSummary,
  TENSORBOARD_HIDDEN_KEYS,
  type StatsWriter,
} from '../../src/stats/stats-reporter';

/** Keeps what the reporter hands to writers. */
class RecordingWriter implements StatsWriter {
  written: Array<{ category: string; step: number; values: Map<string, StatsSummary> }> = [];
  added: Array<[string, string, number, StatsAggregationMethod]> = [];
  properties: Array<[string, StatsPropertyType, unknown]> = [];

  writeStats(category: string, values: ReadonlyMap<string, StatsSummary>, step: number): void {
    this.written.push({ category, step, values: new Map(values) });
  }
  onAddStat(category: string, key: string, value: number, aggregation: StatsAggregationMethod): void {
    this.added.push([category, key, value, aggregation]);
  }
  addProperty(category: string, type: StatsPropertyType, value: unknown): void {
    this.properties.push([category, type, value]);
  }
}

describe('StatsSummary', () => {
  it('gives mean, population std, sum and count as numpy does', () => {
    // numpy: mean 1.875, std 1.340475661845451, sum 7.5 for [1, 2, 4, 0.5]
    const summary = new StatsSummary(Float64Array.of(1, 2, 4, 0.5), StatsAggregationMethod.AVERAGE);
    expect(summary.mean).toBe(1.875);
    expect(summary.std).toBeCloseTo(1.340475661845451, 15);
    expect(summary.sum).toBe(7.5);
    expect(summary.num).toBe(4);
    expect(summary.aggregatedValue).toBe(1.875);
    expect(new StatsSummary(Float64Array.of(1, 2, 4, 0.5), StatsAggregationMethod.SUM).aggregatedValue).toBe(7.5);
    const histogram = new StatsSummary(Float64Array.of(1, 2, 4, 0.5), StatsAggregationMethod.HISTOGRAM);
    expect(histogram.aggregatedValue).toBe(1.875);
  });
});

describe('StatsReporter', () => {
  it('summarizes each key by its aggregation method and starts over after each write', () => {
    const registry = new StatsRegistry();
    const writer = new RecordingWriter();
    registry.addWriter(writer);
    const reporter = registry.reporter('3DBall');

    reporter.addStat(STAT_KEYS.cumulativeReward, 1);
    reporter.addStat(STAT_KEYS.cumulativeReward, 2);
    reporter.addStat('Custom/Coins', 3, StatsAggregationMethod.SUM);
    reporter.addStat('Custom/Coins', 4, StatsAggregationMethod.SUM);
    reporter.addStat('Custom/Level', 5, StatsAggregationMethod.MOST_RECENT);
    reporter.addStat('Custom/Level', 7, StatsAggregationMethod.MOST_RECENT);
    reporter.addStat('Custom/Speed', 0.5, StatsAggregationMethod.HISTOGRAM);
    reporter.addStat('Custom/Speed', 1.5, StatsAggregationMethod.HISTOGRAM);
    reporter.setStat(STAT_KEYS.learningRate, 3e-4);
    reporter.setStat(STAT_KEYS.learningRate, 2e-4);
    reporter.writeStats(12000);

    expect(writer.written).toHaveLength(1);
    const { category, step, values } = writer.written[0];
    expect([category, step]).toEqual(['3DBall', 12000]);
    expect([...values.keys()]).toEqual([
      'Environment/Cumulative Reward',
      'Custom/Coins',
      'Custom/Level',
      'Custom/Speed',
      'Policy/Learning Rate',
    ]);
    const aggregated = Object.fromEntries([...values].map(([key, summary]) => [key, summary.aggregatedValue]));
    expect(aggregated).toEqual({
      'Environment/Cumulative Reward': 1.5, // mean of AVERAGE
      'Custom/Coins': 7, // sum of SUM
      'Custom/Level': 7, // last of MOST_RECENT
      'Custom/Speed': 1, // mean of HISTOGRAM, its values kept for the histogram
      'Policy/Learning Rate': 2e-4, // set_stat keeps the latest
    });
    expect(Array.from(values.get('Custom/Speed')!.values)).toEqual([0.5, 1.5]);
    expect(values.get('Custom/Level')!.aggregationMethod).toBe(StatsAggregationMethod.MOST_RECENT);
    expect(values.get('Policy/Learning Rate')!.aggregationMethod).toBe(StatsAggregationMethod.MOST_RECENT);

    // Nothing carries over into the next summary period.
    expect(reporter.getStatsSummary(STAT_KEYS.cumulativeReward)).toBeNull();
    reporter.addStat(STAT_KEYS.episodeLength, 10);
    reporter.writeStats(24000);
    expect([...writer.written[1].values.keys()]).toEqual(['Environment/Episode Length']);
  });

  it('keeps many values per period in order', () => {
    const registry = new StatsRegistry();
    const reporter = registry.reporter('Basic');
    for (let i = 0; i < 1000; i++) reporter.addStat(STAT_KEYS.entropy, i);
    const summary = reporter.getStatsSummary(STAT_KEYS.entropy)!;
    expect(summary.num).toBe(1000);
    expect(summary.values[999]).toBe(999);
    expect(summary.mean).toBe(499.5);
  });

  it('shares one reporter per category and tells every writer of each value and property', () => {
    const registry = new StatsRegistry();
    const first = new RecordingWriter();
    const second = new RecordingWriter();
    registry.addWriter(first);
    const reporter = registry.reporter('Walker');
    registry.addWriter(second); // writers added later still receive everything
    expect(registry.reporter('Walker')).toBe(reporter);

    reporter.addStat('a', 1);
    reporter.setStat('b', 2);
    reporter.addProperty(StatsPropertyType.HYPERPARAMETERS, { batch_size: 64 });
    registry.reporter('Walker').writeStats(5);
    registry.reporter('Other').writeStats(5);

    for (const writer of [first, second]) {
      expect(writer.added).toEqual([
        ['Walker', 'a', 1, StatsAggregationMethod.AVERAGE],
        ['Walker', 'b', 2, StatsAggregationMethod.MOST_RECENT],
      ]);
      expect(writer.properties).toEqual([['Walker', StatsPropertyType.HYPERPARAMETERS, { batch_size: 64 }]]);
      expect(writer.written.map((w) => [w.category, w.values.size])).toEqual([
        ['Walker', 2],
        ['Other', 0],
      ]);
    }
  });

  it("lists upstream's tag names", () => {
    expect(STAT_KEYS.cumulativeReward).toBe('Environment/Cumulative Reward');
    expect(STAT_KEYS.episodeLength).toBe('Environment/Episode Length');
    expect(STAT_KEYS.entropy).toBe('Policy/Entropy');
    expect(STAT_KEYS.signalReward('extrinsic')).toBe('Policy/Extrinsic Reward');
    expect(STAT_KEYS.valueEstimate('extrinsic')).toBe('Policy/Extrinsic Value Estimate');
    expect(STAT_KEYS.signalReward('gail')).toBe('Policy/Gail Reward');
    expect(STAT_KEYS.lessonNumber('wall_height')).toBe('Environment/Lesson Number/wall_height');
    expect([STAT_KEYS.learningRate, STAT_KEYS.epsilon, STAT_KEYS.beta]).toEqual([
      'Policy/Learning Rate',
      'Policy/Epsilon',
      'Policy/Beta',
    ]);
    expect([STAT_KEYS.policyLoss, STAT_KEYS.valueLoss]).toEqual(['Losses/Policy Loss', 'Losses/Value Loss']);
    expect(TENSORBOARD_HIDDEN_KEYS).toEqual(['Is Training', 'Step']);
  });
});
