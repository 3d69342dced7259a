/**
 * The configuration of the SAC mlagents-learn tests, and trainSacCase: one SAC run of upstream's
 * sac_dummy_config with a case's changes (upstream's own cases are in ./upstream-cases.ts).
 */
import * as fs from 'fs';
import * as path from 'path';
import { runUpstreamCase } from './upstream-cases';

/**
 * Writes <folder>/config.yaml: upstream's sac_dummy_config() (everything else ML-Agents' default:
 * time_horizon 64, steps_per_update 1) with this budget; `extraHyperparameters` are more YAML
 * lines of the hyperparameters section, each indented by 6 spaces and ending with a newline.
 */
export function writeSimpleSacConfig(folder: string, maxSteps: number, bufferInitSteps = 100, extraHyperparameters = ''): string {
  const file = path.join(folder, 'config.yaml');
  fs.writeFileSync(
    file,
    `
behaviors:
  1D:
    trainer_type: sac
    hyperparameters:
      learning_rate: 5.0e-3
      learning_rate_schedule: constant
      batch_size: 8
      buffer_init_steps: ${bufferInitSteps}
      buffer_size: 5000
      tau: 0.01
      init_entcoef: 0.01
${extraHyperparameters}    network_settings:
      num_layers: 1
      hidden_units: 16
    summary_freq: 100
    max_steps: ${maxSteps}
`,
  );
  return file;
}

/** One SAC run on SimpleGoal: upstream's sac_dummy_config with these changes. */
export interface SacCase {
  /** SimpleGoal's options (--env-args), e.g. ['--num-visual', '1', '--num-vector', '0']. */
  readonly envArgs: readonly string[];
  /** Replaces these hyperparameters of sac_dummy_config. */
  readonly hyperparameters?: Record<string, unknown>;
  /** Replaces these network_settings of sac_dummy_config. */
  readonly network?: Record<string, unknown>;
  readonly maxSteps: number;
  /** mlagents-learn's --seed (the trainer's and the environment's); 1 by default. */
  readonly seed?: number;
}

/**
 * Trains one SAC case with mlagents-learn over real gRPC against the built-in SimpleGoal, in this
 * process (runUpstreamCase of ./upstream-cases.ts); returns the mean of the last 5 episode
 * rewards, as upstream's default_reward_processor judges a run.
 */
export function trainSacCase(runId: string, sacCase: SacCase): Promise<number> {
  const { envArgs, hyperparameters, network, maxSteps, seed = 1 } = sacCase;
  return runUpstreamCase({ name: runId, trainer: 'sac', envArgs, hyperparameters, network, maxSteps, threshold: 0 }, seed);
}
