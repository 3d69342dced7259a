/**
 * Every default and derived value of ML-Agents' settings.py (release 21: settings.py, ppo/sac/poca
 * optimizer_torch.py, cli_utils.py), and the default_settings merge.
 */
import { memoryLogger } from '../../src/common/logger';
import { checkTrainerTypesBuilt, loadRunOptions, settingsForBehavior, TrainerSettings } from '../../src/config';
import { load, loadError } from './config-helpers';

function behavior(yamlText: string, name = 'Agent'): TrainerSettings {
  return load(yamlText).options.behaviors[name];
}

describe('defaults of a minimal configuration', () => {
  const { options } = load('behaviors:\n  Agent: {}\n');
  const settings = options.behaviors.Agent;

  it('trains PPO with upstream PPOSettings defaults', () => {
    expect(settings.trainer_type).toBe('ppo');
    expect(settings.hyperparameters).toEqual({
      batch_size: 1024,
      buffer_size: 10240,
      learning_rate: 3.0e-4,
      beta: 5.0e-3,
      epsilon: 0.2,
      lambd: 0.95,
      num_epoch: 3,
      shared_critic: false,
      learning_rate_schedule: 'linear',
      beta_schedule: 'linear',
      epsilon_schedule: 'linear',
    });
  });

  it('has upstream TrainerSettings defaults', () => {
    const { hyperparameters: _h, network_settings: _n, reward_signals: _r, ...rest } = settings;
    expect(rest).toEqual({
      trainer_type: 'ppo',
      checkpoint_interval: 500000,
      init_path: null,
      keep_checkpoints: 5,
      even_checkpoints: false,
      max_steps: 500000,
      time_horizon: 64,
      summary_freq: 50000,
      threaded: false,
      self_play: null,
      behavioral_cloning: null,
    });
  });

  it('has upstream NetworkSettings defaults, and one extrinsic signal with gamma 0.99, strength 1.0', () => {
    const network = {
      normalize: false,
      hidden_units: 128,
      num_layers: 2,
      vis_encode_type: 'simple',
      memory: null,
      goal_conditioning_type: 'hyper',
      deterministic: false,
    };
    expect(settings.network_settings).toEqual(network);
    expect(settings.reward_signals).toEqual({ extrinsic: { gamma: 0.99, strength: 1.0, network_settings: network } });
  });

  it('has the command-line defaults in env, engine, checkpoint and torch settings', () => {
    expect(options.env_settings).toEqual({
      env_path: null,
      env_args: null,
      base_port: 5005,
      num_envs: 1,
      num_areas: 1,
      timeout_wait: 60,
      seed: -1,
      max_lifetime_restarts: 10,
      restarts_rate_limit_n: 1,
      restarts_rate_limit_period_s: 60,
    });
    expect(options.engine_settings).toEqual({
      width: 84,
      height: 84,
      quality_level: 5,
      time_scale: 20,
      target_frame_rate: -1,
      capture_frame_rate: 60,
      no_graphics: false,
      no_graphics_monitor: false,
    });
    expect(options.checkpoint_settings).toEqual({
      run_id: 'ppo',
      initialize_from: null,
      load_model: false,
      resume: false,
      force: false,
      train_model: false,
      inference: false,
      results_dir: 'results',
    });
    expect(options.torch_settings).toEqual({ device: null });
    expect(options.debug).toBe(false);
    expect(options.default_settings).toBeNull();
    expect(options.environment_parameters).toBeNull();
    expect(options.extras).toEqual(expect.objectContaining({ bind_address: 'localhost', backend: 'auto' }));
  });
});

describe('defaults by trainer type', () => {
  it('SAC: SACSettings defaults, reward_signal_steps_per_update following steps_per_update', () => {
    expect(behavior('behaviors:\n  Agent:\n    trainer_type: sac\n').hyperparameters).toEqual({
      learning_rate: 3.0e-4,
      learning_rate_schedule: 'constant',
      batch_size: 128,
      buffer_size: 50000,
      buffer_init_steps: 0,
      tau: 0.005,
      steps_per_update: 1,
      save_replay_buffer: false,
      init_entcoef: 1.0,
      reward_signal_steps_per_update: 1,
    });
    const sac = behavior('behaviors:\n  Agent:\n    trainer_type: sac\n    hyperparameters: {steps_per_update: 10.0}\n');
    expect(sac.hyperparameters).toEqual(expect.objectContaining({ steps_per_update: 10, reward_signal_steps_per_update: 10 }));
  });

  it("POCA: PPO's defaults without shared_critic", () => {
    const poca = behavior('behaviors:\n  Agent:\n    trainer_type: poca\n');
    expect(Object.keys(poca.hyperparameters)).toEqual([
      'batch_size',
      'buffer_size',
      'learning_rate',
      'beta',
      'epsilon',
      'lambd',
      'num_epoch',
      'learning_rate_schedule',
      'beta_schedule',
      'epsilon_schedule',
    ]);
  });

  it('beta and epsilon schedules follow a given learning_rate_schedule unless given their own', () => {
    const followed = behavior(
      'behaviors:\n  Agent:\n    trainer_type: ppo\n    hyperparameters: {learning_rate_schedule: constant, epsilon_schedule: linear}\n',
    );
    expect(followed.hyperparameters).toEqual(
      expect.objectContaining({ learning_rate_schedule: 'constant', beta_schedule: 'constant', epsilon_schedule: 'linear' }),
    );
  });
});

