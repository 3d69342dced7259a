/**
 * mlagents-learn end to end, in this process, over real gRPC with the built-in SimpleGoal
 * environment as a child process: upstream's test_simple_ppo case (test_simple_rl.py with
 * dummy_config.py's PPO settings) must train, and the run must leave upstream's results layout.
 */
import * as fs from 'fs';
import * as path from 'path';
import { parse } from 'yaml';
import { memoryLogger } from '../../src/common/logger';
import { ConfigError } from '../../src/config';
import { learn } from '../../src/cli/mlagents-learn';
import { listEventFiles, readEventFile } from '../../src/stats';
import { freePort, tempDir } from '../helpers/paths';
import { meanOfLastFive, simpleGoalArgs, writeSimplePpoConfig } from './learn-helpers';

describe('mlagents-learn on SimpleGoal 1D, continuous actions (upstream test_simple_ppo)', () => {
  const cwd = tempDir('learn-1d');
  const logger = memoryLogger();
  let episodeRewards: readonly number[] = [];

  beforeAll(async () => {
    writeSimplePpoConfig(cwd);
    const controller = await learn(await simpleGoalArgs('simple'), { cwd, logger });
    episodeRewards = controller.behaviorTrainers.get('1D')!.episodeRewards;
  }, 60000);

  it('trains: the mean of the last 5 episode rewards is at least 0.9', () => {
    expect(meanOfLastFive(episodeRewards)).toBeGreaterThanOrEqual(0.9);
  });

  it('prints upstream\'s summary line every summary_freq steps and says which backend runs', () => {
    const messages = logger.lines.map((l) => l.message);
    expect(messages).toContain('Running the models on the wasm backend (@tensorflow/tfjs-backend-wasm).');
    const summaries = messages.filter((m) => m.startsWith('1D. Step: '));
    expect(summaries.map((m) => m.split('.')[1])).toEqual([500, 1000, 1500, 2000, 2500, 3000].map((s) => ` Step: ${s}`));
    expect(summaries[5]).toMatch(
      /^1D\. Step: 3000\. Time Elapsed: \d+\.\d{3} s\. Mean Reward: -?\d+\.\d{3}\. Std of Reward: \d+\.\d{3}\. Training\.$/,
    );
    expect(messages.some((m) => m.startsWith('Hyperparameters for behavior name 1D: \n'))).toBe(true);
  });

  it('writes configuration.yaml with the resolved options', () => {
    const written = parse(fs.readFileSync(path.join(cwd, 'results', 'simple', 'configuration.yaml'), 'utf8'));
    expect(written.behaviors['1D'].hyperparameters.batch_size).toBe(16);
    expect(written.behaviors['1D'].time_horizon).toBe(64);
    expect(written.checkpoint_settings.run_id).toBe('simple');
    expect(written.env_settings.env_path).toBe('builtin:SimpleGoal');
  });

  it('writes timers.json and training_status.json in run_logs, with the final checkpoint', () => {
    const runLogs = path.join(cwd, 'results', 'simple', 'run_logs');
    const timers = JSON.parse(fs.readFileSync(path.join(runLogs, 'timers.json'), 'utf8'));
    expect(timers.name).toBe('root');
    expect(Object.keys(timers.children)).toEqual(expect.arrayContaining(['env_reset', 'env_step', 'trainer_advance']));
    const status = JSON.parse(fs.readFileSync(path.join(runLogs, 'training_status.json'), 'utf8'));
    const final = status['1D'].final_checkpoint;
    expect(final.steps).toBeGreaterThanOrEqual(3000);
    expect(fs.existsSync(final.file_path)).toBe(true);
    // As upstream: the final record is the last checkpoint with its model copied to <run>/<Behavior>.onnx.
    expect(final.file_path).toBe(path.join(cwd, 'results', 'simple', '1D.onnx'));
    expect(status['1D'].checkpoints.at(-1)).toEqual({ ...final, file_path: path.join(cwd, 'results', 'simple', '1D', `1D-${final.steps}.onnx`) });
    expect(status.metadata.stats_format_version).toBe('0.3.0');
    expect(fs.existsSync(path.join(cwd, 'results', 'simple', '1D', 'checkpoint.ckpt'))).toBe(true);
  });

  it('writes TensorBoard events under upstream\'s tags, every summary_freq steps', () => {
    const files = listEventFiles(path.join(cwd, 'results', 'simple', '1D'));
    expect(files).toHaveLength(1);
    const events = readEventFile(files[0]);
    const tags = new Set(events.flatMap((e) => (e.summary?.value ?? []).map((v) => v.tag)));
    for (const tag of [
      'Environment/Cumulative Reward',
      'Environment/Episode Length',
      'Policy/Entropy',
      'Policy/Extrinsic Reward',
      'Policy/Extrinsic Value Estimate',
      'Policy/Learning Rate',
      'Policy/Epsilon',
      'Policy/Beta',
      'Losses/Policy Loss',
      'Losses/Value Loss',
      'Hyperparameters/text_summary',
    ]) {
      expect(tags).toContain(tag);
    }
    expect(tags).not.toContain('Is Training');
    const rewardSteps = events
      .filter((e) => e.summary?.value.some((v) => v.tag === 'Environment/Cumulative Reward'))
      .map((e) => e.step);
    expect(rewardSteps).toEqual([500, 1000, 1500, 2000, 2500, 3000]);
    const learningRates = events.flatMap((e) => e.summary?.value.filter((v) => v.tag === 'Policy/Learning Rate') ?? []);
    expect(learningRates[0].simple_value).toBeCloseTo(5e-3, 8);
  });

  it('refuses the same run id again without --resume or --force, before launching anything', async () => {
    await expect(learn(await simpleGoalArgs('simple'), { cwd, logger: memoryLogger() })).rejects.toThrow(
      /checkpoint_settings\.run_id: Previous data from this run ID was found.*--resume.*--force/,
    );
  });

  it('--resume continues from the saved step, optimizer and normalizer', async () => {
    // The step the first run saved last (a little past max_steps 3000: the steps in flight when it stopped).
    const status = JSON.parse(fs.readFileSync(path.join(cwd, 'results', 'simple', 'run_logs', 'training_status.json'), 'utf8'));
    const saved: number = status['1D'].final_checkpoint.steps;
    expect(saved).toBeGreaterThanOrEqual(3000);
    writeSimplePpoConfig(cwd, 3200);
    const resumeLogger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('simple', '--resume'), { cwd, logger: resumeLogger });
    const messages = resumeLogger.lines.map((l) => l.message);
    expect(messages).toContain(`Resuming training of 1D from step ${saved}.`);
    expect(controller.behaviorTrainers.get('1D')!.step).toBeGreaterThanOrEqual(3200);
    // The events of the first run are kept when resuming.
    expect(listEventFiles(path.join(cwd, 'results', 'simple', '1D')).length).toBe(2);
  }, 30000);

  it('refuses to start from a checkpoint of another action spec, naming the file and both specs', async () => {
    const error = await learn(await simpleGoalArgs('other-spec', '--initialize-from=simple', '--env-args', '--continuous', '0', '--discrete', '1'), {
      cwd,
      logger: memoryLogger(),
    }).then(
      () => new Error('the run started'),
      (e: unknown) => e as Error,
    );
    const file = path.join(cwd, 'results', 'simple', '1D', 'checkpoint.ckpt');
    expect(error.message).toContain(`Cannot start from ${file}: The checkpoint holds a different network`);
    expect(error.message).toContain('the checkpoint: 1 observation values, 1 continuous actions, discrete branches []');
    expect(error.message).toContain('this behavior: 1 observation values, 0 continuous actions, discrete branches [2]');
  });

  it('--inference --resume acts with the trained policy, trains nothing and saves nothing, until stopped', async () => {
    const folder = path.join(cwd, 'results', 'simple', '1D');
    const checkpointBefore = fs.readFileSync(path.join(folder, 'checkpoint.ckpt'));
    const filesBefore = fs.readdirSync(folder).filter((f) => !f.startsWith('events.out')).sort();
    const inferenceLogger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('simple', '--resume', '--inference'), {
      cwd,
      logger: inferenceLogger,
      // Inference runs until it is stopped (as upstream's): stop after a summary and 20 episodes.
      onController: (running) => {
        const watch = setInterval(() => {
          const summarized = inferenceLogger.lines.some((l) => l.message.endsWith('Not Training.'));
          if (summarized && (running.behaviorTrainers.get('1D')?.episodeRewards.length ?? 0) >= 20) {
            clearInterval(watch);
            running.requestStop();
          }
        }, 20);
      },
    });
    const trainer = controller.behaviorTrainers.get('1D')!;
    expect(trainer.shouldStillTrain).toBe(false);
    expect(meanOfLastFive(trainer.episodeRewards)).toBeGreaterThanOrEqual(0.9);
    expect(fs.readFileSync(path.join(folder, 'checkpoint.ckpt'))).toEqual(checkpointBefore);
    expect(fs.readdirSync(folder).filter((f) => !f.startsWith('events.out')).sort()).toEqual(filesBefore);
  }, 30000);
});

