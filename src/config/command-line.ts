/**
 * mlagents-learn's command line: upstream's flags (learn.py, cli_utils.py) plus ours. As upstream's
 * DetectDefault, only the flags the user actually typed are reported, so that they override the
 * YAML file while the flags left out let the file's values (or the defaults) stand.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { memoryLogger } from '../common/logger';
import { ConfigError } from './errors';
import { structureRunOptions } from './structure';
import { BACKENDS, Backend } from './settings';
import { DEFAULT_MAX_MESSAGE_MIB, MAX_MESSAGE_SIZE_FLAG } from '../communicator/rpc-communicator';

/** TensorBoard's port, which the board takes too. */
export const DEFAULT_BOARD_PORT = 6006;

/** The settings section a flag's value belongs to; null for top-level keys (debug, deterministic). */
export type FlagSection = 'checkpoint_settings' | 'env_settings' | 'engine_settings' | 'torch_settings';

interface FlagSpec {
  flag: string;
  /** Placeholder of the flag's value; none for a switch, whose value is true. */
  placeholder?: string;
  section: FlagSection | null;
  key: string;
  parse?: (text: string) => number;
  description: string;
  /** Deprecated flags upstream still accepts without listing them. */
  hidden?: boolean;
}

function integer(text: string): number {
  if (!/^[-+]?\d+$/.test(text.trim())) throw new InvalidArgumentError('Expected an integer.');
  return Number(text);
}

function positiveMiB(text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !(value > 0) || !Number.isFinite(value)) {
    throw new InvalidArgumentError('Expected a positive number of MiB.');
  }
  return value;
}

function port(text: string): number {
  const value = integer(text);
  if (value < 1 || value > 65535) throw new InvalidArgumentError('Expected a port number from 1 to 65535.');
  return value;
}

function decimal(text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw new InvalidArgumentError('Expected a number.');
  return value;
}

