/**
 * results/<run-id>/configuration.yaml: ML-Agents' RunOptions.as_dict() as PyYAML dumps it
 * (learn.py write_run_options: yaml.dump(..., sort_keys=False)), and the round trip through it.
 */
import { memoryLogger } from '../../src/common/logger';
import { loadRunOptions, RunOptions, toResolvedYaml } from '../../src/config';
import { pythonFloat } from '../../src/config/resolved-yaml';
import { load, writeConfig } from './config-helpers';

const NETWORK = (indent: string, hiddenUnits = 128, normalize = false) =>
  [
    `${indent}normalize: ${normalize}`,
    `${indent}hidden_units: ${hiddenUnits}`,
    `${indent}num_layers: 2`,
    `${indent}vis_encode_type: simple`,
    `${indent}memory: null`,
    `${indent}goal_conditioning_type: hyper`,
    `${indent}deterministic: false`,
  ].join('\n');

/** What ML-Agents release 21 writes for `behaviors: {3DBall: ...}` run with --run-id=first. */
const EXPECTED_3DBALL = `default_settings: null
behaviors:
  3DBall:
    trainer_type: ppo
    hyperparameters:
      batch_size: 64
      buffer_size: 12000
      learning_rate: 0.0003
      beta: 0.001
      epsilon: 0.2
      lambd: 0.99
      num_epoch: 3
      shared_critic: false
      learning_rate_schedule: linear
      beta_schedule: linear
      epsilon_schedule: linear
    checkpoint_interval: 500000
    network_settings:
${NETWORK('      ', 128, true)}
    reward_signals:
      extrinsic:
        gamma: 0.99
        strength: 1.0
        network_settings:
${NETWORK('          ')}
    init_path: null
    keep_checkpoints: 5
    even_checkpoints: false
    max_steps: 500000
    time_horizon: 1000
    summary_freq: 12000
    threaded: false
    self_play: null
    behavioral_cloning: null
env_settings:
  env_path: null
  env_args: null
  base_port: 5005
  num_envs: 1
  num_areas: 1
  timeout_wait: 60
  seed: -1
  max_lifetime_restarts: 10
  restarts_rate_limit_n: 1
  restarts_rate_limit_period_s: 60
engine_settings:
  width: 84
  height: 84
  quality_level: 5
  time_scale: 20
  target_frame_rate: -1
  capture_frame_rate: 60
  no_graphics: false
  no_graphics_monitor: false
environment_parameters: null
checkpoint_settings:
  run_id: first
  initialize_from: null
  load_model: false
  resume: false
  force: false
  train_model: false
  inference: false
  results_dir: results
torch_settings:
  device: null
debug: false
`;

const BALL_YAML = `behaviors:
  3DBall:
    trainer_type: ppo
    hyperparameters:
      batch_size: 64
      buffer_size: 12000
      learning_rate: 0.0003
      beta: 0.001
      epsilon: 0.2
      lambd: 0.99
      num_epoch: 3
      learning_rate_schedule: linear
    network_settings:
      normalize: true
      hidden_units: 128
      num_layers: 2
      vis_encode_type: simple
    reward_signals:
      extrinsic:
        gamma: 0.99
        strength: 1.0
    keep_checkpoints: 5
    max_steps: 500000
    time_horizon: 1000
    summary_freq: 12000
`;

/** Every kind of section: defaults, memory, self-play, cloning, GAIL, samplers, curricula. */
const EVERYTHING_YAML = `default_settings:
  trainer_type: ppo
  hyperparameters: {batch_size: 32, buffer_size: 320, learning_rate: 1.0e-5}
behaviors:
  Striker:
    network_settings: {memory: {sequence_length: 16, memory_size: 64}}
    self_play: {save_steps: 5000}
    behavioral_cloning: {demo_path: demos/striker.demo, steps: 1000}
    reward_signals:
      gail: {demo_path: demos/striker.demo, encoding_size: 64}
  Goalie:
    trainer_type: sac
    hyperparameters: {steps_per_update: 10.0}
    even_checkpoints: true
    max_steps: 1e6
env_settings:
  env_path: Builds/Soccer.x86_64
  env_args: [--level, 'yes']
  num_envs: 2
engine_settings:
  time_scale: 1
environment_parameters:
  mass: 2
  gravity: {sampler_type: gaussian, sampler_parameters: {mean: 9.81, st_dev: 0.5}}
  ranges: {sampler_type: multirangeuniform, sampler_parameters: {intervals: [[1, 2], [3.5, 4]]}}
  wall:
    curriculum:
      - name: Low
        completion_criteria: {behavior: Striker, measure: progress, threshold: 0.25}
        value: {sampler_type: uniform, sampler_parameters: {min_value: 0, max_value: 1.5}}
      - name: High
        value: 4
checkpoint_settings:
  run_id: '2024'
torch_settings:
  device: cuda:0
`;

