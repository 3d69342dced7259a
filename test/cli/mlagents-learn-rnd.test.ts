/**
 * A PPO run with the extrinsic and RND reward signals on SimpleGoal: RND trains beside the
 * policy and its statistics reach TensorBoard under upstream's tags; on cameras and on
 * variable-length observations too.
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

  it('--resume restores the RND networks and Adam state from the checkpoint', async () => {
    writeSimplePpoConfig(cwd, 800, RND_SIGNALS);
    const rndOf = (trainer: PpoTrainer) => trainer.optimizer.rewardProviders.get('rnd') as RndRewardProvider;
    const first = rndOf((await learn(await simpleGoalArgs('rnd-resume'), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as PpoTrainer);
    expect(first.adam.step).toBeGreaterThan(0);
    // Resumed at max_steps nothing trains: what the first run saved is what comes back.
    const resumed = rndOf((await learn(await simpleGoalArgs('rnd-resume', '--resume'), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as PpoTrainer);
    expect(resumed.adam.step).toBe(first.adam.step);
    expect(resumed.predictor.parameters).toEqual(first.predictor.parameters);
    expect(resumed.target.parameters).toEqual(first.target.parameters);
    expect(resumed.adam.secondMoment).toEqual(first.adam.secondMoment);
  }, 60000);

  it('trains RND on a camera: SimpleGoal with one visual observation and no vector one', async () => {
    writeSimplePpoConfig(cwd, 500, RND_SIGNALS);
    const result = await learn(await simpleGoalArgs('rnd-visual', '--env-args', '--num-visual', '1', '--num-vector', '0'), { cwd, logger: memoryLogger() });
    const rnd = (result.behaviorTrainers.get('1D') as PpoTrainer).optimizer.rewardProviders.get('rnd') as RndRewardProvider;
    expect(rnd.predictor.body.encoders).toHaveLength(1);
    expect(rnd.adam.step).toBeGreaterThan(0);
    const [events] = listEventFiles(path.join(cwd, 'results', 'rnd-visual', '1D')).map(readEventFile);
    const losses = events.flatMap((e) => (e.summary?.value ?? []).filter((v) => v.tag === 'Losses/RND Loss').map((v) => v.simple_value ?? NaN));
    expect(losses.length).toBeGreaterThan(0);
    for (const loss of losses) expect(Number.isFinite(loss) && loss > 0).toBe(true);
  }, 90000);

  it('trains RND on variable-length observations: SimpleGoal with one vector and two variable-length observations', async () => {
    writeSimplePpoConfig(cwd, 500, RND_SIGNALS);
    const result = await learn(await simpleGoalArgs('rnd-var-len', '--env-args', '--num-var-len', '2'), { cwd, logger: memoryLogger() });
    const rnd = (result.behaviorTrainers.get('1D') as PpoTrainer).optimizer.rewardProviders.get('rnd') as RndRewardProvider;
    expect(rnd.predictor.body.attention?.observations.map((o) => o.observation)).toEqual([1, 2]);
    expect(rnd.target.body.attention).not.toBeNull();
    expect(rnd.adam.step).toBeGreaterThan(0);
    const [events] = listEventFiles(path.join(cwd, 'results', 'rnd-var-len', '1D')).map(readEventFile);
    const losses = events.flatMap((e) => (e.summary?.value ?? []).filter((v) => v.tag === 'Losses/RND Loss').map((v) => v.simple_value ?? NaN));
    expect(losses.length).toBeGreaterThan(0);
    for (const loss of losses) expect(Number.isFinite(loss) && loss > 0).toBe(true);
  }, 90000);

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
});
