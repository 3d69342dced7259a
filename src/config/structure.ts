/**
 * From the parsed YAML (plus command-line values) to typed, validated, fully defaulted settings,
 * with ML-Agents' defaults and rules (settings.py). Every object is built with its keys in
 * upstream's field order, the order ML-Agents writes configuration.yaml in.
 */
import { BASE_ENVIRONMENT_PORT } from '../env/unity-environment';
import { didYouMean } from './errors';
import { ConfigSource, MappingReader, childPath, configError, describe, isMapping } from './reader';
import {
  BehavioralCloningSettings,
  CheckpointSettings,
  COMPLETION_MEASURES,
  CONDITIONING_TYPES,
  CompletionCriteriaSettings,
  CuriositySettings,
  ENCODER_TYPES,
  EngineSettings,
  EnvironmentParameterSettings,
  EnvironmentSettings,
  GAILSettings,
  Lesson,
  MemorySettings,
  NetworkSettings,
  POCASettings,
  PPOSettings,
  REWARD_SIGNAL_TYPES,
  RUN_OPTIONS_KEYS,
  RewardSignalSettings,
  RewardSignals,
  RunOptions,
  SACSettings,
  SAMPLER_TYPES,
  SCHEDULE_TYPES,
  SamplerSettings,
  SelfPlaySettings,
  TRAINER_TYPES,
  TorchSettings,
  TrainerSettings,
  TrainerType,
} from './settings';

/** The seed samplers send when none is given: upstream's --seed default, not the run's seed. */
const DEFAULT_SAMPLER_SEED = -1;

// NETWORKS ###################################################################################

const NETWORK_KEYS = [
  'normalize',
  'hidden_units',
  'num_layers',
  'vis_encode_type',
  'memory',
  'goal_conditioning_type',
  'deterministic',
] as const;

export function structureNetworkSettings(value: unknown, path: string, source: ConfigSource): NetworkSettings {
  const r = MappingReader.open(source, path, value, NETWORK_KEYS, 'network_settings');
  return {
    normalize: r.bool('normalize', false),
    hidden_units: r.int('hidden_units', 128, { atLeast: 1 }),
    num_layers: r.int('num_layers', 2, { atLeast: 1 }),
    vis_encode_type: r.choice('vis_encode_type', ENCODER_TYPES, 'visual encoder', 'simple'),
    memory: r.optional('memory', structureMemory),
    goal_conditioning_type: r.choice('goal_conditioning_type', CONDITIONING_TYPES, 'goal conditioning type', 'hyper'),
    deterministic: r.bool('deterministic', false),
  };
}

function structureMemory(value: unknown, path: string, source: ConfigSource): MemorySettings {
  const r = MappingReader.open(source, path, value, ['sequence_length', 'memory_size'], 'memory');
  const sequence_length = r.int('sequence_length', 64, { atLeast: 1 });
  const memory_size = r.int('memory_size', 128);
  if (memory_size <= 0) throw r.fail('memory_size', 'When using a recurrent network, memory size must be greater than 0.');
  // The memory holds an LSTM's cell and hidden state, half each.
  if (memory_size % 2 !== 0) throw r.fail('memory_size', 'When using a recurrent network, memory size must be divisible by 2.');
  return { sequence_length, memory_size };
}

// HYPERPARAMETERS ############################################################################

const PPO_KEYS = [
  'batch_size',
  'buffer_size',
  'learning_rate',
  'beta',
  'epsilon',
  'lambd',
  'num_epoch',
  'shared_critic',
  'learning_rate_schedule',
  'beta_schedule',
  'epsilon_schedule',
] as const;
const POCA_KEYS = PPO_KEYS.filter((key) => key !== 'shared_critic');

const SAC_KEYS = [
  'learning_rate',
  'learning_rate_schedule',
  'batch_size',
  'buffer_size',
  'buffer_init_steps',
  'tau',
  'steps_per_update',
  'save_replay_buffer',
  'init_entcoef',
  'reward_signal_steps_per_update',
] as const;

