/**
 * PPO and SAC runs with the extrinsic and curiosity reward signals on SimpleGoal over real gRPC:
 * curiosity trains beside the policy (on vector observations, a camera, variable-length
 * observations), its statistics reach TensorBoard under upstream's tags, and --resume brings its
 * network and Adam state back from the checkpoint.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { listEventFiles, readEventFile } from '../../src/stats';
import { PpoTrainer } from '../../src/trainers/ppo/trainer';
import { CuriosityRewardProvider } from '../../src/trainers/reward-signals/curiosity';
import { SacTrainer } from '../../src/trainers/sac/trainer';
import { tempDir } from '../helpers/paths';
import { simpleGoalArgs, writeSimplePpoConfig } from './learn-helpers';
import { writeSimpleSacConfig } from './learn-sac-helpers';

const CURIOSITY_SIGNALS = `    reward_signals:
      extrinsic:
        gamma: 0.99
        strength: 1.0
      curiosity:
        gamma: 0.99
        strength: 0.02
        network_settings:
          hidden_units: 16
`;

const CURIOSITY_TAGS = [
  'Losses/Curiosity Forward Loss',
  'Losses/Curiosity Inverse Loss',
  'Policy/Curiosity Reward',
  'Policy/Extrinsic Reward',
];

function tagsOf(folder: string): Set<string> {
  const [events] = listEventFiles(folder).map(readEventFile);
  return new Set(events.flatMap((e) => (e.summary?.value ?? []).map((v) => v.tag)));
}

function curiosityOf(trainer: PpoTrainer): CuriosityRewardProvider {
  const provider = trainer.optimizer.rewardProviders.get('curiosity');
  expect(provider).toBeInstanceOf(CuriosityRewardProvider);
  return provider as CuriosityRewardProvider;
}

describe('mlagents-learn with the curiosity reward signal', () => {
  const cwd = tempDir('learn-curiosity');

  it('trains PPO with extrinsic + curiosity, writes the curiosity tags, and --resume restores the curiosity network', async () => {
    writeSimplePpoConfig(cwd, 1000, CURIOSITY_SIGNALS);
    const first = curiosityOf((await learn(await simpleGoalArgs('curious'), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as PpoTrainer);
    expect(first.adam.step).toBeGreaterThan(0);
    const tags = tagsOf(path.join(cwd, 'results', 'curious', '1D'));
    for (const tag of [...CURIOSITY_TAGS, 'Policy/Curiosity Value Estimate']) expect(tags).toContain(tag);

    // Resumed at max_steps nothing trains: the network and Adam state are those the first run saved.
    const logger = memoryLogger();
    const resumedTrainer = (await learn(await simpleGoalArgs('curious', '--resume'), { cwd, logger })).behaviorTrainers.get('1D') as PpoTrainer;
    expect(logger.lines.map((l) => l.message)).toContain(`Resuming training of 1D from step ${resumedTrainer.step}.`);
    const resumed = curiosityOf(resumedTrainer);
    expect(resumed.adam.step).toBe(first.adam.step);
    expect(resumed.parameters).toEqual(first.parameters);
    expect(resumed.adam.firstMoment).toEqual(first.adam.firstMoment);
    expect(resumed.adam.secondMoment).toEqual(first.adam.secondMoment);

    // Resumed with a larger budget, curiosity trains on from there.
    writeSimplePpoConfig(cwd, 1300, CURIOSITY_SIGNALS);
    const further = curiosityOf((await learn(await simpleGoalArgs('curious', '--resume'), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as PpoTrainer);
    expect(further.adam.step).toBeGreaterThan(first.adam.step);
  }, 90000);

  it('trains curiosity on a camera with hybrid actions: its state encoder encodes the image, and both losses are finite', async () => {
    writeSimplePpoConfig(cwd, 500, CURIOSITY_SIGNALS);
    const args = ['--env-args', '--num-visual', '1', '--num-vector', '0', '--continuous', '1', '--discrete', '1'];
    const result = await learn(await simpleGoalArgs('curious-visual', ...args), { cwd, logger: memoryLogger() });
    const curiosity = curiosityOf(result.behaviorTrainers.get('1D') as PpoTrainer);
    expect(curiosity.stateEncoder.encoders).toHaveLength(1);
    expect(curiosity.adam.step).toBeGreaterThan(0);
    const [events] = listEventFiles(path.join(cwd, 'results', 'curious-visual', '1D')).map(readEventFile);
    const losses = events.flatMap((e) => (e.summary?.value ?? []).filter((v) => v.tag.startsWith('Losses/Curiosity')).map((v) => v.simple_value ?? NaN));
    expect(losses.length).toBeGreaterThanOrEqual(2);
    for (const loss of losses) expect(Number.isFinite(loss) && loss > 0).toBe(true);
  }, 90000);

  it('trains curiosity on variable-length observations alone: its state encoder attends over the entities, and both losses are finite', async () => {
    writeSimplePpoConfig(cwd, 500, CURIOSITY_SIGNALS);
    const args = ['--env-args', '--num-vector', '0', '--num-var-len', '1'];
    const result = await learn(await simpleGoalArgs('curious-var-len', ...args), { cwd, logger: memoryLogger() });
    const curiosity = curiosityOf(result.behaviorTrainers.get('1D') as PpoTrainer);
    expect(curiosity.stateEncoder.attention?.selfEncoder).toBeNull();
    expect(curiosity.adam.step).toBeGreaterThan(0);
    const [events] = listEventFiles(path.join(cwd, 'results', 'curious-var-len', '1D')).map(readEventFile);
    const losses = events.flatMap((e) => (e.summary?.value ?? []).filter((v) => v.tag.startsWith('Losses/Curiosity')).map((v) => v.simple_value ?? NaN));
    expect(losses.length).toBeGreaterThanOrEqual(2);
    for (const loss of losses) expect(Number.isFinite(loss) && loss > 0).toBe(true);
  }, 90000);

  it('trains SAC with extrinsic + curiosity on the replay buffer\'s next observations; --resume restores it', async () => {
    const file = writeSimpleSacConfig(cwd, 300, 100);
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8') + CURIOSITY_SIGNALS);
    const result = await learn(await simpleGoalArgs('curious-sac'), { cwd, logger: memoryLogger() });
    const trainer = result.behaviorTrainers.get('1D') as SacTrainer;
    const curiosity = trainer.optimizer.settings.rewardProviders!.get('curiosity') as CuriosityRewardProvider;
    expect(curiosity).toBeInstanceOf(CuriosityRewardProvider);
    // reward_signal_steps_per_update defaults to steps_per_update (1): about one update a step after buffer_init_steps.
    expect(curiosity.adam.step).toBeGreaterThan(150);
    const tags = tagsOf(path.join(cwd, 'results', 'curious-sac', '1D'));
    for (const tag of [...CURIOSITY_TAGS, 'Policy/Curiosity Value']) expect(tags).toContain(tag);

    // Resumed at max_steps nothing trains: the curiosity network comes back from the checkpoint.
    const resumedTrainer = (await learn(await simpleGoalArgs('curious-sac', '--resume'), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as SacTrainer;
    const resumed = resumedTrainer.optimizer.settings.rewardProviders!.get('curiosity') as CuriosityRewardProvider;
    expect(resumed.adam.step).toBe(curiosity.adam.step);
    expect(resumed.parameters).toEqual(curiosity.parameters);
  }, 60000);
});