describe('derived values', () => {
  it('self_play: team_change defaults to 5 x save_steps', () => {
    expect(behavior('behaviors:\n  Agent:\n    self_play: {save_steps: 1000}\n').self_play).toEqual({
      save_steps: 1000,
      team_change: 5000,
      swap_steps: 2000,
      window: 10,
      play_against_latest_model_ratio: 0.5,
      initial_elo: 1200.0,
    });
  });

  it('behavioral_cloning defaults', () => {
    expect(behavior('behaviors:\n  Agent:\n    behavioral_cloning: {demo_path: a.demo}\n').behavioral_cloning).toEqual({
      demo_path: 'a.demo',
      steps: 0,
      strength: 1.0,
      samples_per_update: 0,
      num_epoch: null,
      batch_size: null,
    });
  });

  it('memory defaults', () => {
    expect(behavior('behaviors:\n  Agent:\n    network_settings: {memory: {}}\n').network_settings.memory).toEqual({
      sequence_length: 64,
      memory_size: 128,
    });
  });

  it('gail, curiosity and rnd defaults; a deprecated encoding_size sets hidden_units without network_settings', () => {
    const { options, warnings } = load(
      'behaviors:\n  Agent:\n    reward_signals:\n      gail: {demo_path: x.demo}\n      curiosity: {encoding_size: 32}\n' +
        '      rnd: {encoding_size: 32, network_settings: {hidden_units: 16}}\n',
    );
    const signals = options.behaviors.Agent.reward_signals;
    expect(signals.gail).toEqual(
      expect.objectContaining({ gamma: 0.99, strength: 1.0, learning_rate: 3e-4, encoding_size: null, use_actions: false, use_vail: false }),
    );
    expect(signals.curiosity).toEqual(expect.objectContaining({ learning_rate: 3e-4, encoding_size: 32 }));
    expect(signals.curiosity?.network_settings.hidden_units).toBe(32);
    expect(signals.rnd).toEqual(expect.objectContaining({ learning_rate: 1e-4, encoding_size: 32 }));
    expect(signals.rnd?.network_settings.hidden_units).toBe(16);
    expect(signals.extrinsic).toBeUndefined();
    expect(warnings).toEqual([
      "behaviors.Agent.reward_signals.curiosity: 'encoding_size' was deprecated for RewardSignals. Please use network_settings.",
      "behaviors.Agent.reward_signals.rnd: 'encoding_size' was deprecated for RewardSignals. Please use network_settings.",
    ]);
  });

  it('even_checkpoints sets checkpoint_interval to max_steps / keep_checkpoints', () => {
    const settings = behavior('behaviors:\n  Agent:\n    even_checkpoints: true\n    max_steps: 1000000\n    keep_checkpoints: 3\n');
    expect(settings.checkpoint_interval).toBe(333333);
  });

  it('a legacy float max_steps is taken as an integer', () => {
    expect(behavior('behaviors:\n  Agent:\n    max_steps: 5.0e5\n').max_steps).toBe(500000);
    expect(behavior('behaviors:\n  Agent:\n    max_steps: 5e5\n').max_steps).toBe(500000);
  });

  it('samplers: numbers are constants; each sampler has its defaults and the seed -1', () => {
    const { options } = load(
      'behaviors: {}\nenvironment_parameters:\n  a: 3\n' +
        '  b: {sampler_type: uniform, sampler_parameters: {}}\n' +
        '  c: {sampler_type: gaussian, sampler_parameters: {seed: 7}}\n' +
        '  d: {sampler_type: multirangeuniform, sampler_parameters: {}}\n',
    );
    const values = Object.fromEntries(
      Object.entries(options.environment_parameters ?? {}).map(([name, p]) => [name, p.curriculum[0].value]),
    );
    expect(values).toEqual({
      a: { sampler_type: 'constant', sampler_parameters: { seed: -1, value: 3 } },
      b: { sampler_type: 'uniform', sampler_parameters: { seed: -1, min_value: 0.0, max_value: 1.0 } },
      c: { sampler_type: 'gaussian', sampler_parameters: { seed: 7, mean: 1.0, st_dev: 1.0 } },
      d: { sampler_type: 'multirangeuniform', sampler_parameters: { seed: -1, intervals: [[0.0, 1.0]] } },
    });
    expect(options.environment_parameters?.a.curriculum[0]).toEqual(expect.objectContaining({ name: 'a', completion_criteria: null }));
  });

  it('completion criteria defaults; a final lesson with criteria is warned about', () => {
    const { options, warnings } = load(
      'behaviors: {}\nenvironment_parameters:\n  wall:\n    curriculum:\n' +
        '      - {name: L0, value: 1, completion_criteria: {behavior: Agent}}\n' +
        '      - {name: L1, value: 2, completion_criteria: {behavior: Agent}}\n',
    );
    expect(options.environment_parameters?.wall.curriculum[0].completion_criteria).toEqual({
      behavior: 'Agent',
      measure: 'reward',
      min_lesson_length: 0,
      signal_smoothing: true,
      threshold: 0.0,
      require_reset: false,
    });
    expect(warnings).toEqual(['Your final lesson definition contains completion_criteria for wall. It will be ignored.']);
  });
});