describe('configuration.yaml text', () => {
  it("is ML-Agents' for upstream's 3DBall configuration", () => {
    expect(toResolvedYaml(load(BALL_YAML, '--run-id=first').options)).toBe(EXPECTED_3DBALL);
  });

  it('writes nested sections, lists and samplers in PyYAML block style', () => {
    const text = toResolvedYaml(load(EVERYTHING_YAML).options);
    expect(text).toContain(
      '  env_args:\n  - --level\n  - \'yes\'\n' /* a plain yes would read back as a boolean */,
    );
    expect(text).toContain(
      '    curriculum:\n    - value:\n        sampler_type: constant\n        sampler_parameters:\n          seed: -1\n          value: 2.0\n' +
        '      name: mass\n      completion_criteria: null\n',
    );
    expect(text).toContain('          intervals:\n          - - 1.0\n            - 2.0\n          - - 3.5\n            - 4.0\n');
    expect(text).toContain(
      '    - value:\n        sampler_type: uniform\n        sampler_parameters:\n          seed: -1\n          min_value: 0.0\n' +
        '          max_value: 1.5\n      name: Low\n      completion_criteria:\n        behavior: Striker\n        measure: progress\n' +
        '        min_lesson_length: 0\n        signal_smoothing: true\n        threshold: 0.25\n        require_reset: false\n',
    );
    expect(text).toContain(
      '    self_play:\n      save_steps: 5000\n      team_change: 25000\n      swap_steps: 2000\n      window: 10\n' +
        '      play_against_latest_model_ratio: 0.5\n      initial_elo: 1200.0\n',
    );
    expect(text).toContain('      memory:\n        sequence_length: 16\n        memory_size: 64\n');
    expect(text).toContain('      learning_rate: 1.0e-05\n');
    expect(text).toContain('      steps_per_update: 10.0\n');
    expect(text).toContain('    checkpoint_interval: 200000\n');
    expect(text).toContain('  time_scale: 1.0\n');
    expect(text).toContain("  run_id: '2024'\n");
    expect(text).toContain('  device: cuda:0\n');
  });

  it('quotes strings that would read back as another type, as PyYAML does', () => {
    const { options } = load('checkpoint_settings: {run_id: 2024-05-01}\ntorch_settings: {device: "null"}\n');
    expect(options.checkpoint_settings.run_id).toBe('2024-05-01');
    const text = toResolvedYaml(options);
    expect(text).toContain("  run_id: '2024-05-01'\n");
    expect(text).toContain("  device: 'null'\n");
  });

  it('writes empty collections in flow style', () => {
    const options = loadRunOptions(['--env-args'], '/', memoryLogger());
    const text = toResolvedYaml(options);
    expect(text).toContain('behaviors: {}\n');
    expect(text).toContain('  env_args: []\n');
  });

  it("leaves out this project's own settings", () => {
    const text = toResolvedYaml(load(BALL_YAML, '--backend=cpu', '--bind-address=0.0.0.0').options);
    expect(text).not.toMatch(/backend|bind_address|extras|config_path/);
  });
});

describe('floats as Python repr and PyYAML write them', () => {
  it.each([
    [3e-4, '0.0003'],
    [1e-4, '0.0001'],
    [1e-5, '1.0e-05'],
    [1.5e-5, '1.5e-05'],
    [0.005, '0.005'],
    [0.99, '0.99'],
    [20, '20.0'],
    [1200, '1200.0'],
    [12345678.9, '12345678.9'],
    [1e16, '1.0e+16'],
    [2.5e20, '2.5e+20'],
    [-0.5, '-0.5'],
    [0, '0.0'],
    [0.1 + 0.2, '0.30000000000000004'],
  ])('%p is written %s', (value, text) => {
    expect(pythonFloat(value)).toBe(text);
  });
});

describe('round trip: load, write configuration.yaml, load it again', () => {
  function roundTrip(options: RunOptions): RunOptions {
    const again = loadRunOptions([writeConfig(toResolvedYaml(options))], '/', memoryLogger());
    return { ...again, extras: options.extras };
  }

  it('gives the same options, for every kind of section', () => {
    for (const yamlText of [BALL_YAML, EVERYTHING_YAML]) {
      const { options } = load(yamlText, '--run-id=trip', '--deterministic', '--seed=3');
      expect(roundTrip(options)).toEqual(options);
    }
  });

  it('and the same text', () => {
    const { options } = load(EVERYTHING_YAML);
    expect(toResolvedYaml(roundTrip(options))).toBe(toResolvedYaml(options));
  });
});