/** PPO's and POCA's hyperparameters (POCA's lack shared_critic). */
function structureOnPolicy(value: unknown, path: string, source: ConfigSource, trainerType: 'ppo'): PPOSettings;
function structureOnPolicy(value: unknown, path: string, source: ConfigSource, trainerType: 'poca'): POCASettings;
function structureOnPolicy(
  value: unknown,
  path: string,
  source: ConfigSource,
  trainerType: 'ppo' | 'poca',
): PPOSettings | POCASettings {
  const name = trainerType.toUpperCase();
  const r = MappingReader.open(source, path, value, trainerType === 'ppo' ? PPO_KEYS : POCA_KEYS, `${name} hyperparameters`);
  const batch_size = r.int('batch_size', 1024, { atLeast: 1 });
  const buffer_size = r.int('buffer_size', 10240, { atLeast: 1 });
  if (batch_size > buffer_size) {
    throw r.fail(
      'batch_size',
      `batch_size (${batch_size}) is larger than buffer_size (${buffer_size}): ${name} cuts each buffer of buffer_size ` +
        'experiences into minibatches of batch_size, so it would never update. buffer_size should be a multiple of batch_size.',
    );
  }
  const head = {
    batch_size,
    buffer_size,
    learning_rate: r.float('learning_rate', 3.0e-4, { atLeast: 0 }),
    beta: r.float('beta', 5.0e-3, { atLeast: 0 }),
    epsilon: r.float('epsilon', 0.2, { atLeast: 0 }),
    lambd: r.float('lambd', 0.95, { atLeast: 0, atMost: 1 }),
    num_epoch: r.int('num_epoch', 3, { atLeast: 1 }),
  };
  const learning_rate_schedule = r.choice('learning_rate_schedule', SCHEDULE_TYPES, 'schedule', 'linear');
  // As upstream: beta and epsilon follow a given learning_rate_schedule unless given their own.
  const followed = r.has('learning_rate_schedule') ? learning_rate_schedule : 'linear';
  const schedules = {
    learning_rate_schedule,
    beta_schedule: r.choice('beta_schedule', SCHEDULE_TYPES, 'schedule', followed),
    epsilon_schedule: r.choice('epsilon_schedule', SCHEDULE_TYPES, 'schedule', followed),
  };
  if (trainerType === 'poca') return { ...head, ...schedules };
  return { ...head, shared_critic: r.bool('shared_critic', false), ...schedules };
}

function structureSAC(value: unknown, path: string, source: ConfigSource): SACSettings {
  const r = MappingReader.open(source, path, value, SAC_KEYS, 'SAC hyperparameters');
  const steps_per_update = r.float('steps_per_update', 1, { above: 0 });
  return {
    learning_rate: r.float('learning_rate', 3.0e-4, { atLeast: 0 }),
    learning_rate_schedule: r.choice('learning_rate_schedule', SCHEDULE_TYPES, 'schedule', 'constant'),
    batch_size: r.int('batch_size', 128, { atLeast: 1 }),
    buffer_size: r.int('buffer_size', 50000, { atLeast: 1 }),
    buffer_init_steps: r.int('buffer_init_steps', 0, { atLeast: 0 }),
    tau: r.float('tau', 0.005, { above: 0, atMost: 1 }),
    steps_per_update,
    save_replay_buffer: r.bool('save_replay_buffer', false),
    // The optimizer learns log(entropy coefficient), so it must start above 0.
    init_entcoef: r.float('init_entcoef', 1.0, { above: 0 }),
    reward_signal_steps_per_update: r.float('reward_signal_steps_per_update', steps_per_update, { above: 0 }),
  };
}

/** A trainer type with the hyperparameters of that type. */
type TypedHyperparameters =
  | { trainer_type: 'ppo'; hyperparameters: PPOSettings }
  | { trainer_type: 'sac'; hyperparameters: SACSettings }
  | { trainer_type: 'poca'; hyperparameters: POCASettings };

