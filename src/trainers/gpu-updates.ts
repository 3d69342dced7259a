/**
 * Which training runs update on WebGPU. tfjs's webgpu backend reads results back only
 * asynchronously in Node (src/networks/webgpu.ts); the passes that run there are written as
 * reading passes (src/networks/tensor-io.ts), and so far that is PPO's update, trained on its
 * extrinsic reward, in its update thread: every observation (vectors, images through every visual
 * encoder, variable-length observations, goal signals), with or without memory.
 */
import type { RunOptions, TrainerSettings } from '../config/settings';

/** Why this run's updates cannot run on WebGPU, naming the setting; null when they can. */
export function gpuUpdatesRefusal(options: RunOptions): string | null {
  if (options.checkpoint_settings.inference) return '--inference runs no updates';
  const configured: Array<[string, TrainerSettings | null]> = [['default_settings', options.default_settings], ...Object.entries(options.behaviors).map(([name, settings]): [string, TrainerSettings] => [`behaviors.${name}`, settings])];
  for (const [key, settings] of configured) {
    if (settings === null) continue;
    const refusal = settingsRefusal(settings);
    if (refusal !== null) return `${key}.${refusal} (WebGPU runs PPO's updates in their thread, on the extrinsic reward)`;
  }
  return null;
}

function settingsRefusal(settings: TrainerSettings): string | null {
  if (settings.trainer_type !== 'ppo') return `trainer_type is ${settings.trainer_type}`;
  if (!settings.threaded) return 'threaded is false';
  const signal = Object.keys(settings.reward_signals).find((name) => name !== 'extrinsic');
  if (signal !== undefined) return `reward_signals.${signal} is set`;
  if (settings.behavioral_cloning !== null) return 'behavioral_cloning is set';
  return null;
}
