/**
 * Which training runs update on WebGPU. tfjs's webgpu backend reads results back only
 * asynchronously in Node (src/networks/webgpu.ts); the passes that run there are written as
 * reading passes (src/networks/tensor-io.ts), and so far that is PPO's update of a policy without
 * memory, in its update thread, with its reward signals' updates (curiosity, RND, GAIL) and
 * behavioral cloning, on vector and image observations (every visual encoder but resnet). The
 * observations a behavior sends are known only once it connects: ppoBehaviorOnGpuRefusal checks
 * them then.
 */
import type { EncoderType, RunOptions, TrainerSettings } from '../config/settings';
import { BehaviorSpec, ObservationType } from '../env/behavior-spec';
import { isVariableLength, isVisual } from '../networks/encoders/body-input';

/** Why this run's updates cannot run on WebGPU, naming the setting; null when they can. */
export function gpuUpdatesRefusal(options: RunOptions): string | null {
  if (options.checkpoint_settings.inference) return '--inference runs no updates';
  const configured: Array<[string, TrainerSettings | null]> = [['default_settings', options.default_settings], ...Object.entries(options.behaviors).map(([name, settings]): [string, TrainerSettings] => [`behaviors.${name}`, settings])];
  for (const [key, settings] of configured) {
    if (settings === null) continue;
    const refusal = settingsRefusal(settings);
    if (refusal !== null) return `${key}.${refusal} (WebGPU runs PPO's updates in their thread, without memory)`;
  }
  return null;
}

/**
 * Why a behavior's observations, or the encoder of its images in its policy or in one of its
 * reward signals, keep its PPO updates off WebGPU, or null.
 */
export function ppoBehaviorOnGpuRefusal(spec: BehaviorSpec, settings: TrainerSettings): string | null {
  const signals = Object.entries(settings.reward_signals).map(([name, signal]) => [`reward_signals.${name}: `, signal.network_settings.vis_encode_type] as const);
  for (const [owner, encoder] of [['', settings.network_settings.vis_encode_type] as const, ...signals]) {
    const refusal = ppoUpdatesOnGpuRefusal(spec, encoder);
    if (refusal !== null) return owner + refusal;
  }
  return null;
}

/** Why a behavior's observations, and the encoder of its images, keep its PPO updates off WebGPU, or null. */
export function ppoUpdatesOnGpuRefusal(spec: BehaviorSpec, encoder: EncoderType): string | null {
  // resnet's max pooling picks its maxima in JavaScript, mid-pass.
  if (encoder === 'resnet' && spec.observationSpecs.some((observation) => isVisual(observation.shape))) {
    return 'its images go through resnet, whose max pooling reads mid-pass: the other encoders update on WebGPU';
  }
  // Images go through their encoders; variable-length observations' attention and goal signals' hypernetwork still read mid-pass.
  const other = spec.observationSpecs.find((observation) => isVariableLength(observation) || observation.observationType !== ObservationType.DEFAULT);
  return other === undefined ? null : `its observation ${other.name} (${other.shape.join('x')}) is not a vector nor an image: only those update on WebGPU yet`;
}

function settingsRefusal(settings: TrainerSettings): string | null {
  if (settings.trainer_type !== 'ppo') return `trainer_type is ${settings.trainer_type}`;
  if (!settings.threaded) return 'threaded is false';
  if (settings.network_settings.memory !== null) return 'network_settings.memory is set';
  return null;
}