function structureHyperparameters(
  trainerType: TrainerType,
  value: unknown,
  path: string,
  source: ConfigSource,
): TypedHyperparameters {
  switch (trainerType) {
    case 'ppo':
      return { trainer_type: 'ppo', hyperparameters: structureOnPolicy(value, path, source, 'ppo') };
    case 'sac':
      return { trainer_type: 'sac', hyperparameters: structureSAC(value, path, source) };
    case 'poca':
      return { trainer_type: 'poca', hyperparameters: structureOnPolicy(value, path, source, 'poca') };
  }
}

// REWARD SIGNALS #############################################################################

const EXTRINSIC_KEYS = ['gamma', 'strength', 'network_settings'] as const;
const CURIOSITY_KEYS = [...EXTRINSIC_KEYS, 'learning_rate', 'encoding_size'] as const;
const GAIL_KEYS = [...CURIOSITY_KEYS, 'use_actions', 'use_vail', 'demo_path'] as const;

function readSignalBase(r: MappingReader): RewardSignalSettings {
  return {
    gamma: r.float('gamma', 0.99, { atLeast: 0, atMost: 1 }),
    strength: r.float('strength', 1.0),
    network_settings: r.nested('network_settings', structureNetworkSettings),
  };
}

/** encoding_size is deprecated: without network_settings, upstream takes it as hidden_units. */
function readEncodingSize(r: MappingReader, base: RewardSignalSettings): number | null {
  const encoding_size = r.optionalInt('encoding_size', null, { atLeast: 1 });
  if (r.has('encoding_size')) {
    r.source.logger.warning(`${r.path}: 'encoding_size' was deprecated for RewardSignals. Please use network_settings.`);
    if (encoding_size !== null && !r.has('network_settings')) base.network_settings.hidden_units = encoding_size;
  }
  return encoding_size;
}

function structureExtrinsic(value: unknown, path: string, source: ConfigSource): RewardSignalSettings {
  return readSignalBase(MappingReader.open(source, path, value, EXTRINSIC_KEYS, 'the extrinsic reward signal'));
}

/** Curiosity and RND share their settings; only the learning rate's default differs. */
function structureLearnedSignal(
  value: unknown,
  path: string,
  source: ConfigSource,
  name: 'curiosity' | 'rnd',
): CuriositySettings {
  const r = MappingReader.open(source, path, value, CURIOSITY_KEYS, `the ${name} reward signal`);
  const base = readSignalBase(r);
  const learning_rate = r.float('learning_rate', name === 'curiosity' ? 3e-4 : 1e-4, { atLeast: 0 });
  return { ...base, learning_rate, encoding_size: readEncodingSize(r, base) };
}

function structureGAIL(value: unknown, path: string, source: ConfigSource): GAILSettings {
  const r = MappingReader.open(source, path, value, GAIL_KEYS, 'the gail reward signal');
  const base = readSignalBase(r);
  return {
    ...base,
    learning_rate: r.float('learning_rate', 3e-4, { atLeast: 0 }),
    encoding_size: readEncodingSize(r, base),
    use_actions: r.bool('use_actions', false),
    use_vail: r.bool('use_vail', false),
    demo_path: r.requiredString('demo_path'),
  };
}

function structureRewardSignals(value: unknown, path: string, source: ConfigSource): RewardSignals {
  if (!isMapping(value)) {
    throw configError(source, path, `expected a mapping from reward signal names to their settings, got ${describe(value)}.`);
  }
  const names = Object.keys(value);
  if (names.length === 0) throw configError(source, path, 'at least one reward signal is needed, usually extrinsic.');
  const signals: RewardSignals = {};
  for (const name of names) {
    const at = childPath(path, name);
    switch (name) {
      case 'extrinsic':
        signals.extrinsic = structureExtrinsic(value[name], at, source);
        break;
      case 'gail':
        signals.gail = structureGAIL(value[name], at, source);
        break;
      case 'curiosity':
      case 'rnd':
        signals[name] = structureLearnedSignal(value[name], at, source, name);
        break;
      default:
        throw configError(
          source,
          at,
          `unknown reward signal "${name}".${didYouMean(name, REWARD_SIGNAL_TYPES)} ` +
            `The known ones are: ${REWARD_SIGNAL_TYPES.join(', ')}.`,
        );
    }
  }
  return signals;
}

