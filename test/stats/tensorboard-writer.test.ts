import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { listEventFiles, readEventFile, TensorDataType } from '../../src/stats/event-file';
import {
  STAT_KEYS,
  StatsAggregationMethod,
  StatsPropertyType,
  StatsRegistry,
  TENSORBOARD_HIDDEN_KEYS,
} from '../../src/stats/stats-reporter';
import { histogramBucketEdges, histogramOf, TensorboardWriter } from '../../src/stats/tensorboard-writer';
import { tempDir } from '../helpers/paths';

function setup(options: { clearPastData?: boolean } = {}) {
  const runDir = tempDir('tensorboard-writer');
  const logger = memoryLogger();
  const writer = new TensorboardWriter(runDir, {
    logger,
    hiddenKeys: TENSORBOARD_HIDDEN_KEYS,
    clock: () => 1700000000,
    ...options,
  });
  const registry = new StatsRegistry();
  registry.addWriter(writer);
  return { runDir, logger, writer, registry };
}

describe('TensorboardWriter', () => {
  it('writes one event file per behavior with a scalar per key, hidden keys left out', () => {
    const { runDir, writer, registry } = setup();
    const ball = registry.reporter('3DBall');
    ball.addStat(STAT_KEYS.cumulativeReward, 1);
    ball.addStat(STAT_KEYS.cumulativeReward, 2);
    ball.addStat(STAT_KEYS.isTraining, 1);
    ball.setStat(STAT_KEYS.step, 12000);
    ball.addStat('Custom/Coins', 3, StatsAggregationMethod.SUM);
    ball.addStat('Custom/Coins', 4, StatsAggregationMethod.SUM);
    ball.writeStats(12000);
    registry.reporter('Basic').addStat(STAT_KEYS.valueLoss, 0.25);
    registry.reporter('Basic').writeStats(500);

    // Flushed at every write: readable while the run goes on.
    const ballFile = writer.eventFilePath('3DBall')!;
    expect(path.dirname(ballFile)).toBe(path.join(runDir, '3DBall'));
    expect(listEventFiles(path.join(runDir, '3DBall'))).toEqual([ballFile]);
    const events = readEventFile(ballFile);
    expect(events[0].file_version).toBe('brain.Event:2');
    expect(events.slice(1)).toEqual([
      {
        wall_time: 1700000000,
        step: 12000,
        summary: { value: [{ tag: 'Environment/Cumulative Reward', simple_value: 1.5 }] },
      },
      { wall_time: 1700000000, step: 12000, summary: { value: [{ tag: 'Custom/Coins', simple_value: 7 }] } },
    ]);
    const basic = readEventFile(writer.eventFilePath('Basic')!);
    expect(basic.slice(1).map((e) => [e.step, e.summary!.value[0].tag, e.summary!.value[0].simple_value])).toEqual([
      [500, 'Losses/Value Loss', 0.25],
    ]);
    registry.close();
  });

  it('stores scalars as float32, as TensorBoard does', () => {
    const { writer, registry } = setup();
    registry.reporter('B').addStat(STAT_KEYS.learningRate, 0.0003);
    registry.reporter('B').writeStats(1);
    const [, scalar] = readEventFile(writer.eventFilePath('B')!);
    expect(scalar.summary!.value[0].simple_value).toBe(Math.fround(0.0003));
  });

  it('writes the hyperparameters as a text summary for the text plugin', () => {
    const { writer, registry } = setup();
    registry.reporter('3DBall').addProperty(StatsPropertyType.HYPERPARAMETERS, {
      trainer_type: 'ppo',
      hyperparameters: { batch_size: 64 },
    });
    const [, text] = readEventFile(writer.eventFilePath('3DBall')!);
    expect(text.step).toBe(0);
    const value = text.summary!.value[0];
    expect(value.tag).toBe('Hyperparameters/text_summary');
    expect(value.metadata!.plugin_data!.plugin_name).toBe('text');
    expect(value.tensor!.dtype).toBe(TensorDataType.DT_STRING);
    expect(value.tensor!.tensor_shape).toEqual({ dim: [{ size: 1 }] });
    expect(value.tensor!.string_val!.map((bytes) => Buffer.from(bytes).toString('utf8'))).toEqual([
      '\ttrainer_type:\tppo\n\thyperparameters:\t\n\t  batch_size:\t64',
    ]);
  });

  it('adds a <key>_hist histogram for HISTOGRAM stats', () => {
    const { writer, registry } = setup();
    const reporter = registry.reporter('B');
    for (const speed of [1, 1, 0.5, -2]) reporter.addStat('Custom/Speed', speed, StatsAggregationMethod.HISTOGRAM);
    reporter.writeStats(40);
    const [, scalar, histogram] = readEventFile(writer.eventFilePath('B')!);
    expect(scalar.summary!.value[0]).toEqual({ tag: 'Custom/Speed', simple_value: 0.125 });
    expect(histogram.step).toBe(40);
    const value = histogram.summary!.value[0];
    expect(value.tag).toBe('Custom/Speed_hist');
    expect(value.histo).toEqual(histogramOf(Float64Array.of(1, 1, 0.5, -2)));
  });

  it('deletes event files of an earlier run when told to, saying so', () => {
    const { runDir, logger } = setup();
    fs.mkdirSync(path.join(runDir, 'B'));
    fs.writeFileSync(path.join(runDir, 'B', 'events.out.tfevents.1.old.1.0'), 'old');
    fs.writeFileSync(path.join(runDir, 'B', 'B-1000.onnx'), 'model');
    const writer = new TensorboardWriter(runDir, { logger, clearPastData: true });
    writer.writeStats('B', new Map(), 1);
    const newFile = path.basename(writer.eventFilePath('B')!);
    writer.close();
    expect(fs.readdirSync(path.join(runDir, 'B')).sort()).toEqual(['B-1000.onnx', newFile]);
    expect(logger.lines).toEqual([
      {
        level: 'warning',
        message: 'Deleting TensorBoard data events.out.tfevents.1.old.1.0 that was left over from a previous run.',
      },
    ]);
  });

  it('refuses a behavior name that would leave the run folder', () => {
    const { writer } = setup();
    expect(() => writer.writeStats('../../elsewhere', new Map(), 1)).toThrow('outside');
  });
});

