import { ActionSpec, ObservationType } from '../../src/env/behavior-spec';
import { gpuUpdatesRefusal, onPolicyBehaviorOnGpuRefusal } from '../../src/trainers/gpu-updates';
import { load } from '../config/config-helpers';
import { entityObservation, vectorObservation, visualObservation } from '../networks/model-fixtures';

const THREADED_PPO = 'behaviors:\n  Ball:\n    trainer_type: ppo\n    threaded: true\n';
const THREADED_SAC = 'behaviors:\n  Ball:\n    trainer_type: sac\n    threaded: true\n';
const THREADED_POCA = 'behaviors:\n  Ball:\n    trainer_type: poca\n    threaded: true\n';
const MEMORY = '    network_settings:\n      memory:\n        memory_size: 16\n';

describe('gpuUpdatesRefusal', () => {
  it('takes threaded PPO, POCA and SAC, with memory, their reward signals and behavioral cloning', () => {
    expect(gpuUpdatesRefusal(load(THREADED_POCA).options)).toBeNull();
    expect(gpuUpdatesRefusal(load(`${THREADED_POCA}${MEMORY}`).options)).toBeNull();
    expect(gpuUpdatesRefusal(load(`${THREADED_POCA}    behavioral_cloning:\n      demo_path: a.demo\n`).options)).toBeNull();
    expect(gpuUpdatesRefusal(load(THREADED_PPO).options)).toBeNull();
    expect(gpuUpdatesRefusal(load(`${THREADED_PPO}${MEMORY}`).options)).toBeNull();
    const signals = `${THREADED_PPO}    reward_signals:\n      extrinsic: {}\n      curiosity: {}\n      rnd: {}\n      gail:\n        demo_path: a.demo\n    behavioral_cloning:\n      demo_path: a.demo\n`;
    expect(gpuUpdatesRefusal(load(signals).options)).toBeNull();
    expect(gpuUpdatesRefusal(load(THREADED_SAC).options)).toBeNull();
    expect(gpuUpdatesRefusal(load(`${THREADED_SAC}${MEMORY}`).options)).toBeNull();
    expect(gpuUpdatesRefusal(load(`${THREADED_SAC}    behavioral_cloning: {demo_path: expert.demo}\n`).options)).toBeNull();
    // SAC's reward signals are evaluated and trained on the acting thread: only its update goes to the GPU.
    expect(gpuUpdatesRefusal(load(`${THREADED_SAC}    reward_signals:\n      extrinsic: {}\n      curiosity: {}\n`).options)).toBeNull();
  });

  it.each([
    ['behaviors:\n  Ball:\n    trainer_type: sac\n', 'behaviors.Ball.threaded is false'],
    ['behaviors:\n  Ball:\n    trainer_type: ppo\n', 'behaviors.Ball.threaded is false'],
    ['behaviors:\n  Ball:\n    trainer_type: poca\n', 'behaviors.Ball.threaded is false'],
    [`${THREADED_PPO}default_settings:\n  trainer_type: poca\n`, 'default_settings.threaded is false'],
  ])('names the setting that keeps the updates off WebGPU', (yaml, setting) => {
    expect(gpuUpdatesRefusal(load(yaml).options)).toBe(`${setting} (WebGPU runs PPO's, POCA's and SAC's updates in their thread)`);
  });

  it('refuses --inference: it runs no updates', () => {
    expect(gpuUpdatesRefusal(load(THREADED_PPO, '--inference').options)).toBe('--inference runs no updates');
  });
});

describe('onPolicyBehaviorOnGpuRefusal', () => {
  const camera = { observationSpecs: [visualObservation(3, 36, 36), vectorObservation(4)], actionSpec: ActionSpec.createDiscrete([3]) };
  const entities = { ...camera, observationSpecs: [vectorObservation(4), entityObservation(10, 5), vectorObservation(2, ObservationType.GOAL_SIGNAL)] };
  const settings = (policyEncoder: string, signal: string, signalEncoder: string) =>
    load(
      `${THREADED_PPO}    network_settings:\n      vis_encode_type: ${policyEncoder}\n    reward_signals:\n      extrinsic: {}\n      ${signal}:\n` +
        `${signal === 'gail' ? '        demo_path: a.demo\n' : ''}        network_settings:\n          vis_encode_type: ${signalEncoder}\n`,
    ).options.behaviors.Ball;

  it('takes every observation, the signals\' included, but GAIL\'s images through resnet, naming the signal', () => {
    expect(onPolicyBehaviorOnGpuRefusal(camera, settings('resnet', 'gail', 'nature_cnn'))).toBeNull();
    expect(onPolicyBehaviorOnGpuRefusal(camera, settings('simple', 'curiosity', 'resnet'))).toBeNull();
    expect(onPolicyBehaviorOnGpuRefusal(camera, settings('simple', 'rnd', 'resnet'))).toBeNull();
    expect(onPolicyBehaviorOnGpuRefusal(entities, settings('simple', 'gail', 'resnet'))).toBeNull();
    expect(onPolicyBehaviorOnGpuRefusal(entities, settings('simple', 'curiosity', 'simple'))).toBeNull();
    expect(onPolicyBehaviorOnGpuRefusal(camera, settings('simple', 'gail', 'resnet'))).toBe(
      "reward_signals.gail: its images go through resnet, whose max pooling reads mid-pass in GAIL's traced passes: the other encoders update on WebGPU",
    );
  });
});
