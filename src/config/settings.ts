/**
 * The run configuration of mlagents-learn, as Unity ML-Agents' settings.py defines it.
 *
 * Fields keep ML-Agents' snake_case YAML names on purpose: a RunOptions tree is exactly the
 * dictionary ML-Agents writes to results/<run-id>/configuration.yaml (same keys, same order), so
 * the file, the code and upstream's documentation all read the same. Objects built by the
 * loader hold their keys in upstream's order, which toResolvedYaml relies on.
 */

/** Trainer types the schema knows (upstream's built-in plugins). */
export const TRAINER_TYPES = ['ppo', 'sac', 'poca'] as const;
export type TrainerType = (typeof TRAINER_TYPES)[number];

/**
 * Trainer types this project can train today. Configurations of the others load and validate,
 * so every ML-Agents configuration can be checked; the trainer refuses them at start.
 */
export const BUILT_TRAINER_TYPES: readonly TrainerType[] = ['ppo', 'sac', 'poca'];

export const SCHEDULE_TYPES = ['constant', 'linear'] as const;
export type ScheduleType = (typeof SCHEDULE_TYPES)[number];

export const ENCODER_TYPES = ['fully_connected', 'match3', 'simple', 'nature_cnn', 'resnet'] as const;
export type EncoderType = (typeof ENCODER_TYPES)[number];

export const CONDITIONING_TYPES = ['hyper', 'none'] as const;
export type ConditioningType = (typeof CONDITIONING_TYPES)[number];

export const REWARD_SIGNAL_TYPES = ['extrinsic', 'gail', 'curiosity', 'rnd'] as const;
export type RewardSignalType = (typeof REWARD_SIGNAL_TYPES)[number];

export const SAMPLER_TYPES = ['uniform', 'gaussian', 'multirangeuniform', 'constant'] as const;
export type SamplerType = (typeof SAMPLER_TYPES)[number];

export const COMPLETION_MEASURES = ['progress', 'reward'] as const;
export type CompletionMeasure = (typeof COMPLETION_MEASURES)[number];

/**
 * Our --backend flag: the tfjs backend that runs the models (auto picks the fastest present).
 * webgpu takes a GPU adapter, webgpu-software a CPU implementation of WebGPU (for CI).
 */
export const BACKENDS = ['auto', 'webgpu', 'webgpu-software', 'wasm', 'cpu', 'tensorflow', 'tensorflow-gpu'] as const;
export type Backend = (typeof BACKENDS)[number];

// NETWORKS ###################################################################################

export interface MemorySettings {
  sequence_length: number;
  memory_size: number;
}

export interface NetworkSettings {
  normalize: boolean;
  hidden_units: number;
  num_layers: number;
  vis_encode_type: EncoderType;
  memory: MemorySettings | null;
  goal_conditioning_type: ConditioningType;
  deterministic: boolean;
}

// HYPERPARAMETERS, one shape per trainer type ################################################

export interface PPOSettings {
  batch_size: number;
  buffer_size: number;
  learning_rate: number;
  beta: number;
  epsilon: number;
  lambd: number;
  num_epoch: number;
  shared_critic: boolean;
  learning_rate_schedule: ScheduleType;
  beta_schedule: ScheduleType;
  epsilon_schedule: ScheduleType;
}

/** POCA has PPO's hyperparameters without shared_critic (its critic is always shared). */
export type POCASettings = Omit<PPOSettings, 'shared_critic'>;

export interface SACSettings {
  learning_rate: number;
  learning_rate_schedule: ScheduleType;
  batch_size: number;
  buffer_size: number;
  buffer_init_steps: number;
  tau: number;
  steps_per_update: number;
  save_replay_buffer: boolean;
  init_entcoef: number;
  reward_signal_steps_per_update: number;
}

// REWARD SIGNALS #############################################################################

export interface RewardSignalSettings {
  gamma: number;
  strength: number;
  network_settings: NetworkSettings;
}

export interface GAILSettings extends RewardSignalSettings {
  learning_rate: number;
  encoding_size: number | null;
  use_actions: boolean;
  use_vail: boolean;
  demo_path: string;
}

export interface CuriositySettings extends RewardSignalSettings {
  learning_rate: number;
  encoding_size: number | null;
}

export type RNDSettings = CuriositySettings;

/** The signals a behavior trains on, in the order the configuration names them. */
export interface RewardSignals {
  extrinsic?: RewardSignalSettings;
  gail?: GAILSettings;
  curiosity?: CuriositySettings;
  rnd?: RNDSettings;
}

// TRAINERS ###################################################################################

