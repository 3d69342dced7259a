import { ActionSpec, ObservationType } from '../../src/env/behavior-spec';
import { gpuUpdatesRefusal, ppoBehaviorOnGpuRefusal, ppoUpdatesOnGpuRefusal } from '../../src/trainers/gpu-updates';
import { load } from '../config/config-helpers';
import { behavior, entityObservation, vectorObservation, visualObservation } from '../networks/model-fixtures';

const THREADED_PPO = 'behaviors:\n  Ball:\n    trainer_type: ppo\n    threaded: true\n';

describe('gpuUpdatesRefusal', () => {
  it('takes threaded PPO without memory, with its reward signals and behavioral cloning', () => {
    expect(gpuUpdatesRefusal(load(THREADED_PPO).options)).toBeNull();
    const signals = `${THREADED_PPO}    reward_signals:\n      extrinsic: {}\n      curiosity: {}\n      rnd: {}\n      gail:\n        demo_path: a.demo\n    behavioral_cloning:\n      demo_path: a.demo\n`;
    expect(gpuUpdatesRefusal(load(signals).options)).toBeNull();
  });

  it.each([
    ['behaviors:\n  Ball:\n    trainer_type: sac\n', 'behaviors.Ball.trainer_type is sac'],
    ['behaviors:\n  Ball:\n    trainer_type: ppo\n', 'behaviors.Ball.threaded is false'],
    [`${THREADED_PPO}    network_settings:\n      memory:\n        memory_size: 16\n`, 'behaviors.Ball.network_settings.memory is set'],
    [`${THREADED_PPO}default_settings:\n  trainer_type: poca\n`, 'default_settings.trainer_type is poca'],
  ])('names the setting that keeps the updates off WebGPU', (yaml, setting) => {
    expect(gpuUpdatesRefusal(load(yaml).options)).toBe(`${setting} (WebGPU runs PPO's updates in their thread, without memory)`);
  });

  it('refuses --inference: it runs no updates', () => {
    expect(gpuUpdatesRefusal(load(THREADED_PPO, '--inference').options)).toBe('--inference runs no updates');
  });
});

describe('ppoUpdatesOnGpuRefusal', () => {
  it('takes vector and image observations and refuses variable-length ones, goal signals and resnet, naming why', () => {
    expect(ppoUpdatesOnGpuRefusal(behavior([8, 3], ActionSpec.createContinuous(2)), 'resnet')).toBeNull();
    const camera = { observationSpecs: [visualObservation(3, 36, 36), vectorObservation(4)], actionSpec: ActionSpec.createDiscrete([3]) };
    expect(ppoUpdatesOnGpuRefusal(camera, 'nature_cnn')).toBeNull();
    expect(ppoUpdatesOnGpuRefusal(camera, 'resnet')).toBe('its images go through resnet, whose max pooling reads mid-pass: the other encoders update on WebGPU');
    expect(ppoUpdatesOnGpuRefusal({ ...camera, observationSpecs: [vectorObservation(4), entityObservation(10, 5)] }, 'simple')).toBe(
      'its observation buffer10x5 (10x5) is not a vector nor an image: only those update on WebGPU yet',
    );
    const goal = vectorObservation(2, ObservationType.GOAL_SIGNAL);
    expect(ppoUpdatesOnGpuRefusal({ ...camera, observationSpecs: [goal] }, 'simple')).toMatch(/^its observation vector2 \(2\) is not a vector nor an image/);
  });
});

describe('ppoBehaviorOnGpuRefusal', () => {
  const camera = { observationSpecs: [visualObservation(3, 36, 36), vectorObservation(4)], actionSpec: ActionSpec.createDiscrete([3]) };
  const settings = (signalEncoder: string) =>
    load(`${THREADED_PPO}    network_settings:\n      vis_encode_type: simple\n    reward_signals:\n      extrinsic: {}\n      curiosity:\n        network_settings:\n          vis_encode_type: ${signalEncoder}\n`).options.behaviors.Ball;

  it('checks the encoder of each reward signal\'s images as the policy\'s, naming the signal', () => {
    expect(ppoBehaviorOnGpuRefusal(camera, settings('nature_cnn'))).toBeNull();
    expect(ppoBehaviorOnGpuRefusal(camera, settings('resnet'))).toBe(
      'reward_signals.curiosity: its images go through resnet, whose max pooling reads mid-pass: the other encoders update on WebGPU',
    );
    // Without images, resnet is never run.
    expect(ppoBehaviorOnGpuRefusal({ ...camera, observationSpecs: [vectorObservation(4)] }, settings('resnet'))).toBeNull();
  });
});