// TRAINERS ###################################################################################

const SELF_PLAY_KEYS = [
  'save_steps',
  'team_change',
  'swap_steps',
  'window',
  'play_against_latest_model_ratio',
  'initial_elo',
] as const;

function structureSelfPlay(value: unknown, path: string, source: ConfigSource): SelfPlaySettings {
  const r = MappingReader.open(source, path, value, SELF_PLAY_KEYS, 'self_play');
  const save_steps = r.int('save_steps', 20000, { atLeast: 1 });
  return {
    save_steps,
    team_change: r.int('team_change', save_steps * 5, { atLeast: 1 }),
    swap_steps: r.int('swap_steps', 2000, { atLeast: 1 }),
    window: r.int('window', 10, { atLeast: 1 }),
    play_against_latest_model_ratio: r.float('play_against_latest_model_ratio', 0.5, { atLeast: 0, atMost: 1 }),
    initial_elo: r.float('initial_elo', 1200.0),
  };
}

const BEHAVIORAL_CLONING_KEYS = ['demo_path', 'steps', 'strength', 'samples_per_update', 'num_epoch', 'batch_size'] as const;

function structureBehavioralCloning(value: unknown, path: string, source: ConfigSource): BehavioralCloningSettings {
  const r = MappingReader.open(source, path, value, BEHAVIORAL_CLONING_KEYS, 'behavioral_cloning');
  return {
    demo_path: r.requiredString('demo_path'),
    steps: r.int('steps', 0, { atLeast: 0 }),
    strength: r.float('strength', 1.0, { atLeast: 0 }),
    samples_per_update: r.int('samples_per_update', 0, { atLeast: 0 }),
    // null: the trainer's own num_epoch and batch_size.
    num_epoch: r.optionalInt('num_epoch', null, { atLeast: 1 }),
    batch_size: r.optionalInt('batch_size', null, { atLeast: 1 }),
  };
}

const TRAINER_KEYS = [
  'trainer_type',
  'hyperparameters',
  'checkpoint_interval',
  'network_settings',
  'reward_signals',
  'init_path',
  'keep_checkpoints',
  'even_checkpoints',
  'max_steps',
  'time_horizon',
  'summary_freq',
  'threaded',
  'self_play',
  'behavioral_cloning',
] as const;

/**
 * One behavior's settings. With default_settings, upstream deep-merges the behavior's mapping over
 * the default's (nested mappings merge key by key, anything else replaces), then reads the result.
 */
