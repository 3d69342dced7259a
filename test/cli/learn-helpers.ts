/** The configuration and flags of the mlagents-learn tests. */
import * as fs from 'fs';
import * as path from 'path';
import { freePort } from '../helpers/paths';

/** Upstream's ppo_dummy_config() (dummy_config.py): everything else is ML-Agents' default (time_horizon 64). */
const SIMPLE_PPO_CONFIG = `
behaviors:
  1D:
    trainer_type: ppo
    hyperparameters:
      learning_rate: 5.0e-3
      learning_rate_schedule: constant
      batch_size: 16
      buffer_size: 64
    network_settings:
      num_layers: 1
      hidden_units: 32
    summary_freq: 500
    max_steps: MAX_STEPS
    threaded: false
`;

/** Writes <folder>/config.yaml: upstream's test config with this max_steps, and `extra` YAML lines for 1D. */
export function writeSimplePpoConfig(folder: string, maxSteps = 3000, extra = ''): string {
  const file = path.join(folder, 'config.yaml');
  fs.writeFileSync(file, SIMPLE_PPO_CONFIG.replace('MAX_STEPS', String(maxSteps)) + extra);
  return file;
}

/** mlagents-learn's arguments for a run of config.yaml on the built-in SimpleGoal, on a free port. */
export async function simpleGoalArgs(runId: string, ...more: string[]): Promise<string[]> {
  return [
    'config.yaml',
    `--run-id=${runId}`,
    '--env=builtin:SimpleGoal',
    '--seed=1',
    `--base-port=${await freePort()}`,
    '--backend=wasm',
    ...more,
  ];
}

/** The mean of the last 5 episode rewards: upstream's default_reward_processor. */
export function meanOfLastFive(rewards: readonly number[]): number {
  const last = rewards.slice(-5);
  if (last.length < 5) throw new Error(`only ${last.length} episodes ended`);
  return last.reduce((a, b) => a + b, 0) / 5;
}
