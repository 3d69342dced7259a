/**
 * A results folder as ML-Agents' Python trainer (release 21) writes it, built for the tests:
 * upstream's tags, file names and JSON shapes (training_status.json with paths relative to the
 * trainer's working folder, torch's event file name, timers.json with python_version), written
 * with our TensorBoard writer, which frames events as torch's SummaryWriter does.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { StatsAggregationMethod, StatsSummary, TensorboardWriter } from '../../src/stats';

export const UPSTREAM_RUN = 'ppo_upstream';
export const UPSTREAM_BEHAVIOR = '3DBall';
/** Upstream's tags of a PPO run with curiosity, a curriculum and self-play's ELO. */
export const UPSTREAM_TAGS = [
  'Environment/Cumulative Reward',
  'Environment/Episode Length',
  'Environment/Lesson Number/difficulty',
  'Policy/Entropy',
  'Policy/Learning Rate',
  'Policy/Epsilon',
  'Policy/Beta',
  'Policy/Extrinsic Value Estimate',
  'Policy/Extrinsic Reward',
  'Policy/Curiosity Value Estimate',
  'Policy/Curiosity Reward',
  'Losses/Policy Loss',
  'Losses/Value Loss',
  'Losses/Curiosity Forward Loss',
  'Losses/Curiosity Inverse Loss',
  'Self-play/ELO',
];
export const UPSTREAM_STEPS = [10000, 20000, 30000];

const summary = (value: number) => new StatsSummary(Float64Array.of(value), StatsAggregationMethod.AVERAGE);

/** Writes <results>/ppo_upstream/ as upstream would have; returns the run folder. */
export function writeUpstreamRun(results: string): string {
  const runDir = path.join(results, UPSTREAM_RUN);
  const behaviorDir = path.join(runDir, UPSTREAM_BEHAVIOR);
  fs.mkdirSync(path.join(runDir, 'run_logs'), { recursive: true });
  fs.mkdirSync(behaviorDir, { recursive: true });
  fs.writeFileSync(
    path.join(runDir, 'configuration.yaml'),
    [
      'default_settings: null',
      'behaviors:',
      '  3DBall:',
      '    trainer_type: ppo',
      '    max_steps: 500000',
      '    summary_freq: 10000',
      'environment_parameters:',
      '  difficulty:',
      '    curriculum:',
      '    - name: Easy',
      '      value: 1.0',
      '    - name: Hard',
      '      value: 2.0',
      'checkpoint_settings:',
      '  run_id: ppo_upstream',
      'torch_settings:',
      '  device: null',
      'debug: false',
      '',
    ].join('\n'),
  );
  // A summary a minute.
  let now = 1700000000;
  const writer = new TensorboardWriter(runDir, { logger: memoryLogger(), clock: () => now });
  UPSTREAM_STEPS.forEach((step, i) => {
    now = 1700000000 + 60 * (i + 1);
    writer.writeStats(UPSTREAM_BEHAVIOR, new Map(UPSTREAM_TAGS.map((tag, k) => [tag, summary(i + k / 10)])), step);
  });
  writer.close();
  // torch names its files events.out.tfevents.<seconds>.<host>.<pid>.<n>: ours does too; give it a Python-looking host and pid.
  const [written] = fs.readdirSync(behaviorDir);
  fs.renameSync(path.join(behaviorDir, written), path.join(behaviorDir, 'events.out.tfevents.1700000000.unity-trainer.4242.0'));
  const model = Buffer.from('an upstream .onnx stands here');
  fs.writeFileSync(path.join(behaviorDir, '3DBall-30000.onnx'), model);
  fs.writeFileSync(path.join(behaviorDir, '3DBall-30000.pt'), 'torch state');
  fs.writeFileSync(path.join(runDir, '3DBall.onnx'), model);
  const checkpoint = {
    steps: 30000,
    file_path: 'results/ppo_upstream/3DBall/3DBall-30000.onnx',
    reward: 1.25,
    creation_time: 1700000180.5,
    auxillary_file_paths: ['results/ppo_upstream/3DBall/3DBall-30000.pt'],
  };
  const status = {
    '3DBall': { checkpoints: [checkpoint], final_checkpoint: { ...checkpoint, file_path: 'results/ppo_upstream/3DBall.onnx' }, elo: 1212.5 },
    difficulty: { lesson_num: 1 },
    metadata: { stats_format_version: '0.3.0', mlagents_version: '1.0.0', torch_version: '1.13.1+cu117' },
  };
  fs.writeFileSync(path.join(runDir, 'run_logs', 'training_status.json'), JSON.stringify(status, null, 4));
  const timers = {
    name: 'root',
    gauges: { '3DBall.Environment.CumulativeReward.mean': { value: 2.1, min: 0, max: 2.1, count: 3 } },
    metadata: { timer_format_version: '0.1.0', start_time_seconds: '1700000000', end_time_seconds: '1700000200', python_version: '3.10.12', command_line_arguments: 'mlagents-learn 3DBall.yaml --run-id=ppo_upstream', mlagents_version: '1.0.0', mlagents_envs_version: '1.0.0', communication_protocol_version: '1.5.0', pytorch_version: '1.13.1+cu117', numpy_version: '1.23.5' },
    total: 200.5,
    count: 1,
    self: 0.5,
    children: {
      'TrainerController.start_learning': { total: 200, count: 1, self: 1, children: { env_step: { total: 120, count: 3000, self: 120 }, trainer_advance: { total: 79, count: 3000, self: 79 } } },
    },
  };
  fs.writeFileSync(path.join(runDir, 'run_logs', 'timers.json'), JSON.stringify(timers, null, 4));
  return runDir;
}
