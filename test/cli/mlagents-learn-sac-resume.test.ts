/**
 * SAC's replay buffer across runs: with save_replay_buffer it is written beside the checkpoints
 * and --resume restores it with the networks; without it no buffer file is written. Also what a
 * SAC run leaves besides: its TensorBoard tags and the exported policy.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { listEventFiles, readEventFile } from '../../src/stats';
import { REPLAY_BUFFER_FILE, SacTrainer } from '../../src/trainers/sac/trainer';
import { tempDir } from '../helpers/paths';
import { simpleGoalArgs } from './learn-helpers';
import { writeSimpleSacConfig } from './learn-sac-helpers';

describe('mlagents-learn with SAC: the replay buffer across --resume', () => {
  const cwd = tempDir('learn-sac-resume');

  it('with save_replay_buffer, --resume goes on with the saved buffer, networks and step', async () => {
    writeSimpleSacConfig(cwd, 300, 100, '      save_replay_buffer: true\n');
    const first = (await learn(await simpleGoalArgs('saved'), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as SacTrainer;
    const bufferFile = path.join(cwd, 'results', 'saved', '1D', REPLAY_BUFFER_FILE);
    expect(fs.existsSync(bufferFile)).toBe(true);
    const saved = first.replayBuffer.size;
    expect(saved).toBe(first.step);
    // SAC's statistics under upstream's tags, and the policy exported as for PPO.
    const [events] = listEventFiles(path.join(cwd, 'results', 'saved', '1D')).map(readEventFile);
    const tags = new Set(events.flatMap((e) => (e.summary?.value ?? []).map((v) => v.tag)));
    for (const tag of [
      'Losses/Q1 Loss',
      'Losses/Q2 Loss',
      'Losses/Value Loss',
      'Losses/Policy Loss',
      'Policy/Continuous Entropy Coeff',
      'Policy/Learning Rate',
      'Policy/Extrinsic Value',
      'Policy/Entropy',
      'Environment/Cumulative Reward',
    ]) {
      expect(tags).toContain(tag);
    }
    expect(tags).not.toContain('Policy/Epsilon');
    expect(fs.existsSync(path.join(cwd, 'results', 'saved', '1D.onnx'))).toBe(true);

    writeSimpleSacConfig(cwd, 500, 100, '      save_replay_buffer: true\n');
    const logger = memoryLogger();
    const resumed = (await learn(await simpleGoalArgs('saved', '--resume'), { cwd, logger })).behaviorTrainers.get('1D') as SacTrainer;
    const messages = logger.lines.map((l) => l.message);
    expect(messages).toContain(`Resuming training of 1D from step ${first.step}.`);
    expect(messages).toContain(`Loaded the experience replay buffer of 1D (${saved} experiences) from ${bufferFile}.`);
    // Every experience of both runs is in the buffer: the saved ones came back.
    expect(resumed.replayBuffer.size).toBe(resumed.step);
    expect(resumed.optimizer.q1Adam.step).toBeGreaterThan(first.optimizer.q1Adam.step);
  }, 30000);

  it('--initialize-from takes the networks of a run with a saved buffer, not its buffer (as upstream)', async () => {
    writeSimpleSacConfig(cwd, 200, 100, '      save_replay_buffer: true\n');
    const logger = memoryLogger();
    const started = (await learn(await simpleGoalArgs('from-saved', '--initialize-from=saved'), { cwd, logger })).behaviorTrainers.get('1D') as SacTrainer;
    expect(logger.lines.map((l) => l.message)).toContain(`Initialized 1D from the run in ${path.join(cwd, 'results', 'saved')}.`);
    expect(started.replayBuffer.size).toBe(started.step);
    expect(logger.lines.some((l) => l.message.startsWith('Loaded the experience replay buffer'))).toBe(false);
  }, 30000);

  it('without save_replay_buffer, no buffer is written and --resume starts with an empty one', async () => {
    writeSimpleSacConfig(cwd, 300);
    const first = (await learn(await simpleGoalArgs('unsaved'), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as SacTrainer;
    expect(fs.existsSync(path.join(cwd, 'results', 'unsaved', '1D', REPLAY_BUFFER_FILE))).toBe(false);
    writeSimpleSacConfig(cwd, 500);
    const resumed = (await learn(await simpleGoalArgs('unsaved', '--resume'), { cwd, logger: memoryLogger() })).behaviorTrainers.get('1D') as SacTrainer;
    expect(resumed.replayBuffer.size).toBe(resumed.step - first.step);
  }, 30000);
});