describe('histograms', () => {
  it("use TensorFlow's default bucket edges", () => {
    const edges = histogramBucketEdges();
    // numpy on upstream's loop: 1549 edges from -9.920775621859783e+19 to 9.920775621859783e+19.
    expect(edges.length).toBe(1549);
    expect(edges[0]).toBe(-9.920775621859783e19);
    expect(edges[1548]).toBe(9.920775621859783e19);
    expect(edges[774]).toBe(0);
    expect(edges[775]).toBe(1e-12);
    expect(edges[776]).toBe(1.1000000000000002e-12);
  });

  it("match torch's make_histogram", () => {
    // Expected values computed with numpy and torch's make_histogram.
    expect(histogramOf(Float64Array.of(3))).toEqual({
      min: 3,
      max: 3,
      num: 1,
      sum: 3,
      sum_squares: 9,
      bucket_limit: [2.8787120958073054, 3.1665833053880363],
      bucket: [0, 1],
    });
    expect(histogramOf(Float64Array.of(0))).toMatchObject({ bucket_limit: [0, 1e-12], bucket: [0, 1] });
    const spread = histogramOf(Float64Array.of(1, 1, 0.5, -2))!;
    expect(spread.bucket).toHaveLength(591);
    expect(spread.bucket_limit).toHaveLength(591);
    expect(spread.bucket_limit[0]).toBe(-2.1628190051144287);
    const filled = spread.bucket.flatMap((count, i) => (count > 0 ? [[i, count, spread.bucket_limit[i]]] : []));
    expect(filled).toEqual([
      [1, 1, -1.9661990955585713],
      [583, 1, 0.5177616740489182],
      [590, 2, 1.0089710279437536],
    ]);
    expect([spread.min, spread.max, spread.num, spread.sum, spread.sum_squares]).toEqual([-2, 1, 4, 0.5, 6.25]);
    expect(histogramOf(Float64Array.of(NaN, 1e21))).toBeNull();
  });
});
