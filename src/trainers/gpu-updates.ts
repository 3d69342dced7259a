/**
 * Which training runs update on WebGPU. tfjs's webgpu backend reads results back only
 * asynchronously in Node (src/networks/webgpu.ts); the passes that run there are written as
 * reading passes (src/networks/tensor-io.ts), and so far that is PPO's update, trained on its
 * extrinsic reward, in its update thread: every observation (vectors, images through every visual
 * encoder, variable-length observations, goal signals), with or without memory; and SAC's update
 * without memory on vector and image observations (every visual encoder but resnet; its reward
 * signals are evaluated and trained on the acting thread), in its update thread. The
 * observations a behavior sends are known only once it connects: workerBackendFor() is told then.
 */
import type { Logger } from '../common/logger';
import type { EncoderType, RunOptions, TrainerSettings } from '../config/settings';
import { BehaviorSpec, ObservationType } from '../env/behavior-spec';
import { BackendName, selectedBackend, updateBackend } from '../networks/backend';
import { isVariableLength, isVisual } from '../networks/encoders/body-input';

/** Why this run's updates cannot run on WebGPU, naming the setting; null when they can. */
export function gpuUpdatesRefusal(options: RunOptions): string | null {
  if (options.checkpoint_settings.inference) return '--inference runs no updates';
  const configured: Array<[string, TrainerSettings | null]> = [['default_settings', options.default_settings], ...Object.entries(options.behaviors).map(([name, settings]): [string, TrainerSettings] => [`behaviors.${name}`, settings])];
  for (const [key, settings] of configured) {
    if (settings === null) continue;
    const refusal = settingsRefusal(settings);
    if (refusal !== null) return `${key}.${refusal} (WebGPU runs PPO's updates, and SAC's without memory, in their thread; PPO's on the extrinsic reward alone)`;
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

/** Why a behavior's observations, and the encoder of its images, keep its SAC updates off WebGPU, or null. */
export function sacUpdatesOnGpuRefusal(spec: BehaviorSpec, encoder: EncoderType): string | null {
  // The Q networks' resnet, attention and hypernetwork passes still read mid-pass.
  if (encoder === 'resnet' && spec.observationSpecs.some((observation) => isVisual(observation.shape))) {
    return 'its images go through resnet, whose max pooling reads mid-pass in SAC\'s Q networks: the other encoders update on WebGPU';
  }
  const other = spec.observationSpecs.find((observation) => isVariableLength(observation) || observation.observationType !== ObservationType.DEFAULT);
  return other === undefined ? null : `its observation ${other.name} (${other.shape.join('x')}) is not a vector nor an image: only those update SAC on WebGPU yet`;
}

function settingsRefusal(settings: TrainerSettings): string | null {
  if (settings.trainer_type !== 'ppo' && settings.trainer_type !== 'sac') return `trainer_type is ${settings.trainer_type}`;
  if (!settings.threaded) return 'threaded is false';
  if (settings.trainer_type === 'sac') {
    if (settings.network_settings.memory !== null) return 'network_settings.memory is set';
    return settings.behavioral_cloning === null ? null : 'behavioral_cloning is set';
  }
  const signal = Object.keys(settings.reward_signals).find((name) => name !== 'extrinsic');
  if (signal !== undefined) return `reward_signals.${signal} is set`;
  if (settings.behavioral_cloning !== null) return 'behavioral_cloning is set';
  return null;
}