/** Upstream's flags, in its order, with the settings key each one sets. */
const UPSTREAM_FLAGS: readonly FlagSpec[] = [
  { flag: '--env', placeholder: '<env_path>', section: 'env_settings', key: 'env_path',
    description: 'the Unity executable to train, or builtin:NAME; without it, wait for the Unity Editor' },
  { flag: '--load', section: 'checkpoint_settings', key: 'load_model', description: 'deprecated: use --resume', hidden: true },
  { flag: '--resume', section: 'checkpoint_settings', key: 'resume',
    description: "resume the run named by --run-id from its last checkpoint (the environment's behaviors must match)" },
  { flag: '--deterministic', section: null, key: 'deterministic',
    description: 'pick actions deterministically: the mean of continuous actions, the most likely discrete ones' },
  { flag: '--force', section: 'checkpoint_settings', key: 'force',
    description: "overwrite the existing results of this run id (without it, an existing run id is an error)" },
  { flag: '--run-id', placeholder: '<run_id>', section: 'checkpoint_settings', key: 'run_id',
    description: 'name of the run: its results go to <results-dir>/<run-id>' },
  { flag: '--initialize-from', placeholder: '<run_id>', section: 'checkpoint_settings', key: 'initialize_from',
    description: "start from the saved models of another run (same behaviors and observations)" },
  { flag: '--seed', placeholder: '<n>', section: 'env_settings', key: 'seed', parse: integer,
    description: 'seed of the random number generators of the trainer (-1: a random one)' },
  { flag: '--train', section: 'checkpoint_settings', key: 'train_model',
    description: 'deprecated: training is the default', hidden: true },
  { flag: '--inference', section: 'checkpoint_settings', key: 'inference',
    description: 'run the policy without training it (with --resume, a trained run)' },
  { flag: '--base-port', placeholder: '<port>', section: 'env_settings', key: 'base_port', parse: integer,
    description: 'first port for environment executables: environment i uses base-port + i (the Editor always uses 5004)' },
  { flag: '--num-envs', placeholder: '<n>', section: 'env_settings', key: 'num_envs', parse: integer,
    description: 'number of environment executables run at once' },
  { flag: '--num-areas', placeholder: '<n>', section: 'env_settings', key: 'num_areas', parse: integer,
    description: 'number of training areas each environment creates' },
  { flag: '--debug', section: null, key: 'debug', description: 'log at debug level' },
  { flag: '--env-args', placeholder: '<args...>', section: 'env_settings', key: 'env_args',
    description: 'arguments for the environment executable: everything after this flag is passed on' },
  { flag: '--max-lifetime-restarts', placeholder: '<n>', section: 'env_settings', key: 'max_lifetime_restarts', parse: integer,
    description: 'times an environment may crash and be restarted before training stops (-1: no limit)' },
  { flag: '--restarts-rate-limit-n', placeholder: '<n>', section: 'env_settings', key: 'restarts_rate_limit_n', parse: integer,
    description: 'times an environment may crash within --restarts-rate-limit-period-s (-1: no limit)' },
  { flag: '--restarts-rate-limit-period-s', placeholder: '<seconds>', section: 'env_settings',
    key: 'restarts_rate_limit_period_s', parse: integer, description: 'the period --restarts-rate-limit-n counts crashes over' },
  { flag: '--timeout-wait', placeholder: '<seconds>', section: 'env_settings', key: 'timeout_wait', parse: integer,
    description: 'how long to wait for an environment to start and to answer' },
  { flag: '--results-dir', placeholder: '<dir>', section: 'checkpoint_settings', key: 'results_dir',
    description: 'folder holding the results of every run' },
  { flag: '--width', placeholder: '<pixels>', section: 'engine_settings', key: 'width', parse: integer,
    description: "width of the environment's window (not in the Editor)" },
  { flag: '--height', placeholder: '<pixels>', section: 'engine_settings', key: 'height', parse: integer,
    description: "height of the environment's window (not in the Editor)" },
  { flag: '--quality-level', placeholder: '<level>', section: 'engine_settings', key: 'quality_level', parse: integer,
    description: "the environment's graphics quality level (QualitySettings.SetQualityLevel)" },
  { flag: '--time-scale', placeholder: '<scale>', section: 'engine_settings', key: 'time_scale', parse: decimal,
    description: "the environment's Time.timeScale" },
  { flag: '--target-frame-rate', placeholder: '<fps>', section: 'engine_settings', key: 'target_frame_rate', parse: integer,
    description: "the environment's Application.targetFrameRate (-1: unlimited)" },
  { flag: '--capture-frame-rate', placeholder: '<fps>', section: 'engine_settings', key: 'capture_frame_rate', parse: integer,
    description: "the environment's Time.captureFramerate" },
  { flag: '--no-graphics', section: 'engine_settings', key: 'no_graphics',
    description: 'run environment executables without graphics (only without visual observations)' },
  { flag: '--no-graphics-monitor', section: 'engine_settings', key: 'no_graphics_monitor',
    description: 'only the first environment renders (to watch it); the others run without graphics' },
  { flag: '--torch-device', placeholder: '<device>', section: 'torch_settings', key: 'device',
    description: "upstream's PyTorch device: cpu keeps the models off the GPU; cuda, cuda:N or gpu ask for the GPU through WebGPU" },
];

/** Flags upstream removed but still accepts with a warning. */
const REMOVED_FLAGS = ['--torch', '--tensorflow'];

const ENV_ARGS_FLAG = '--env-args';

/** One upstream flag the user gave: the settings key it sets, and the value. */
export interface GivenFlag {
  flag: string;
  section: FlagSection | null;
  key: string;
  value: unknown;
}

export interface CommandLine {
  /** The YAML file as typed (relative to the working directory), or null. */
  configPath: string | null;
  given: GivenFlag[];
  /** Removed flags the user gave, to warn about. */
  removedFlags: string[];
  bindAddress: string;
  backend: Backend;
  maxMessageMiB: number;
  /** --board: the port of the training board served beside the run; null without --board. */
  boardPort: number | null;
}

/**
 * Parses mlagents-learn's arguments (without `node` and the script). Bad flags throw a
 * ConfigError; `--help` prints the usage and throws commander's CommanderError with exit code 0.
 */