export function structureTrainerSettings(
  value: unknown,
  path: string,
  source: ConfigSource,
  defaults: TrainerSettings | null = null,
): TrainerSettings {
  let given = value;
  if (isMapping(given) && 'framework' in given) {
    source.logger.warning(`${path}: Framework option was deprecated but was specified`);
    const { framework: _ignored, ...rest } = given;
    given = rest;
  }
  const merged = defaults !== null && isMapping(given) ? mergeOverDefaults(defaults, given) : given;
  const r = MappingReader.open(source, path, merged, TRAINER_KEYS, "a behavior's trainer settings");
  if (r.has('hyperparameters') && !r.has('trainer_type')) {
    // Hyperparameters differ by trainer type, so upstream wants the type named beside them.
    throw r.fail('hyperparameters', 'Hyperparameters were specified but no trainer_type was given.');
  }
  const typed = structureHyperparameters(
    r.choice('trainer_type', TRAINER_TYPES, 'trainer type', 'ppo'),
    r.has('hyperparameters') ? r.raw('hyperparameters') : {},
    r.at('hyperparameters'),
    source,
  );
  const keep_checkpoints = r.int('keep_checkpoints', 5, { atLeast: 0 });
  const even_checkpoints = r.bool('even_checkpoints', false);
  const max_steps = r.wholeNumber('max_steps', 500000, { atLeast: 0 });
  let checkpoint_interval = r.int('checkpoint_interval', 500000, { atLeast: 1 });
  if (even_checkpoints) {
    // Upstream spreads keep_checkpoints checkpoints evenly over max_steps, whatever the interval says.
    checkpoint_interval = keep_checkpoints > 0 ? Math.trunc(max_steps / keep_checkpoints) : 0;
    if (checkpoint_interval < 1) {
      throw r.fail(
        'even_checkpoints',
        `even_checkpoints sets checkpoint_interval to max_steps / keep_checkpoints (${max_steps} / ${keep_checkpoints}), ` +
          'which must be at least 1.',
      );
    }
  }
  const network_settings = r.nested('network_settings', structureNetworkSettings);
  const memory = network_settings.memory;
  if (memory !== null && memory.sequence_length > typed.hyperparameters.batch_size) {
    throw configError(
      source,
      childPath(r.at('network_settings'), 'memory.sequence_length'),
      'When using memory, sequence length must be less than or equal to batch size.',
    );
  }
  return {
    ...typed,
    checkpoint_interval,
    network_settings,
    reward_signals: r.has('reward_signals')
      ? structureRewardSignals(r.raw('reward_signals'), r.at('reward_signals'), source)
      : { extrinsic: structureExtrinsic({}, r.at('reward_signals.extrinsic'), source) },
    init_path: r.optionalString('init_path', null),
    keep_checkpoints,
    even_checkpoints,
    max_steps,
    time_horizon: r.int('time_horizon', 64, { atLeast: 1 }),
    summary_freq: r.int('summary_freq', 50000, { atLeast: 1 }),
    threaded: r.bool('threaded', false),
    self_play: r.optional('self_play', structureSelfPlay),
    behavioral_cloning: r.optional('behavioral_cloning', structureBehavioralCloning),
  };
}

function mergeOverDefaults(defaults: TrainerSettings, behavior: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = structuredClone({ ...defaults });
  // Upstream would merge, say, PPO's beta into a SAC behavior's hyperparameters and reject it;
  // a behavior that changes trainer type starts from that type's defaults instead.
  if (behavior.trainer_type !== undefined && behavior.trainer_type !== defaults.trainer_type) {
    delete merged.hyperparameters;
  }
  deepMerge(merged, behavior);
  return merged;
}

function deepMerge(target: Record<string, unknown>, update: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(update)) {
    const current = target[key];
    if (isMapping(current) && isMapping(value)) deepMerge(current, value);
    else target[key] = value;
  }
}

/** The settings of a behavior the configuration does not name, without default_settings. */
export function defaultTrainerSettings(source: ConfigSource): TrainerSettings {
  return structureTrainerSettings({}, 'behaviors', source);
}

function structureBehaviors(
  value: unknown,
  path: string,
  source: ConfigSource,
  defaults: TrainerSettings | null,
): Record<string, TrainerSettings> {
  if (!isMapping(value)) {
    throw configError(source, path, `expected a mapping from behavior names to their settings, got ${describe(value)}.`);
  }
  const behaviors: Record<string, TrainerSettings> = {};
  for (const [name, settings] of Object.entries(value)) {
    behaviors[name] = structureTrainerSettings(settings, childPath(path, name), source, defaults);
  }
  return behaviors;
}

// ENVIRONMENT PARAMETERS #####################################################################

