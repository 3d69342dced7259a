/**
 * GAIL and behavioral cloning end to end, over real gRPC against the built-in SimpleGoal:
 * upstream's test_gail (PPO, discrete: the demonstration recorded first by SimpleGoal's solved
 * policy, GAIL the only reward signal) reaches upstream's threshold and writes upstream's tags;
 * the threaded PPO worker and SAC train both; checkpoints carry their state, and --resume
 * brings it back, a discriminator on images too; upstream's test_gail_visual_ppo cases (one camera,
 * no vector observation) reach their threshold. `npm run bench:upstream -- gail` runs all eight
 * cases (test_gail_visual_sac takes minutes here: the bench only).
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { ConfigError } from '../../src/config';
import { learn } from '../../src/cli/mlagents-learn';
import { readCheckpointFile } from '../../src/networks/checkpoint-file';
import { listEventFiles, readEventFile } from '../../src/stats';
import { PpoTrainer } from '../../src/trainers/ppo/trainer';
import { SacTrainer } from '../../src/trainers/sac/trainer';
import { GailRewardProvider } from '../../src/trainers/reward-signals/gail';
import { tempDir } from '../helpers/paths';
import { simpleGoalArgs } from './learn-helpers';
import { caseConfiguration, caseRunId, recordDemonstration, runUpstreamCase, upstreamCase } from './upstream-cases';

function tagsOf(folder: string): Set<string> {
  const events = listEventFiles(folder).flatMap(readEventFile);
  return new Set(events.flatMap((e) => (e.summary?.value ?? []).map((v) => v.tag)));
}

describe('mlagents-learn with gail and behavioral_cloning', () => {
  it('upstream\'s test_gail[ppo-(0, 1)] reaches 0.9 and writes upstream\'s GAIL and pretraining tags', async () => {
    const c = upstreamCase('test_gail[ppo-(0, 1)]');
    const cwd = tempDir('gail-ppo');
    expect(await runUpstreamCase(c, 1, cwd)).toBeGreaterThanOrEqual(c.threshold);
    const folder = path.join(cwd, 'results', caseRunId(c), '1D');
    const tags = tagsOf(folder);
    for (const tag of [
      'Policy/Gail Reward',
      'Policy/Gail Value Estimate',
      'Policy/GAIL Policy Estimate',
      'Policy/GAIL Expert Estimate',
      'Losses/GAIL Loss',
      'Policy/GAIL Grad Mag Loss',
      'Losses/Pretraining Loss',
    ]) {
      expect(tags).toContain(tag);
    }
    expect(tags).not.toContain('Policy/Extrinsic Reward');
    const checkpoint = fs.readdirSync(folder).find((name) => name.endsWith('.ckpt'))!;
    const { arrays } = readCheckpointFile(path.join(folder, checkpoint));
    expect(arrays.has('reward_signals.gail.parameters')).toBe(true);
    expect(arrays.get('behavioral_cloning.adam.step')![0]).toBeGreaterThan(0);
    // configuration.yaml keeps demo_path as written.
    expect(fs.readFileSync(path.join(cwd, 'results', caseRunId(c), 'configuration.yaml'), 'utf8')).toContain('demo_path: demos/1D.demo');
  }, 120000);

  it('refuses a demo_path that names nothing, with its key, before any environment starts', async () => {
    const cwd = tempDir('gail-missing');
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration(upstreamCase('test_gail[ppo-(0, 1)]')));
    const error = await learn(await simpleGoalArgs('missing'), { cwd, logger: memoryLogger() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).keyPath).toBe('behaviors.1D.reward_signals.gail.demo_path');
    expect((error as Error).message).toContain(`${path.join(cwd, 'demos', '1D.demo')} does not exist`);
    expect(fs.existsSync(path.join(cwd, 'results', 'missing'))).toBe(false);
  });

  it('the threaded PPO worker trains GAIL and cloning, and hands their state back', async () => {
    const c = upstreamCase('test_gail[ppo-(1, 0)]');
    const cwd = tempDir('gail-threaded');
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...c, maxSteps: 300 }).replace('threaded: false', 'threaded: true'));
    recordDemonstration(path.join(cwd, 'demos', '1D.demo'), c.demonstration!, 1);
    const controller = await learn(await simpleGoalArgs('threaded', '--env-args', ...c.envArgs), { cwd, logger: memoryLogger() });
    const trainer = controller.behaviorTrainers.get('1D') as PpoTrainer;
    expect((trainer.optimizer.rewardProviders.get('gail') as GailRewardProvider).adam.step).toBeGreaterThan(0);
    expect(trainer.optimizer.behavioralCloning!.adam.step).toBeGreaterThan(0);
  }, 120000);

  it('SAC trains both, and --resume restores GAIL\'s and cloning\'s state from the checkpoint', async () => {
    const c = upstreamCase('test_gail[sac-(0, 1)]');
    const cwd = tempDir('gail-sac');
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...c, maxSteps: 250 }));
    recordDemonstration(path.join(cwd, 'demos', '1D.demo'), c.demonstration!, 1);
    const first = (await learn(await simpleGoalArgs('sac', '--env-args', ...c.envArgs), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as SacTrainer;
    const gailSteps = (first.optimizer.settings.rewardProviders!.get('gail') as GailRewardProvider).adam.step;
    const cloningSteps = first.optimizer.behavioralCloning!.adam.step;
    // About one update a step after buffer_init_steps (100), each followed by a round of cloning.
    expect(gailSteps).toBeGreaterThan(100);
    expect(cloningSteps).toBeGreaterThan(100 * 12);
    const tags = tagsOf(path.join(cwd, 'results', 'sac', '1D'));
    for (const tag of ['Losses/Pretraining Loss', 'Losses/GAIL Loss', 'Policy/Gail Value']) expect(tags).toContain(tag);

    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...c, maxSteps: 300 }));
    const resumed = (await learn(await simpleGoalArgs('sac', '--resume', '--env-args', ...c.envArgs), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as SacTrainer;
    // As upstream's, a resumed SAC counts its updates as caught up with its steps: none are due
    // before step 350, so the restored state is all there is.
    expect((resumed.optimizer.settings.rewardProviders!.get('gail') as GailRewardProvider).adam.step).toBe(gailSteps);
    expect(resumed.optimizer.behavioralCloning!.adam.step).toBe(cloningSteps);
    expect(resumed.optimizer.behavioralCloning!.learningRate).toBe(first.optimizer.behavioralCloning!.learningRate);
  }, 120000);

  it.each(['test_gail_visual_ppo[(0, 1)]', 'test_gail_visual_ppo[(1, 0)]'])('upstream\'s %s reaches 0.9', async (name) => {
    const c = upstreamCase(name);
    expect(await runUpstreamCase(c, 1, tempDir('gail-visual-ppo'))).toBeGreaterThanOrEqual(c.threshold);
  }, 240000);

  it('on variable-length observations alone (test_gail[ppo-(0, 1)] with num_var_len 1): reaches 0.9, the discriminator attends, --resume restores it', async () => {
    const gail = upstreamCase('test_gail[ppo-(0, 1)]');
    const varLen = ['--num-vector', '0', '--num-var-len', '1'];
    const c = { ...gail, name: 'test_gail_var_len', envArgs: [...gail.envArgs, ...varLen], demonstration: { ...gail.demonstration!, envArgs: [...gail.demonstration!.envArgs, ...varLen] } };
    const cwd = tempDir('gail-var-len');
    expect(await runUpstreamCase(c, 1, cwd)).toBeGreaterThanOrEqual(c.threshold);
    const folder = path.join(cwd, 'results', caseRunId(c), '1D');
    const stepOf = (name: string) => Number(/-(\d+)\.ckpt$/.exec(name)?.[1] ?? -1);
    const last = fs.readdirSync(folder).filter((name) => stepOf(name) >= 0).sort((a, b) => stepOf(a) - stepOf(b)).pop()!;
    const saved = readCheckpointFile(path.join(folder, last)).arrays;
    const savedSteps = saved.get('reward_signals.gail.adam.step')![0];
    expect(savedSteps).toBeGreaterThan(0);

    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...c, maxSteps: c.maxSteps + 128 }));
    const resumed = (await learn(await simpleGoalArgs(caseRunId(c), '--resume', '--env-args', ...c.envArgs), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as PpoTrainer;
    const discriminator = resumed.optimizer.rewardProviders.get('gail') as GailRewardProvider;
    expect(discriminator.body.attention).not.toBeNull();
    expect(discriminator.parameters.length).toBe(saved.get('reward_signals.gail.parameters')!.length);
    // Trained on from the restored state: at least one more buffer's updates (3 epochs of 4 minibatches).
    expect(discriminator.adam.step).toBeGreaterThanOrEqual(savedSteps + 12);
  }, 300000);

  it('PPO on a camera: GAIL\'s discriminator encodes the images, and --resume restores it from the checkpoint', async () => {
    const c = upstreamCase('test_gail_visual_ppo[(1, 0)]');
    const cwd = tempDir('gail-visual');
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...c, maxSteps: 128 }));
    recordDemonstration(path.join(cwd, 'demos', '1D.demo'), c.demonstration!, 1);
    const first = (await learn(await simpleGoalArgs('visual', '--env-args', ...c.envArgs), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as PpoTrainer;
    const discriminator = first.optimizer.rewardProviders.get('gail') as GailRewardProvider;
    expect(discriminator.body.encoders).toHaveLength(1);
    const steps = discriminator.adam.step;
    expect(steps).toBeGreaterThan(0);
    const folder = path.join(cwd, 'results', 'visual', '1D');
    const stepOf = (name: string) => Number(/-(\d+)\.ckpt$/.exec(name)?.[1] ?? -1);
    const last = fs.readdirSync(folder).filter((name) => stepOf(name) >= 0).sort((a, b) => stepOf(a) - stepOf(b)).pop()!;
    const checkpoint = readCheckpointFile(path.join(folder, last));
    expect(Array.from(checkpoint.arrays.get('reward_signals.gail.parameters')!)).toEqual(Array.from(discriminator.parameters));

    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...c, maxSteps: 256 }));
    const resumed = (await learn(await simpleGoalArgs('visual', '--resume', '--env-args', ...c.envArgs), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as PpoTrainer;
    // As many policy updates again on top of the restored steps: about twice the first run's,
    // where a fresh discriminator would have taken about as many as the first run.
    expect((resumed.optimizer.rewardProviders.get('gail') as GailRewardProvider).adam.step).toBeGreaterThan(1.5 * steps);
  }, 180000);
});
