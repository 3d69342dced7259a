import { memoryLogger } from '../../src/common/logger';
import { ConsoleWriter } from '../../src/stats/console-writer';
import { floatRepr, formatFixed, hyperparametersText, pythonRepr } from '../../src/stats/python-format';
import { STAT_KEYS, StatsAggregationMethod, StatsPropertyType, StatsRegistry } from '../../src/stats/stats-reporter';

function setup() {
  const logger = memoryLogger();
  let now = 100;
  const writer = new ConsoleWriter(logger, () => now);
  const registry = new StatsRegistry();
  registry.addWriter(writer);
  return { logger, registry, advance: (seconds: number) => (now += seconds) };
}

describe('ConsoleWriter', () => {
  it("prints upstream's summary line", () => {
    const { logger, registry, advance } = setup();
    const reporter = registry.reporter('3DBall');
    advance(10.1234);
    for (const reward of [1, 2, 0.702]) reporter.addStat(STAT_KEYS.cumulativeReward, reward);
    reporter.addStat(STAT_KEYS.isTraining, 1);
    reporter.writeStats(12000);
    // numpy: mean 1.234, std 0.5551384211767969
    expect(logger.lines).toEqual([
      {
        level: 'info',
        message: '3DBall. Step: 12000. Time Elapsed: 10.123 s. Mean Reward: 1.234. Std of Reward: 0.555. Training.',
      },
    ]);
  });

  it('says when no episode ended, and when the behavior no longer trains', () => {
    const { logger, registry, advance } = setup();
    const reporter = registry.reporter('Basic');
    advance(2);
    reporter.addStat(STAT_KEYS.isTraining, 1);
    reporter.writeStats(500);
    reporter.addStat(STAT_KEYS.cumulativeReward, -0.5);
    reporter.addStat(STAT_KEYS.isTraining, 0);
    reporter.writeStats(1000);
    reporter.writeStats(1500);
    expect(logger.lines.map((line) => line.message)).toEqual([
      'Basic. Step: 500. Time Elapsed: 2.000 s. No episode was completed since last summary. Training.',
      'Basic. Step: 1000. Time Elapsed: 2.000 s. Mean Reward: -0.500. Std of Reward: 0.000. Not Training.',
      'Basic. Step: 1500. Time Elapsed: 2.000 s. No episode was completed since last summary. Not Training.',
    ]);
  });

  it('shows the group reward instead of the spread, and the ELO under self-play', () => {
    const { logger, registry } = setup();
    const reporter = registry.reporter('SoccerTwos');
    reporter.addStat(STAT_KEYS.cumulativeReward, 0.25);
    reporter.addStat(STAT_KEYS.groupCumulativeReward, 1);
    reporter.addStat(STAT_KEYS.selfPlayElo, 1212.5);
    reporter.writeStats(10);
    reporter.addProperty(StatsPropertyType.SELF_PLAY, true);
    reporter.addStat(STAT_KEYS.cumulativeReward, 0.25);
    reporter.addStat(STAT_KEYS.selfPlayElo, 1212.5);
    reporter.addStat(STAT_KEYS.isTraining, 1, StatsAggregationMethod.AVERAGE);
    reporter.writeStats(20);
    expect(logger.lines.map((line) => line.message)).toEqual([
      'SoccerTwos. Step: 10. Time Elapsed: 0.000 s. Mean Reward: 0.250. Mean Group Reward: 1.000. Not Training.',
      'SoccerTwos. Step: 20. Time Elapsed: 0.000 s. Mean Reward: 0.250. Std of Reward: 0.000. Training. ELO: 1212.500.',
    ]);
  });

  it('prints the hyperparameters of a behavior as upstream', () => {
    const { logger, registry } = setup();
    registry.reporter('3DBall').addProperty(StatsPropertyType.HYPERPARAMETERS, {
      trainer_type: 'ppo',
      hyperparameters: { batch_size: 64, learning_rate: 0.0003, learning_rate_schedule: 'linear' },
      network_settings: { normalize: true, memory: null },
      reward_signals: { extrinsic: { gamma: 0.99, strength: '1.0' } },
      init_path: null,
      threaded: false,
    });
    expect(logger.lines).toEqual([
      {
        level: 'info',
        message:
          'Hyperparameters for behavior name 3DBall: \n' +
          '\ttrainer_type:\tppo\n' +
          '\thyperparameters:\t\n' +
          '\t  batch_size:\t64\n' +
          '\t  learning_rate:\t0.0003\n' +
          '\t  learning_rate_schedule:\tlinear\n' +
          '\tnetwork_settings:\t\n' +
          '\t  normalize:\tTrue\n' +
          '\t  memory:\tNone\n' +
          '\treward_signals:\t\n' +
          '\t  extrinsic:\t\n' +
          '\t    gamma:\t0.99\n' +
          '\t    strength:\t1.0\n' +
          '\tinit_path:\tNone\n' +
          '\tthreaded:\tFalse',
      },
    ]);
  });
});

describe("Python's number and value formatting", () => {
  it("formats like f'{x:0.3f}', rounding exact ties to even", () => {
    // Values from Python 3: 0.0625 -> '0.062', -0.0625 -> '-0.062', 0.1875 -> '0.188'.
    expect(formatFixed(0.0625, 3)).toBe('0.062');
    expect(formatFixed(-0.0625, 3)).toBe('-0.062');
    expect(formatFixed(0.1875, 3)).toBe('0.188');
    expect(formatFixed(2.5, 0)).toBe('2');
    expect(formatFixed(-0, 3)).toBe('-0.000');
    expect(formatFixed(1e21, 3)).toBe('1000000000000000000000.000');
    expect(formatFixed(1.0005, 3)).toBe('1.000'); // 1.0005 is slightly below the tie as a double
    expect(formatFixed(10.1234, 3)).toBe('10.123');
    expect(formatFixed(NaN, 3)).toBe('nan');
    expect(formatFixed(-Infinity, 3)).toBe('-inf');
  });

  it("writes floats as Python's repr and values as str()", () => {
    // Python: repr(0.0003) '0.0003', repr(3e-05) '3e-05', repr(1e16) '1e+16',
    // repr(123456789012345678.0) '1.2345678901234568e+17', repr(2.5e-05) '2.5e-05', repr(1e+22) '1e+22'
    expect(floatRepr(0.0003)).toBe('0.0003');
    expect(floatRepr(1e-4)).toBe('0.0001');
    expect(floatRepr(3e-5)).toBe('3e-05');
    expect(floatRepr(2.5e-5)).toBe('2.5e-05');
    expect(floatRepr(1e16)).toBe('1e+16');
    expect(floatRepr(123456789012345678)).toBe('1.2345678901234568e+17');
    expect(floatRepr(1.5e300)).toBe('1.5e+300');
    expect(floatRepr(12.5)).toBe('12.5');
    expect(floatRepr(2)).toBe('2.0');
    expect(pythonRepr([1, 'a', true, null, { k: "it's" }])).toBe(`[1, 'a', True, None, {'k': "it's"}]`);
    expect(hyperparametersText({ empty: {}, list: ['x', 2.5] })).toBe("\tempty:\t\n\n\tlist:\t['x', 2.5]");
  });
});