function structureSampler(value: unknown, path: string, source: ConfigSource): SamplerSettings {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw configError(source, path, `expected a finite number, got ${value}.`);
    return { sampler_type: 'constant', sampler_parameters: { seed: DEFAULT_SAMPLER_SEED, value } };
  }
  const r = MappingReader.open(source, path, value, ['sampler_type', 'sampler_parameters'], 'a sampler (or give a number)');
  if (!r.has('sampler_type')) throw r.fail('sampler_type', 'Sampler configuration does not contain sampler_type.');
  const samplerType = r.choice('sampler_type', SAMPLER_TYPES, 'sampler type');
  if (!r.has('sampler_parameters')) {
    throw r.fail('sampler_parameters', 'Sampler configuration does not contain sampler_parameters.');
  }
  const parametersPath = r.at('sampler_parameters');
  const parameters = r.raw('sampler_parameters');
  switch (samplerType) {
    case 'constant': {
      const p = MappingReader.open(source, parametersPath, parameters, ['seed', 'value'], 'constant sampler parameters');
      return { sampler_type: 'constant', sampler_parameters: { seed: readSeed(p), value: p.float('value', 0.0) } };
    }
    case 'uniform': {
      const keys = ['seed', 'min_value', 'max_value'];
      const p = MappingReader.open(source, parametersPath, parameters, keys, 'uniform sampler parameters');
      const sampler_parameters = {
        seed: readSeed(p),
        min_value: p.float('min_value', 0.0),
        max_value: p.float('max_value', 1.0),
      };
      if (sampler_parameters.min_value > sampler_parameters.max_value) {
        throw p.fail('min_value', 'Minimum value is greater than maximum value in uniform sampler.');
      }
      return { sampler_type: 'uniform', sampler_parameters };
    }
    case 'gaussian': {
      const p = MappingReader.open(source, parametersPath, parameters, ['seed', 'mean', 'st_dev'], 'gaussian sampler parameters');
      const sampler_parameters = { seed: readSeed(p), mean: p.float('mean', 1.0), st_dev: p.float('st_dev', 1.0, { atLeast: 0 }) };
      return { sampler_type: 'gaussian', sampler_parameters };
    }
    case 'multirangeuniform': {
      const keys = ['seed', 'intervals'];
      const p = MappingReader.open(source, parametersPath, parameters, keys, 'multirangeuniform sampler parameters');
      const sampler_parameters = { seed: readSeed(p), intervals: readIntervals(p) };
      return { sampler_type: 'multirangeuniform', sampler_parameters };
    }
  }
}

function readSeed(p: MappingReader): number {
  return p.int('seed', DEFAULT_SAMPLER_SEED);
}

function readIntervals(p: MappingReader): Array<[number, number]> {
  if (!p.has('intervals')) return [[0.0, 1.0]];
  const intervals = p.raw('intervals');
  if (!Array.isArray(intervals)) throw p.fail('intervals', `expected a list of [min, max] pairs, got ${describe(intervals)}.`);
  return intervals.map((interval: unknown, index): [number, number] => {
    const at = `${p.at('intervals')}[${index}]`;
    if (!Array.isArray(interval) || interval.length !== 2) {
      throw configError(p.source, at, `The sampling interval ${JSON.stringify(interval)} must contain exactly two values.`);
    }
    const [min, max] = interval;
    if (typeof min !== 'number' || typeof max !== 'number' || !Number.isFinite(min) || !Number.isFinite(max)) {
      throw configError(p.source, at, `expected two numbers, got ${describe(interval)}.`);
    }
    if (min > max) {
      throw configError(p.source, at, `Minimum value is greater than maximum value in interval ${JSON.stringify(interval)}.`);
    }
    return [min, max];
  });
}

const COMPLETION_CRITERIA_KEYS = [
  'behavior',
  'measure',
  'min_lesson_length',
  'signal_smoothing',
  'threshold',
  'require_reset',
] as const;

function structureCompletionCriteria(value: unknown, path: string, source: ConfigSource): CompletionCriteriaSettings {
  const r = MappingReader.open(source, path, value, COMPLETION_CRITERIA_KEYS, 'completion_criteria');
  const criteria: CompletionCriteriaSettings = {
    behavior: r.requiredString('behavior'),
    measure: r.choice('measure', COMPLETION_MEASURES, 'measure', 'reward'),
    min_lesson_length: r.int('min_lesson_length', 0, { atLeast: 0 }),
    signal_smoothing: r.bool('signal_smoothing', true),
    threshold: r.float('threshold', 0.0),
    require_reset: r.bool('require_reset', false),
  };
  if (criteria.measure === 'progress' && criteria.threshold > 1.0) {
    throw r.fail('threshold', 'Threshold for next lesson cannot be greater than 1 when the measure is progress.');
  }
  if (criteria.measure === 'progress' && criteria.threshold < 0.0) {
    throw r.fail('threshold', 'Threshold for next lesson cannot be negative when the measure is progress.');
  }
  return criteria;
}

