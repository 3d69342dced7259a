/**
 * Each kind of configuration error, with its exact message: the file (or the flag), the key's full
 * path, what is wrong.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { ConfigError, loadRunOptions } from '../../src/config';
import { load, loadError, writeConfig } from './config-helpers';

const PPO_KEYS =
  'batch_size, buffer_size, learning_rate, beta, epsilon, lambd, num_epoch, shared_critic, learning_rate_schedule, beta_schedule, epsilon_schedule';

function ppoBehavior(hyperparameters: string): string {
  return `behaviors:\n  3DBall:\n    trainer_type: ppo\n    hyperparameters:\n${hyperparameters}`;
}

describe('unknown keys', () => {
  it('names the full path, suggests the closest key and lists the valid ones', () => {
    const error = loadError(ppoBehavior('      batch_sizee: 64\n'));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.source).toBe(error.file);
    expect(error.keyPath).toBe('behaviors.3DBall.hyperparameters.batch_sizee');
    expect(error.message).toBe(
      `${error.file}: behaviors.3DBall.hyperparameters.batch_sizee: unknown key "batch_sizee" in PPO hyperparameters. ` +
        `Did you mean "batch_size"? Valid keys: ${PPO_KEYS}.`,
    );
  });

  it('at the top level', () => {
    const error = loadError('behavior:\n  A: {}\n');
    expect(error.message).toBe(
      `${error.file}: behavior: unknown key "behavior" in the top level of the configuration. Did you mean "behaviors"? ` +
        'Valid keys: default_settings, behaviors, env_settings, engine_settings, environment_parameters, checkpoint_settings, ' +
        'torch_settings, debug.',
    );
  });

  it('without a suggestion when nothing is close', () => {
    const error = loadError('engine_settings: {fullscreen: true}\n');
    expect(error.message).toBe(
      `${error.file}: engine_settings.fullscreen: unknown key "fullscreen" in engine_settings. ` +
        'Valid keys: width, height, quality_level, time_scale, target_frame_rate, capture_frame_rate, no_graphics, no_graphics_monitor.',
    );
  });

  it('in reward signals, curricula and samplers', () => {
    expect(loadError('behaviors:\n  A:\n    reward_signals: {extrinsic: {gama: 0.9}}\n').message).toContain(
      'behaviors.A.reward_signals.extrinsic.gama: unknown key "gama" in the extrinsic reward signal. Did you mean "gamma"?',
    );
    expect(loadError('environment_parameters:\n  p: {sampler_type: uniform, sampler_parameters: {min: 1}}\n').message).toContain(
      'environment_parameters.p.sampler_parameters.min: unknown key "min" in uniform sampler parameters.',
    );
    const lesson = loadError('environment_parameters:\n  p:\n    curriculum:\n      - {name: L, value: 1, completion_criteria: {behavior: A, treshold: 1}}\n');
    expect(lesson.keyPath).toBe('environment_parameters.p.curriculum[0].completion_criteria.treshold');
    expect(lesson.message).toContain('Did you mean "threshold"?');
  });
});

describe('wrong types', () => {
  it('name the path, the expected type and the value', () => {
    const cases: Array<[string, string]> = [
      [ppoBehavior('      batch_size: big\n'), 'behaviors.3DBall.hyperparameters.batch_size: expected an integer, got "big".'],
      [ppoBehavior('      batch_size: 64.5\n'), 'behaviors.3DBall.hyperparameters.batch_size: expected an integer, got 64.5.'],
      [ppoBehavior('      learning_rate: [1]\n'), 'behaviors.3DBall.hyperparameters.learning_rate: expected a number, got a list ([1]).'],
      ['behaviors:\n  A:\n    network_settings: {normalize: maybe}\n', 'behaviors.A.network_settings.normalize: expected true or false, got "maybe".'],
      ['behaviors:\n  A:\n    network_settings: 5\n', 'behaviors.A.network_settings: expected a mapping of network_settings, got 5.'],
      ['behaviors: [A, B]\n', 'behaviors: expected a mapping from behavior names to their settings, got a list (["A","B"]).'],
      ['env_settings: {env_args: {a: 1}}\n', 'env_settings.env_args: expected a list of strings, got a mapping.'],
    ];
    for (const [yamlText, expected] of cases) {
      const error = loadError(yamlText);
      expect(error.message).toBe(`${error.file}: ${expected}`);
    }
  });
});

describe('impossible values', () => {
  const cases: Array<[string, string, string]> = [
    [
      'batch_size larger than buffer_size (PPO)',
      ppoBehavior('      batch_size: 2048\n      buffer_size: 1024\n'),
      'behaviors.3DBall.hyperparameters.batch_size: batch_size (2048) is larger than buffer_size (1024): PPO cuts each buffer ' +
        'of buffer_size experiences into minibatches of batch_size, so it would never update. buffer_size should be a ' +
        'multiple of batch_size.',
    ],
    ['a negative value', 'behaviors:\n  A: {time_horizon: -5}\n', 'behaviors.A.time_horizon: must be at least 1, got -5.'],
    ['lambd outside [0, 1]', ppoBehavior('      lambd: 1.5\n'), 'behaviors.3DBall.hyperparameters.lambd: must be between 0 and 1, got 1.5.'],
    [
      'an unknown trainer type',
      'behaviors:\n  A: {trainer_type: ppo2}\n',
      'behaviors.A.trainer_type: unknown trainer type "ppo2". Did you mean "ppo"? The known ones are: ppo, sac, poca.',
    ],
    [
      'an unknown schedule',
      ppoBehavior('      learning_rate_schedule: linaer\n'),
      'behaviors.3DBall.hyperparameters.learning_rate_schedule: unknown schedule "linaer". Did you mean "linear"? ' +
        'The known ones are: constant, linear.',
    ],
    [
      'hyperparameters without trainer_type',
      'behaviors:\n  A:\n    hyperparameters: {batch_size: 64}\n',
      'behaviors.A.hyperparameters: Hyperparameters were specified but no trainer_type was given.',
    ],
    [
      'an unknown reward signal',
      'behaviors:\n  A:\n    reward_signals: {extrinsec: {}}\n',
      'behaviors.A.reward_signals.extrinsec: unknown reward signal "extrinsec". Did you mean "extrinsic"? ' +
        'The known ones are: extrinsic, gail, curiosity, rnd.',
    ],
    [
      'GAIL without its demonstrations',
      'behaviors:\n  A:\n    reward_signals: {gail: {strength: 0.1}}\n',
      'behaviors.A.reward_signals.gail.demo_path: missing required key "demo_path".',
    ],
    [
      'an odd memory size',
      'behaviors:\n  A:\n    network_settings: {memory: {memory_size: 33}}\n',
      'behaviors.A.network_settings.memory.memory_size: When using a recurrent network, memory size must be divisible by 2.',
    ],
    [
      'a sequence longer than a batch',
      'behaviors:\n  A:\n    trainer_type: ppo\n    hyperparameters: {batch_size: 32, buffer_size: 320}\n    network_settings: {memory: {sequence_length: 64}}\n',
      'behaviors.A.network_settings.memory.sequence_length: When using memory, sequence length must be less than or equal to batch size.',
    ],
    [
      'several environments without an executable',
      'env_settings: {num_envs: 2}\n',
      'env_settings.num_envs: num_envs must be 1 if env_path is not set.',
    ],
    [
      'even checkpoints without checkpoints to keep',
      'behaviors:\n  A: {even_checkpoints: true, keep_checkpoints: 0}\n',
      'behaviors.A.even_checkpoints: even_checkpoints sets checkpoint_interval to max_steps / keep_checkpoints ' +
        '(500000 / 0), which must be at least 1.',
    ],
    ['no training area', 'env_settings: {num_areas: 0}\n', 'env_settings.num_areas: num_areas must be set to a positive number >= 1.'],
    [
      'a uniform sampler with min above max',
      'environment_parameters:\n  p: {sampler_type: uniform, sampler_parameters: {min_value: 2, max_value: 1}}\n',
      'environment_parameters.p.sampler_parameters.min_value: Minimum value is greater than maximum value in uniform sampler.',
    ],
    [
      'a sampler without its type',
      'environment_parameters:\n  p: {sampler_parameters: {}}\n',
      'environment_parameters.p.sampler_type: Sampler configuration does not contain sampler_type.',
    ],
    [
      'an unknown sampler type',
      'environment_parameters:\n  p: {sampler_type: multirange_uniform, sampler_parameters: {}}\n',
      'environment_parameters.p.sampler_type: unknown sampler type "multirange_uniform". Did you mean "multirangeuniform"? ' +
        'The known ones are: uniform, gaussian, multirangeuniform, constant.',
    ],
    [
      'a bad interval',
      'environment_parameters:\n  p: {sampler_type: multirangeuniform, sampler_parameters: {intervals: [[1, 2, 3]]}}\n',
      'environment_parameters.p.sampler_parameters.intervals[0]: The sampling interval [1,2,3] must contain exactly two values.',
    ],
    [
      'a non-terminal lesson without completion criteria',
      'environment_parameters:\n  p:\n    curriculum:\n      - {name: L0, value: 1}\n      - {name: L1, value: 2}\n',
      'environment_parameters.p.curriculum[0]: A non-terminal lesson does not have a completion_criteria for p.',
    ],
    [
      'a progress threshold above 1',
      'environment_parameters:\n  p:\n    curriculum:\n      - {name: L0, value: 1, completion_criteria: {behavior: A, measure: progress, threshold: 2}}\n      - {name: L1, value: 2}\n',
      'environment_parameters.p.curriculum[0].completion_criteria.threshold: Threshold for next lesson cannot be greater than 1 when the measure is progress.',
    ],
    [
      'a run id leaving the results folder',
      'checkpoint_settings: {run_id: ../elsewhere}\n',
      'checkpoint_settings.run_id: the run id "../elsewhere" contains a path separator: it names one folder inside the results ' +
        'folder, so it cannot hold "/" or "\\", nor be "." or "..".',
    ],
  ];
  it.each(cases)('%s', (_name, yamlText, expected) => {
    const error = loadError(yamlText);
    expect(error.message).toBe(`${error.file}: ${expected}`);
  });
});

describe('values given on the command line', () => {
  it('are blamed on their flag', () => {
    const error = loadError('behaviors: {}\n', '--num-envs', '3');
    expect(error.message).toBe('command line (--num-envs): env_settings.num_envs: num_envs must be 1 if env_path is not set.');
  });

  it('bad flags and flag values', () => {
    const bad = (...argv: string[]) => {
      try {
        loadRunOptions(argv, '/', memoryLogger());
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error('expected an error');
    };
    expect(bad('--num-envs', 'two')).toBe("command line: option '--num-envs <n>' argument 'two' is invalid. Expected an integer.");
    expect(bad('--num-env=2')).toBe("command line: unknown option '--num-env=2'\n(Did you mean --num-envs?)");
    expect(bad('--backend', 'gpu')).toBe(
      "command line: option '--backend <name>' argument 'gpu' is invalid. Allowed choices are auto, webgpu, webgpu-software, wasm, cpu, tensorflow, tensorflow-gpu.",
    );
    expect(bad('a.yaml', 'b.yaml')).toMatch(/^command line: too many arguments/);
    expect(bad('--run-id', 'a/b')).toBe(
      'command line (--run-id): checkpoint_settings.run_id: the run id "a/b" contains a path separator: it names one folder ' +
        'inside the results folder, so it cannot hold "/" or "\\", nor be "." or "..".',
    );
  });
});

describe('the file itself', () => {
  it('a missing config file is named', () => {
    const missing = path.join(path.dirname(writeConfig('')), 'nope.yaml');
    expect(() => loadRunOptions([missing], '/', memoryLogger())).toThrow(
      new ConfigError(missing, null, `Config file could not be found at ${missing}.`),
    );
    expect(() => loadRunOptions([missing], '/', memoryLogger())).toThrow(`${missing}: Config file could not be found at ${missing}.`);
  });

  it('a relative path is taken from the working directory', () => {
    const file = writeConfig('behaviors: {A: {}}\n', 'relative.yaml');
    const options = loadRunOptions(['relative.yaml'], path.dirname(file), memoryLogger());
    expect(options.extras.config_path).toBe(file);
  });

  it('YAML syntax errors give the line', () => {
    const error = loadError('behaviors:\n  A: [1, 2\n  B: {}\n');
    expect(error.message).toMatch(
      new RegExp(`^${escape(error.file)}: Error parsing yaml file. Please check for formatting errors. .* at line \\d+, column \\d+`),
    );
  });

  it('an empty file, and a file that is not a mapping', () => {
    const empty = loadError('# nothing\n');
    expect(empty.message).toBe(`${empty.file}: the config file is empty; it should hold at least a behaviors: mapping.`);
    const list = loadError('- a\n- b\n');
    expect(list.message).toBe(`${list.file}: expected a mapping at the top level, got a list (["a","b"]).`);
  });

  it('a file not in UTF-8', () => {
    const file = writeConfig('');
    fs.writeFileSync(file, Buffer.from([0x62, 0x3a, 0x20, 0xff, 0xfe, 0x0a]));
    expect(() => loadRunOptions([file], '/', memoryLogger())).toThrow(
      `${file}: There was an error decoding Config file from ${file}. Make sure your file is saved using UTF-8.`,
    );
  });

  it('a repeated key: the last value wins, with a warning (PyYAML keeps the last silently)', () => {
    const { options, warnings, file } = load('behaviors:\n  A: {max_steps: 1}\n  A: {max_steps: 2}\n');
    expect(options.behaviors.A.max_steps).toBe(2);
    expect(warnings).toEqual([`${file}: the key "A" appears twice in one mapping (line 3); its last value is used.`]);
  });

  it('YAML 1.1 as PyYAML reads it: yes/no booleans, merge keys, 3e-4 numbers', () => {
    const { options } = load(
      'behaviors:\n  A: &base\n    trainer_type: ppo\n    hyperparameters: {learning_rate: 3e-4}\n' +
        '    network_settings: {normalize: yes}\n  B:\n    <<: *base\n    max_steps: 10\n',
    );
    expect(options.behaviors.A.network_settings.normalize).toBe(true);
    expect(options.behaviors.A.hyperparameters.learning_rate).toBe(0.0003);
    expect(options.behaviors.B).toEqual({ ...options.behaviors.A, max_steps: 10 });
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