export function parseCommandLine(argv: readonly string[]): CommandLine {
  // Upstream's --env-args takes the rest of the line (argparse REMAINDER), dashes and all.
  const envArgsAt = argv.findIndex((arg) => arg === ENV_ARGS_FLAG || arg.startsWith(`${ENV_ARGS_FLAG}=`));
  const ownArgs = envArgsAt < 0 ? argv : argv.slice(0, envArgsAt);
  let envArgs: string[] | null = null;
  if (envArgsAt >= 0) {
    const attached = argv[envArgsAt].slice(ENV_ARGS_FLAG.length + 1); // the `x` of `--env-args=x`
    envArgs = [...(attached === '' ? [] : [attached]), ...argv.slice(envArgsAt + 1)];
  }

  const { program, upstreamOptions } = buildProgram();
  try {
    program.parse(ownArgs, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError && error.exitCode !== 0) {
      throw new ConfigError('command line', null, error.message.replace(/^error: /, ''));
    }
    throw error;
  }

  const given: GivenFlag[] = [];
  UPSTREAM_FLAGS.forEach((spec, index) => {
    const attribute = upstreamOptions[index].attributeName();
    if (program.getOptionValueSource(attribute) !== 'cli') return;
    const value = spec.placeholder ? program.getOptionValue(attribute) : true;
    given.push({ flag: spec.flag, section: spec.section, key: spec.key, value });
  });
  if (envArgs !== null) given.push({ flag: ENV_ARGS_FLAG, section: 'env_settings', key: 'env_args', value: envArgs });
  // Upstream keeps --load meaning --resume.
  if (given.some((g) => g.key === 'load_model') && !given.some((g) => g.key === 'resume')) {
    given.push({ flag: '--load', section: 'checkpoint_settings', key: 'resume', value: true });
  }

  const opts = program.opts();
  return {
    configPath: program.args.length > 0 ? program.args[0] : null,
    given,
    removedFlags: REMOVED_FLAGS.filter((flag) => program.getOptionValueSource(flag.slice(2)) === 'cli'),
    bindAddress: opts.bindAddress,
    backend: opts.backend,
    maxMessageMiB: opts.maxMessageSize,
    boardPort: opts.board === true ? opts.boardPort : null,
  };
}

function buildProgram(): { program: Command; upstreamOptions: Option[] } {
  const defaults = structureRunOptions({}, { file: null, flags: new Map(), logger: memoryLogger() });
  const program = new Command('mlagents-learn')
    .description('Train the behaviors of Unity ML-Agents environments, with ML-Agents\' configuration files and flags.')
    .argument('[trainer_config_path]', 'the YAML training configuration')
    .allowExcessArguments(false)
    .exitOverride()
    .configureOutput({ outputError: () => undefined });

  const upstreamOptions = UPSTREAM_FLAGS.map((spec) => {
    const option = new Option(spec.placeholder ? `${spec.flag} ${spec.placeholder}` : spec.flag, spec.description);
    if (spec.parse) option.argParser(spec.parse);
    if (spec.hidden) option.hideHelp();
    const fallback =
      spec.placeholder && spec.section !== null ? new Map(Object.entries(defaults[spec.section])).get(spec.key) : null;
    // Shown in --help only: values the user did not type are left to the YAML file.
    if (fallback !== null && fallback !== undefined) option.default(fallback);
    program.addOption(option);
    return option;
  });
  for (const flag of REMOVED_FLAGS) program.addOption(new Option(flag, 'removed').hideHelp());

  program
    .addOption(
      new Option('--bind-address <host>', "address of the trainer's server (localhost: this machine only)").default('localhost'),
    )
    .addOption(new Option('--backend <name>', 'tfjs backend of the models').choices(BACKENDS).default('auto'))
    .addOption(
      new Option(`${MAX_MESSAGE_SIZE_FLAG} <MiB>`, 'largest message accepted from an environment, compressed or not')
        .argParser(positiveMiB)
        .default(DEFAULT_MAX_MESSAGE_MIB),
    )
    .addOption(new Option('--board', 'serve the training board (mlagents-board) for the results folder while the run trains'))
    .addOption(new Option('--board-port <port>', "the board's port on localhost").argParser(port).default(DEFAULT_BOARD_PORT));
  return { program, upstreamOptions };
}