function structureLesson(value: unknown, path: string, source: ConfigSource): Lesson {
  const r = MappingReader.open(source, path, value, ['value', 'name', 'completion_criteria'], 'a lesson');
  if (!r.has('value')) throw r.fail('value', 'missing required key "value": a number or a sampler.');
  return {
    value: structureSampler(r.raw('value'), r.at('value'), source),
    name: r.requiredString('name'),
    completion_criteria: r.optional('completion_criteria', structureCompletionCriteria),
  };
}

function structureCurriculum(
  value: unknown,
  path: string,
  source: ConfigSource,
  parameterName: string,
): EnvironmentParameterSettings {
  const r = MappingReader.open(source, path, value, ['curriculum'], 'an environment parameter with a curriculum');
  const lessons = r.raw('curriculum');
  if (!Array.isArray(lessons) || lessons.length === 0) {
    throw r.fail('curriculum', `expected a list of one or more lessons, got ${describe(lessons)}.`);
  }
  const curriculum = lessons.map((lesson: unknown, index) => structureLesson(lesson, `${r.at('curriculum')}[${index}]`, source));
  curriculum.forEach((lesson, index) => {
    const last = index === curriculum.length - 1;
    if (!last && lesson.completion_criteria === null) {
      throw configError(
        source,
        `${r.at('curriculum')}[${index}]`,
        `A non-terminal lesson does not have a completion_criteria for ${parameterName}.`,
      );
    }
    if (last && lesson.completion_criteria !== null) {
      source.logger.warning(
        `Your final lesson definition contains completion_criteria for ${parameterName}. It will be ignored.`,
      );
    }
  });
  return { curriculum };
}

/** A parameter is a number, a sampler, or a curriculum; the first two become one-lesson curricula. */
function structureEnvironmentParameters(
  value: unknown,
  path: string,
  source: ConfigSource,
): Record<string, EnvironmentParameterSettings> {
  if (!isMapping(value)) {
    const expected = 'a mapping from parameter names to a number, a sampler or a curriculum';
    throw configError(source, path, `expected ${expected}, got ${describe(value)}.`);
  }
  const parameters: Record<string, EnvironmentParameterSettings> = {};
  for (const [name, setting] of Object.entries(value)) {
    const at = childPath(path, name);
    parameters[name] =
      isMapping(setting) && 'curriculum' in setting
        ? structureCurriculum(setting, at, source, name)
        : { curriculum: [{ value: structureSampler(setting, at, source), name, completion_criteria: null }] };
  }
  return parameters;
}

// THE RUN ####################################################################################

const ENVIRONMENT_KEYS = [
  'env_path',
  'env_args',
  'base_port',
  'num_envs',
  'num_areas',
  'timeout_wait',
  'seed',
  'max_lifetime_restarts',
  'restarts_rate_limit_n',
  'restarts_rate_limit_period_s',
] as const;

