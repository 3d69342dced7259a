/**
 * A PPO run with the extrinsic and RND reward signals on SimpleGoal: RND trains beside the
 * policy and its statistics reach TensorBoard under upstream's tags; curiosity stays refused.
 */
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { listEventFiles, readEventFile } from '../../src/stats';
import { PpoTrainer } from '../../src/trainers/ppo/trainer';
import { RndRewardProvider } from '../../src/trainers/reward-signals/rnd';
import { tempDir } from '../helpers/paths';
import * as fs from 'fs';
import { SacTrainer } from '../../src/trainers/sac/trainer';
import { simpleGoalArgs, writeSimplePpoConfig } from './learn-helpers';
import { writeSimpleSacConfig } from './learn-sac-helpers';

const RND_SIGNALS = `    reward_signals:
      extrinsic:
        gamma: 0.99
        strength: 1.0
      rnd:
        gamma: 0.99
        strength: 0.01
        learning_rate: 1.0e-3
        network_settings:
          hidden_units: 16
          num_layers: 2
`;

describe('mlagents-learn with the RND reward signal', () => {
  const cwd = tempDir('learn-rnd');

  it('trains PPO with extrinsic + rnd and writes the RND tags', async () => {
    writeSimplePpoConfig(cwd, 1000, RND_SIGNALS);
    const result = await learn(await simpleGoalArgs('rnd'), { cwd, logger: memoryLogger() });
    const trainer = result.behaviorTrainers.get('1D') as PpoTrainer;
    const rnd = trainer.optimizer.rewardProviders.get('rnd') as RndRewardProvider;
    expect(rnd).toBeInstanceOf(RndRewardProvider);
    expect(rnd.adam.step).toBeGreaterThan(0);
    const [events] = listEventFiles(path.join(cwd, 'results', 'rnd', '1D')).map(readEventFile);
    const tags = new Set(events.flatMap((e) => (e.summary?.value ?? []).map((v) => v.tag)));
    for (const tag of ['Losses/RND Loss', 'Policy/Rnd Reward', 'Policy/Rnd Value Estimate', 'Policy/Extrinsic Reward', 'Policy/Extrinsic Value Estimate']) {
      expect(tags).toContain(tag);
    }
  }, 60000);

  it('with threaded: true, the update worker trains RND and hands its state back', async () => {
    const file = writeSimplePpoConfig(cwd, 1000, RND_SIGNALS);
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('threaded: false', 'threaded: true'));
    const result = await learn(await simpleGoalArgs('rnd-threaded'), { cwd, logger: memoryLogger() });
    const rnd = (result.behaviorTrainers.get('1D') as PpoTrainer).optimizer.rewardProviders.get('rnd') as RndRewardProvider;
    expect(rnd.adam.step).toBeGreaterThan(0);
  }, 60000);

  it('trains SAC with extrinsic + rnd: the signal updates every reward_signal_steps_per_update steps', async () => {
    const file = writeSimpleSacConfig(cwd, 300, 100);
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8') + RND_SIGNALS);
    const result = await learn(await simpleGoalArgs('rnd-sac'), { cwd, logger: memoryLogger() });
    const trainer = result.behaviorTrainers.get('1D') as SacTrainer;
    const rnd = trainer.optimizer.settings.rewardProviders!.get('rnd') as RndRewardProvider;
    // reward_signal_steps_per_update defaults to steps_per_update (1): about one update a step after buffer_init_steps.
    expect(rnd.adam.step).toBeGreaterThan(150);
    const [events] = listEventFiles(path.join(cwd, 'results', 'rnd-sac', '1D')).map(readEventFile);
    const tags = new Set(events.flatMap((e) => (e.summary?.value ?? []).map((v) => v.tag)));
    expect(tags).toContain('Losses/RND Loss');
  }, 60000);

  it('still refuses curiosity, naming the key', async () => {
    writeSimplePpoConfig(cwd, 400, '    reward_signals:\n      curiosity:\n        strength: 0.02\n');
    await expect(learn(await simpleGoalArgs('curious'), { cwd, logger: memoryLogger() })).rejects.toThrow(/curiosity reward signal is not built yet/);
  }, 30000);
});
