/**
 * Precedence as upstream's RunOptions.from_argparse: a flag the user typed beats the YAML file,
 * which beats the defaults; a flag left out never overrides the file, even though it has a default.
 */
import { CommanderError } from 'commander';
import { memoryLogger } from '../../src/common/logger';
import { loadRunOptions, parseCommandLine } from '../../src/config';
import { load } from './config-helpers';

const YAML_WITH_SETTINGS =
  'behaviors:\n  A: {}\n' +
  'env_settings:\n  env_path: game.x86_64\n  num_envs: 4\n  base_port: 6000\n  seed: 42\n' +
  'engine_settings:\n  time_scale: 5\n  no_graphics: false\n' +
  'checkpoint_settings:\n  run_id: from-yaml\n  results_dir: out\n' +
  'torch_settings:\n  device: cpu\n' +
  'debug: false\n';

describe('command line over YAML over defaults', () => {
  it('keeps the YAML values when no flag is typed', () => {
    const { options } = load(YAML_WITH_SETTINGS);
    expect(options.env_settings).toEqual(expect.objectContaining({ env_path: 'game.x86_64', num_envs: 4, base_port: 6000, seed: 42 }));
    expect(options.engine_settings.time_scale).toBe(5);
    expect(options.checkpoint_settings).toEqual(expect.objectContaining({ run_id: 'from-yaml', results_dir: 'out' }));
    expect(options.torch_settings.device).toBe('cpu');
    // Settings neither the file nor the flags give keep upstream's defaults.
    expect(options.env_settings.timeout_wait).toBe(60);
    expect(options.engine_settings.width).toBe(84);
  });

  it('lets every typed flag override the file, even with the default value', () => {
    const { options } = load(
      YAML_WITH_SETTINGS,
      '--num-envs=1',
      '--base-port',
      '5005',
      '--seed',
      '-1',
      '--time-scale',
      '1.5',
      '--no-graphics',
      '--no-graphics-monitor',
      '--run-id',
      'from-cli',
      '--results-dir=elsewhere',
      '--torch-device',
      'cuda:0',
      '--debug',
      '--env',
      'builtin:3DBall',
    );
    expect(options.env_settings).toEqual(
      expect.objectContaining({ env_path: 'builtin:3DBall', num_envs: 1, base_port: 5005, seed: -1 }),
    );
    expect(options.engine_settings).toEqual(expect.objectContaining({ time_scale: 1.5, no_graphics: true, no_graphics_monitor: true }));
    expect(options.checkpoint_settings).toEqual(expect.objectContaining({ run_id: 'from-cli', results_dir: 'elsewhere' }));
    expect(options.torch_settings.device).toBe('cuda:0');
    expect(options.debug).toBe(true);
  });

  it('maps every value flag to its setting', () => {
    const { options } = load(
      'behaviors: {}\n',
      '--initialize-from=old',
      '--num-areas=3',
      '--timeout-wait=90',
      '--max-lifetime-restarts=-1',
      '--restarts-rate-limit-n=2',
      '--restarts-rate-limit-period-s=30',
      '--width=640',
      '--height=480',
      '--quality-level=0',
      '--target-frame-rate=30',
      '--capture-frame-rate=0',
      '--inference',
      '--force',
    );
    expect(options.checkpoint_settings).toEqual(expect.objectContaining({ initialize_from: 'old', inference: true, force: true }));
    expect(options.env_settings).toEqual(
      expect.objectContaining({
        num_areas: 3,
        timeout_wait: 90,
        max_lifetime_restarts: -1,
        restarts_rate_limit_n: 2,
        restarts_rate_limit_period_s: 30,
      }),
    );
    expect(options.engine_settings).toEqual(
      expect.objectContaining({ width: 640, height: 480, quality_level: 0, target_frame_rate: 30, capture_frame_rate: 0 }),
    );
  });

  it('reports only the flags typed, with their settings keys', () => {
    expect(parseCommandLine(['cfg.yaml', '--num-envs', '2', '--resume'])).toEqual({
      configPath: 'cfg.yaml',
      given: [
        { flag: '--resume', section: 'checkpoint_settings', key: 'resume', value: true },
        { flag: '--num-envs', section: 'env_settings', key: 'num_envs', value: 2 },
      ],
      removedFlags: [],
      bindAddress: 'localhost',
      backend: 'auto',
      maxMessageMiB: 32,
      boardPort: null,
    });
  });
});

