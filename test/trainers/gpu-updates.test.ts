import { gpuUpdatesRefusal } from '../../src/trainers/gpu-updates';
import { load } from '../config/config-helpers';

const THREADED_PPO = 'behaviors:\n  Ball:\n    trainer_type: ppo\n    threaded: true\n';

describe('gpuUpdatesRefusal', () => {
  it('takes threaded PPO on the extrinsic reward, with memory too', () => {
    expect(gpuUpdatesRefusal(load(THREADED_PPO).options)).toBeNull();
    expect(gpuUpdatesRefusal(load(`${THREADED_PPO}    network_settings:\n      memory:\n        memory_size: 16\n`).options)).toBeNull();
  });

  it.each([
    ['behaviors:\n  Ball:\n    trainer_type: sac\n', 'behaviors.Ball.trainer_type is sac'],
    ['behaviors:\n  Ball:\n    trainer_type: ppo\n', 'behaviors.Ball.threaded is false'],
    [`${THREADED_PPO}    reward_signals:\n      extrinsic: {}\n      curiosity: {}\n`, 'behaviors.Ball.reward_signals.curiosity is set'],
    [`${THREADED_PPO}default_settings:\n  trainer_type: poca\n`, 'default_settings.trainer_type is poca'],
  ])('names the setting that keeps the updates off WebGPU', (yaml, setting) => {
    expect(gpuUpdatesRefusal(load(yaml).options)).toBe(`${setting} (WebGPU runs PPO's updates in their thread, on the extrinsic reward)`);
  });

  it('refuses --inference: it runs no updates', () => {
    expect(gpuUpdatesRefusal(load(THREADED_PPO, '--inference').options)).toBe('--inference runs no updates');
  });
});
