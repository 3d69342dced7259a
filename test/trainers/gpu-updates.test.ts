import { gpuUpdatesRefusal } from '../../src/trainers/gpu-updates';
import { load } from '../config/config-helpers';

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
    // GAIL's traced passes through resnet's max pooling stay on the GPU too (max-pool.ts).
    const resnet = '        network_settings:\n          vis_encode_type: resnet\n';
    expect(gpuUpdatesRefusal(load(`${THREADED_PPO}    reward_signals:\n      gail:\n        demo_path: a.demo\n${resnet}`).options)).toBeNull();
    expect(gpuUpdatesRefusal(load(`${THREADED_POCA}    reward_signals:\n      gail:\n        demo_path: a.demo\n${resnet}`).options)).toBeNull();
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