describe('--env-args takes the rest of the line', () => {
  it('dashes, options of ours and all', () => {
    const { options } = load('behaviors: {}\n', '--env', 'game', '--env-args', '--level', '3', '--num-envs', '2', 'x.yaml');
    expect(options.env_settings.env_args).toEqual(['--level', '3', '--num-envs', '2', 'x.yaml']);
    expect(options.env_settings.num_envs).toBe(1);
  });

  it('overrides env_args of the file, and may be empty', () => {
    expect(load('env_settings: {env_args: [a]}\n', '--env-args').options.env_settings.env_args).toEqual([]);
    expect(load('env_settings: {env_args: [a]}\n').options.env_settings.env_args).toEqual(['a']);
    expect(load('behaviors: {}\n', '--env-args=-batchmode', '-x').options.env_settings.env_args).toEqual(['-batchmode', '-x']);
  });
});

describe('resume and initialize_from, as upstream prioritizes them', () => {
  it('--resume on the command line drops initialize_from of the file', () => {
    const { options, warnings } = load('checkpoint_settings: {initialize_from: old}\n', '--resume');
    expect(options.checkpoint_settings).toEqual(expect.objectContaining({ resume: true, initialize_from: null }));
    expect(warnings).toEqual(["Both 'resume' and 'initialize_from=old' are set! Current run will be resumed ignoring initialization."]);
  });

  it('--initialize-from on the command line drops resume of the file', () => {
    const { options, warnings } = load('checkpoint_settings: {resume: true}\n', '--initialize-from', 'old');
    expect(options.checkpoint_settings).toEqual(expect.objectContaining({ resume: false, initialize_from: 'old' }));
    expect(warnings).toEqual([
      "Both 'resume' and 'initialize_from=old' are set! ppo is initialized_from old and resume will be ignored.",
    ]);
  });

  it('both in the file: resume wins', () => {
    const { options, warnings } = load('checkpoint_settings: {resume: true, initialize_from: old}\n');
    expect(options.checkpoint_settings).toEqual(expect.objectContaining({ resume: true, initialize_from: null }));
    expect(warnings).toEqual([
      "Both 'resume' and 'initialize_from=old' are set in yaml file! Current run will be resumed ignoring initialization.",
    ]);
  });
});

describe('other upstream flags', () => {
  it('--deterministic reaches every behavior of the file, not default_settings', () => {
    const { options } = load('default_settings: {}\nbehaviors: {A: {}, B: {}}\n', '--deterministic');
    expect(options.behaviors.A.network_settings.deterministic).toBe(true);
    expect(options.behaviors.B.network_settings.deterministic).toBe(true);
    expect(options.default_settings?.network_settings.deterministic).toBe(false);
  });

  it('deprecated --load resumes, --train and removed --torch warn', () => {
    const { options, warnings } = load('behaviors: {}\n', '--load', '--train', '--torch');
    expect(options.checkpoint_settings).toEqual(expect.objectContaining({ load_model: true, resume: true, train_model: true }));
    expect(warnings).toEqual([
      'The --load option has been deprecated. Please use the --resume option instead.',
      'The --train option has been deprecated. Train mode is now the default. Use --inference to run in inference mode.',
      'The command line argument --torch was removed.',
    ]);
  });

  it('without a config file: defaults, and no behaviors', () => {
    const options = loadRunOptions(['--run-id', 'bare'], '/', memoryLogger());
    expect(options.behaviors).toEqual({});
    expect(options.extras.config_path).toBeNull();
    expect(options.checkpoint_settings.run_id).toBe('bare');
  });

  it('--help prints the usage with the defaults and exits with code 0', () => {
    const written: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      expect(() => parseCommandLine(['--help'])).toThrow(CommanderError);
    } finally {
      spy.mockRestore();
    }
    const help = written.join('');
    expect(help).toContain('--num-envs <n>');
    expect(help).toContain('(default: 5005)');
    expect(help).toContain('--backend <name>');
    expect(help).not.toContain('--load');
  });
});

describe('flags of ours', () => {
  it('--bind-address and --backend, with their defaults', () => {
    expect(load('behaviors: {}\n').options.extras).toEqual(expect.objectContaining({ bind_address: 'localhost', backend: 'auto' }));
    const { options } = load('behaviors: {}\n', '--bind-address', '0.0.0.0', '--backend=wasm');
    expect(options.extras).toEqual(expect.objectContaining({ bind_address: '0.0.0.0', backend: 'wasm' }));
  });

  it('--max-message-size, in MiB, positive', () => {
    expect(load('behaviors: {}\n').options.extras.max_message_mib).toBe(32);
    expect(load('behaviors: {}\n', '--max-message-size=256').options.extras.max_message_mib).toBe(256);
    expect(() => load('behaviors: {}\n', '--max-message-size', '0')).toThrow(/max-message-size.*positive number of MiB/);
  });
});