export interface SelfPlaySettings {
  save_steps: number;
  team_change: number;
  swap_steps: number;
  window: number;
  play_against_latest_model_ratio: number;
  initial_elo: number;
}

export interface BehavioralCloningSettings {
  demo_path: string;
  steps: number;
  strength: number;
  samples_per_update: number;
  num_epoch: number | null;
  batch_size: number | null;
}

interface TrainerSettingsOf<T extends TrainerType, H> {
  trainer_type: T;
  hyperparameters: H;
  checkpoint_interval: number;
  network_settings: NetworkSettings;
  reward_signals: RewardSignals;
  init_path: string | null;
  keep_checkpoints: number;
  even_checkpoints: boolean;
  max_steps: number;
  time_horizon: number;
  summary_freq: number;
  threaded: boolean;
  self_play: SelfPlaySettings | null;
  behavioral_cloning: BehavioralCloningSettings | null;
}

/** One behavior's training settings; `trainer_type` tells which hyperparameters it holds. */
export type TrainerSettings =
  | TrainerSettingsOf<'ppo', PPOSettings>
  | TrainerSettingsOf<'sac', SACSettings>
  | TrainerSettingsOf<'poca', POCASettings>;

// ENVIRONMENT PARAMETERS #####################################################################

/** A sampler as ML-Agents writes it: its type, and its parameters with the sampler's seed. */
export type SamplerSettings =
  | { sampler_type: 'constant'; sampler_parameters: { seed: number; value: number } }
  | { sampler_type: 'uniform'; sampler_parameters: { seed: number; min_value: number; max_value: number } }
  | { sampler_type: 'gaussian'; sampler_parameters: { seed: number; mean: number; st_dev: number } }
  | { sampler_type: 'multirangeuniform'; sampler_parameters: { seed: number; intervals: Array<[number, number]> } };

export interface CompletionCriteriaSettings {
  behavior: string;
  measure: CompletionMeasure;
  min_lesson_length: number;
  signal_smoothing: boolean;
  threshold: number;
  require_reset: boolean;
}

export interface Lesson {
  value: SamplerSettings;
  name: string;
  /** How the lesson ends; null on the last lesson. */
  completion_criteria: CompletionCriteriaSettings | null;
}

/** Every environment parameter is a curriculum; a plain sampler is a one-lesson curriculum. */
export interface EnvironmentParameterSettings {
  curriculum: Lesson[];
}

// THE RUN ####################################################################################

export interface EnvironmentSettings {
  env_path: string | null;
  env_args: string[] | null;
  base_port: number;
  num_envs: number;
  num_areas: number;
  timeout_wait: number;
  seed: number;
  max_lifetime_restarts: number;
  restarts_rate_limit_n: number;
  restarts_rate_limit_period_s: number;
}

export interface EngineSettings {
  width: number;
  height: number;
  quality_level: number;
  time_scale: number;
  target_frame_rate: number;
  capture_frame_rate: number;
  no_graphics: boolean;
  /** Only the first environment (worker 0) renders; the others run with -nographics (ML-Agents release 22). */
  no_graphics_monitor: boolean;
}

export interface CheckpointSettings {
  run_id: string;
  initialize_from: string | null;
  load_model: boolean;
  resume: boolean;
  force: boolean;
  train_model: boolean;
  inference: boolean;
  results_dir: string;
}

export interface TorchSettings {
  device: string | null;
}

/** Settings of this project that ML-Agents lacks; never written to configuration.yaml. */
export interface RunExtras {
  /** Absolute path of the YAML file the run was loaded from; null when none was given. */
  config_path: string | null;
  /** Address the trainer's gRPC server listens on (--bind-address). */
  bind_address: string;
  backend: Backend;
  /** The largest message accepted from an environment, in MiB (--max-message-size). */
  max_message_mib: number;
  /** The port of the board served beside the run (--board, --board-port); null for none. */
  board_port: number | null;
}

export interface RunOptions {
  default_settings: TrainerSettings | null;
  behaviors: Record<string, TrainerSettings>;
  env_settings: EnvironmentSettings;
  engine_settings: EngineSettings;
  environment_parameters: Record<string, EnvironmentParameterSettings> | null;
  checkpoint_settings: CheckpointSettings;
  torch_settings: TorchSettings;
  debug: boolean;
  extras: RunExtras;
}

/** The top-level keys of the YAML file and of configuration.yaml, in upstream's order. */
export const RUN_OPTIONS_KEYS = [
  'default_settings',
  'behaviors',
  'env_settings',
  'engine_settings',
  'environment_parameters',
  'checkpoint_settings',
  'torch_settings',
  'debug',
] as const;