function structureEnvironmentSettings(value: unknown, path: string, source: ConfigSource): EnvironmentSettings {
  const r = MappingReader.open(source, path, value, ENVIRONMENT_KEYS, 'env_settings');
  const env_path = r.optionalString('env_path', null);
  const settings: EnvironmentSettings = {
    env_path,
    env_args: r.optionalStrings('env_args', null),
    base_port: r.int('base_port', BASE_ENVIRONMENT_PORT, { atLeast: 1, atMost: 65535 }),
    num_envs: r.int('num_envs', 1, { atLeast: 1 }),
    num_areas: r.int('num_areas', 1),
    timeout_wait: r.int('timeout_wait', 60, { atLeast: 1 }),
    seed: r.int('seed', -1),
    // -1 means no limit, for both restart limits.
    max_lifetime_restarts: r.int('max_lifetime_restarts', 10, { atLeast: -1 }),
    restarts_rate_limit_n: r.int('restarts_rate_limit_n', 1, { atLeast: -1 }),
    restarts_rate_limit_period_s: r.int('restarts_rate_limit_period_s', 60, { atLeast: 0 }),
  };
  // Only one Unity Editor can connect, on one port.
  if (settings.num_envs > 1 && env_path === null) throw r.fail('num_envs', 'num_envs must be 1 if env_path is not set.');
  if (settings.num_areas <= 0) throw r.fail('num_areas', 'num_areas must be set to a positive number >= 1.');
  return settings;
}

const ENGINE_KEYS = [
  'width',
  'height',
  'quality_level',
  'time_scale',
  'target_frame_rate',
  'capture_frame_rate',
  'no_graphics',
  'no_graphics_monitor',
] as const;

function structureEngineSettings(value: unknown, path: string, source: ConfigSource): EngineSettings {
  const r = MappingReader.open(source, path, value, ENGINE_KEYS, 'engine_settings');
  return {
    width: r.int('width', 84, { atLeast: 1 }),
    height: r.int('height', 84, { atLeast: 1 }),
    quality_level: r.int('quality_level', 5, { atLeast: 0 }),
    time_scale: r.float('time_scale', 20, { above: 0 }),
    // -1: as fast as the platform allows.
    target_frame_rate: r.int('target_frame_rate', -1, { atLeast: -1 }),
    capture_frame_rate: r.int('capture_frame_rate', 60, { atLeast: 0 }),
    no_graphics: r.bool('no_graphics', false),
    no_graphics_monitor: r.bool('no_graphics_monitor', false),
  };
}

const CHECKPOINT_KEYS = [
  'run_id',
  'initialize_from',
  'load_model',
  'resume',
  'force',
  'train_model',
  'inference',
  'results_dir',
] as const;

function structureCheckpointSettings(value: unknown, path: string, source: ConfigSource): CheckpointSettings {
  const r = MappingReader.open(source, path, value, CHECKPOINT_KEYS, 'checkpoint_settings');
  const settings: CheckpointSettings = {
    run_id: r.string('run_id', 'ppo'),
    initialize_from: r.optionalString('initialize_from', null),
    load_model: r.bool('load_model', false),
    resume: r.bool('resume', false),
    force: r.bool('force', false),
    train_model: r.bool('train_model', false),
    inference: r.bool('inference', false),
    results_dir: r.string('results_dir', 'results'),
  };
  if (settings.results_dir === '') throw r.fail('results_dir', 'must name a folder, got an empty string.');
  return settings;
}

function structureTorchSettings(value: unknown, path: string, source: ConfigSource): TorchSettings {
  const r = MappingReader.open(source, path, value, ['device'], 'torch_settings');
  return { device: r.optionalString('device', null) };
}

/** The whole run from its mapping (the YAML file's, with command-line values already merged in). */
export function structureRunOptions(value: unknown, source: ConfigSource): Omit<RunOptions, 'extras'> {
  const r = MappingReader.open(source, '', value, RUN_OPTIONS_KEYS, 'the top level of the configuration');
  const default_settings = r.optional('default_settings', structureTrainerSettings);
  return {
    default_settings,
    behaviors: structureBehaviors(r.has('behaviors') ? r.raw('behaviors') : {}, 'behaviors', source, default_settings),
    env_settings: r.nested('env_settings', structureEnvironmentSettings),
    engine_settings: r.nested('engine_settings', structureEngineSettings),
    environment_parameters: r.optional('environment_parameters', structureEnvironmentParameters),
    checkpoint_settings: r.nested('checkpoint_settings', structureCheckpointSettings),
    torch_settings: r.nested('torch_settings', structureTorchSettings),
    debug: r.bool('debug', false),
  };
}
