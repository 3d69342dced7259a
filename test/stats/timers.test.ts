import * as fs from 'fs';
import * as path from 'path';
import { GaugeWriter } from '../../src/stats/gauge-writer';
import { StatsRegistry, STAT_KEYS } from '../../src/stats/stats-reporter';
import { TIMER_FORMAT_VERSION, TimerStack, writeTimingTree } from '../../src/stats/timers';
import { tempDir } from '../helpers/paths';

/** A stack on a clock the test moves by hand. */
function manualTimers() {
  let seconds = 0;
  let wall = 1700000000.7;
  const stack = new TimerStack(
    () => seconds,
    () => wall,
  );
  return {
    stack,
    advance: (delta: number) => {
      seconds += delta;
      wall += delta;
    },
  };
}

describe('TimerStack', () => {
  it("builds upstream's tree: totals, counts, self time and nesting", () => {
    const { stack, advance } = manualTimers();
    for (let i = 0; i < 2; i++) {
      stack.time('env_step', () => {
        advance(1);
        stack.time('communicator.exchange', () => advance(2));
      });
    }
    stack.time('trainer_advance', () => advance(0.5));
    advance(0.25);
    const tree = stack.timingTree();
    expect(Object.keys(tree)).toEqual(['name', 'metadata', 'total', 'count', 'self', 'children']);
    expect(tree).toMatchObject({
      name: 'root',
      total: 6.75,
      count: 1,
      self: 0.25,
      children: {
        env_step: {
          total: 6,
          count: 2,
          self: 2,
          children: { 'communicator.exchange': { total: 4, count: 2, self: 4 } },
        },
        trainer_advance: { total: 0.5, count: 1, self: 0.5 },
      },
    });
    expect(Object.keys(tree.children!.env_step)).toEqual(['total', 'count', 'self', 'children']);
    expect(tree.metadata).toMatchObject({
      timer_format_version: TIMER_FORMAT_VERSION,
      start_time_seconds: '1700000000',
      end_time_seconds: '1700000007',
      node_version: process.version,
    });
    expect(Object.keys(tree.metadata!)).toEqual([
      'timer_format_version',
      'start_time_seconds',
      'node_version',
      'command_line_arguments',
      'end_time_seconds',
    ]);
  });

  it('times a failing block and rethrows', () => {
    const { stack, advance } = manualTimers();
    expect(() =>
      stack.time('fails', () => {
        advance(1);
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(stack.timingTree().children!.fails).toEqual({ total: 1, count: 1, self: 1 });
  });

  it('keeps concurrent asynchronous blocks under their own parents', async () => {
    const stack = new TimerStack();
    const pause = () => new Promise((resolve) => setTimeout(resolve, 5));
    await Promise.all([
      stack.time('worker 0', async () => {
        await pause();
        await stack.time('exchange', pause);
      }),
      stack.time('worker 1', async () => {
        await stack.time('exchange', pause);
        await pause();
      }),
    ]);
    const children = stack.timingTree().children!;
    expect(Object.keys(children)).toEqual(['worker 0', 'worker 1']);
    for (const worker of ['worker 0', 'worker 1']) {
      expect(children[worker].count).toBe(1);
      expect(Object.keys(children[worker].children!)).toEqual(['exchange']);
      expect(children[worker].children!.exchange.count).toBe(1);
      expect(children[worker].total).toBeGreaterThanOrEqual(children[worker].children!.exchange.total);
    }
  });

  it('merges timings from elsewhere as parallel work', () => {
    const { stack } = manualTimers();
    const worker = manualTimers();
    worker.stack.time('update', () => worker.advance(3));
    stack.merge(worker.stack.timingTree(), 'trainer_thread');
    stack.merge(worker.stack.timingTree(), 'trainer_thread');
    const merged = stack.timingTree().children!.trainer_thread;
    expect(merged).toEqual({
      total: 6,
      count: 2,
      is_parallel: true,
      self: 0,
      children: { update: { total: 6, count: 2, is_parallel: true, self: 6 } },
    });
  });

  it('keeps gauges of the stats summaries and writes run_logs/timers.json', () => {
    const { stack } = manualTimers();
    const registry = new StatsRegistry();
    registry.addWriter(new GaugeWriter(stack));
    const reporter = registry.reporter('3DBall');
    reporter.addStat(STAT_KEYS.cumulativeReward, 1);
    reporter.addStat(STAT_KEYS.cumulativeReward, 3);
    reporter.writeStats(1);
    reporter.addStat(STAT_KEYS.cumulativeReward, 5);
    reporter.writeStats(2);
    stack.setGauge('ignored', NaN);

    const runLogs = path.join(tempDir('timers'), 'run_logs');
    const file = writeTimingTree(runLogs, stack);
    expect(file).toBe(path.join(runLogs, 'timers.json'));
    const text = fs.readFileSync(file, 'utf8');
    expect(text.split('\n')[1]).toBe('    "name": "root",');
    const written = JSON.parse(text);
    expect(Object.keys(written)).toEqual(['name', 'gauges', 'metadata', 'total', 'count', 'self']);
    expect(written.gauges).toEqual({
      '3DBall.Environment.CumulativeReward.mean': { value: 5, min: 2, max: 5, count: 2 },
      '3DBall.Environment.CumulativeReward.sum': { value: 5, min: 4, max: 5, count: 2 },
    });
  });
});