describe('default_settings', () => {
  const yamlText =
    'default_settings:\n  trainer_type: ppo\n  hyperparameters: {batch_size: 16, buffer_size: 160, learning_rate_schedule: constant}\n' +
    '  network_settings: {hidden_units: 32}\n  max_steps: 1000\n' +
    'behaviors:\n  A: {}\n  B:\n    hyperparameters: {batch_size: 32}\n    reward_signals: {curiosity: {strength: 0.1}}\n' +
    '  C:\n    trainer_type: sac\n';

  it("is deep-merged under each behavior's own settings", () => {
    const { options } = load(yamlText);
    expect(options.behaviors.A).toEqual(options.default_settings);
    expect(options.behaviors.B.hyperparameters).toEqual(
      expect.objectContaining({ batch_size: 32, buffer_size: 160, learning_rate_schedule: 'constant', beta_schedule: 'constant' }),
    );
    expect(options.behaviors.B.network_settings.hidden_units).toBe(32);
    // Nested mappings merge: the default's extrinsic signal stays beside the behavior's curiosity.
    expect(Object.keys(options.behaviors.B.reward_signals)).toEqual(['extrinsic', 'curiosity']);
    expect(options.behaviors.B.max_steps).toBe(1000);
  });

  it('a behavior of another trainer type takes that type\'s hyperparameter defaults', () => {
    const { options } = load(yamlText);
    expect(options.behaviors.C.trainer_type).toBe('sac');
    expect(options.behaviors.C.hyperparameters).toEqual(expect.objectContaining({ batch_size: 128, buffer_size: 50000 }));
    expect(options.behaviors.C.network_settings.hidden_units).toBe(32);
  });
});

describe('settingsForBehavior: behaviors the configuration does not name', () => {
  it('copies default_settings and records the behavior', () => {
    const { options } = load('default_settings: {max_steps: 77}\nbehaviors: {}\n');
    const settings = settingsForBehavior(options, 'Unnamed', memoryLogger());
    expect(settings.max_steps).toBe(77);
    expect(options.behaviors.Unnamed).toBe(settings);
    expect(settings).not.toBe(options.default_settings);
  });

  it('refuses them when a config file was given without default_settings', () => {
    const { options, file } = load('behaviors: {Named: {}}\n');
    expect(() => settingsForBehavior(options, 'Other', memoryLogger())).toThrow(
      `${file}: behaviors.Other: The behavior name Other has not been specified in the trainer configuration. ` +
        'Please add an entry in the configuration file for Other, or set default_settings.',
    );
  });

  it('warns and uses the defaults when no config file was given', () => {
    const options = loadRunOptions([], '/', memoryLogger());
    const logger = memoryLogger();
    expect(settingsForBehavior(options, 'Any', logger).hyperparameters.batch_size).toBe(1024);
    expect(logger.lines).toEqual([
      {
        level: 'warning',
        message:
          'Behavior name Any does not match any behaviors specified in the trainer configuration file. A default configuration will be used.',
      },
    ]);
  });
});

describe('checkTrainerTypesBuilt', () => {
  it('passes every trainer type built: PPO, SAC and POCA', () => {
    expect(() => checkTrainerTypesBuilt(load('behaviors: {A: {trainer_type: ppo}, S: {trainer_type: sac}, P: {trainer_type: poca}}\n').options)).not.toThrow();
  });

  it('is not part of loading: a POCA configuration loads', () => {
    expect(loadError('behaviors: {A: {trainer_type: poca, max_steps: -1}}\n').message).toContain('max_steps');
    expect(load('behaviors: {A: {trainer_type: poca}}\n').options.behaviors.A.trainer_type).toBe('poca');
  });
});
