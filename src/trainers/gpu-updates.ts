/**
 * Which training runs update on WebGPU. tfjs's webgpu backend reads results back only
 * asynchronously in Node (src/networks/webgpu.ts); the passes that run there are written as
 * reading passes (src/networks/tensor-io.ts), and so far that is:
 * - PPO's and POCA's updates in their update thread, on every observation (vectors, images through
 *   every visual encoder, variable-length observations, goal signals), with or without memory,
 *   with their reward signals' updates (curiosity, RND, GAIL, GAIL's traced passes included: resnet's
 *   max pooling keeps them on the GPU, max-pool.ts) and behavioral cloning on every observation
 *   too; POCA's centralized critic (its entity attention over the group's members) beside the
 *   actor, both keeping their weights on the GPU for the whole update whatever their layers
 *   (device-parameters.ts);
 * - SAC's update in its update thread, on every observation, with or without memory, with
 *   behavioral cloning; its reward signals are evaluated and trained on the acting thread.
 * What keeps a run off WebGPU is in its settings, known before any behavior connects.
 */
import type { RunOptions, TrainerSettings } from '../config/settings';

/** Why this run's updates cannot run on WebGPU, naming the setting; null when they can. */
export function gpuUpdatesRefusal(options: RunOptions): string | null {
  if (options.checkpoint_settings.inference) return '--inference runs no updates';
  const configured: Array<[string, TrainerSettings | null]> = [['default_settings', options.default_settings], ...Object.entries(options.behaviors).map(([name, settings]): [string, TrainerSettings] => [`behaviors.${name}`, settings])];
  for (const [key, settings] of configured) {
    if (settings === null) continue;
    const refusal = settingsRefusal(settings);
    if (refusal !== null) return `${key}.${refusal} (WebGPU runs PPO's, POCA's and SAC's updates in their thread)`;
  }
  return null;
}

function settingsRefusal(settings: TrainerSettings): string | null {
  if (!settings.threaded) return 'threaded is false';
  return null;
}