describe('mlagents-learn refuses what it cannot do, before any environment starts', () => {
  it('names the key of a configuration error', async () => {
    const cwd = tempDir('learn-config-error');
    writeSimplePpoConfig(cwd, 3000, '    hyperparameter:\n      batch_size: 3\n');
    const error = await learn(await simpleGoalArgs('bad'), { cwd, logger: memoryLogger() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).keyPath).toBe('behaviors.1D.hyperparameter');
    expect(fs.existsSync(path.join(cwd, 'results', 'bad'))).toBe(false);
  });
});

describe('mlagents-learn --bind-address', () => {
  const exposed = /^--bind-address 0\.0\.0\.0: the trainer's port is open to the network, without authentication or encryption/;

  it.each([
    ['0.0.0.0', 1],
    ['localhost', 0],
    ['127.0.0.1', 0],
  ])('%s: warns %d time(s) that the port is open to the network, before anything connects', async (address, warnings) => {
    const cwd = tempDir('learn-bind');
    writeSimplePpoConfig(cwd);
    const logger = memoryLogger();
    // An executable that does not exist ends the run right after the start.
    const args = ['config.yaml', '--run-id=bind', `--bind-address=${address}`, '--env=/nonexistent/Game', `--base-port=${await freePort()}`];
    await expect(learn(args, { cwd, logger })).rejects.toThrow(
      '/nonexistent/Game',
    );
    const lines = logger.lines.filter((l) => l.level === 'warning' && /open to the network/.test(l.message));
    expect(lines).toHaveLength(warnings);
    if (warnings > 0) expect(lines[0].message.replace(/\d+\.\d+\.\d+\.\d+/, '0.0.0.0')).toMatch(exposed);
  });
});
