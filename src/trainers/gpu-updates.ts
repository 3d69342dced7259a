/**
 * Which training runs update on WebGPU. tfjs's webgpu backend reads results back only
 * asynchronously in Node (src/networks/webgpu.ts); the passes that run there are written as
 * reading passes (src/networks/tensor-io.ts), and so far that is:
 * - PPO's and POCA's updates in their update thread, on every observation (vectors, images through
 *   every visual encoder, variable-length observations, goal signals), with or without memory,
 *   with their reward signals' updates (curiosity, RND, GAIL) and behavioral cloning on every
 *   observation too, but GAIL on resnet images; POCA's centralized critic (its entity attention
 *   over the group's members) beside the actor, both keeping their weights on the GPU for the
 *   whole update whatever their layers (device-parameters.ts);
 * - SAC's update in its update thread, on every observation, with or without memory, with
 *   behavioral cloning; its reward signals are evaluated and trained on the acting thread.
 * The observations a behavior sends are known only once it connects: PPO's and POCA's trainers ask
 * onPolicyBehaviorOnGpuRefusal then, and workerBackendFor acts on the answer.
 */
import type { Logger } from '../common/logger';
import type { RunOptions, TrainerSettings } from '../config/settings';
import type { BehaviorSpec } from '../env/behavior-spec';
import { BackendName, selectedBackend, updateBackend } from '../networks/backend';
import { isVisual } from '../networks/encoders/body-input';

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

/**
 * The backend a behavior's update worker runs on: the one chosen for updates, unless `refusal`
 * (the behavior's reason to stay off WebGPU, known once it connects) keeps it on the acting
 * backend, which one line says.
 */
export function workerBackendFor(behaviorName: string, refusal: string | null, logger: Logger | null): BackendName {
  const backend = updateBackend();
  if (backend === selectedBackend() || refusal === null) return backend;
  logger?.warning(`Behavior ${behaviorName}: ${refusal}; its updates run on the ${selectedBackend()} backend.`);
  return selectedBackend();
}

/**
 * Why a behavior's reward signals keep its PPO or POCA updates off WebGPU, or null: GAIL's
 * discriminator runs traced passes (tfjs's own gradients, for its gradient penalty), where
 * resnet's max pooling finds each window's maximum by reading it back mid-pass. Every other
 * network, the policy's, POCA's critic and the signals', runs there on every observation.
 */
export function onPolicyBehaviorOnGpuRefusal(spec: BehaviorSpec, settings: TrainerSettings): string | null {
  const gail = settings.reward_signals.gail;
  if (gail === undefined || gail.network_settings.vis_encode_type !== 'resnet') return null;
  if (!spec.observationSpecs.some((observation) => isVisual(observation.shape))) return null;
  return "reward_signals.gail: its images go through resnet, whose max pooling reads mid-pass in GAIL's traced passes: the other encoders update on WebGPU";
}

function settingsRefusal(settings: TrainerSettings): string | null {
  if (!settings.threaded) return 'threaded is false';
  return null;
}
