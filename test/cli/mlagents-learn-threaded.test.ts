/**
 * mlagents-learn with threaded: true, over real gRPC with the built-in SimpleGoal environment:
 * upstream's test_simple_ppo case must still train with the updates in a worker thread (the
 * threshold, not exact values: how many steps an update overlaps depends on timing), the final
 * checkpoint must hold the last update, and --resume must go on from it. The built executable
 * (its worker script beside it in dist/) stopped by SIGINT saves and exits.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { readCheckpointFile } from '../../src/networks/checkpoint-file';
import { PpoTrainer } from '../../src/trainers/ppo/trainer';
import { ROOT, tempDir } from '../helpers/paths';
import { meanOfLastFive, simpleGoalArgs, writeSimplePpoConfig } from './learn-helpers';

/** Upstream's test config (learn-helpers.ts) with threaded: true. */
function writeThreadedConfig(folder: string, maxSteps: number): void {
  const file = writeSimplePpoConfig(folder, maxSteps);
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('threaded: false', 'threaded: true'));
}

describe('mlagents-learn on SimpleGoal 1D with threaded: true', () => {
  const cwd = tempDir('learn-threaded');
  const folder = path.join(cwd, 'results', 'threaded', '1D');
  let trainer: PpoTrainer;

  beforeAll(async () => {
    writeThreadedConfig(cwd, 3000);
    const controller = await learn(await simpleGoalArgs('threaded'), { cwd, logger: memoryLogger() });
    trainer = controller.behaviorTrainers.get('1D') as PpoTrainer;
  }, 60000);

  it('trains: the mean of the last 5 episode rewards is at least 0.9', () => {
    expect(meanOfLastFive(trainer.episodeRewards)).toBeGreaterThanOrEqual(0.9);
  });

  it('saves the final model after the last update in flight: the checkpoint holds the trainer\'s final state', () => {
    const status = JSON.parse(fs.readFileSync(path.join(cwd, 'results', 'threaded', 'run_logs', 'training_status.json'), 'utf8'));
    const final = status['1D'].final_checkpoint;
    expect(final.steps).toBe(trainer.step);
    const { meta, arrays } = readCheckpointFile(path.join(folder, 'checkpoint.ckpt'));
    expect(meta.step).toBe(final.steps);
    expect(trainer.optimizer.adam.step).toBeGreaterThan(0);
    expect(meta.adamStep).toBe(trainer.optimizer.adam.step);
    expect(arrays.get('parameters')).toEqual(trainer.model.parameters);
    expect(arrays.get('adam.second_moment')).toEqual(trainer.optimizer.adam.secondMoment);
  });

  it('--resume goes on from the saved step with updates in the worker', async () => {
    writeThreadedConfig(cwd, 3400);
    const resumeLogger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('threaded', '--resume'), { cwd, logger: resumeLogger });
    const resumed = controller.behaviorTrainers.get('1D') as PpoTrainer;
    expect(resumeLogger.lines.map((l) => l.message)).toContain(`Resuming training of 1D from step ${trainer.step}.`);
    expect(resumed.step).toBeGreaterThanOrEqual(3400);
    expect(resumed.optimizer.adam.step).toBeGreaterThan(trainer.optimizer.adam.step);
    expect(fs.existsSync(path.join(folder, 'checkpoint.ckpt'))).toBe(true);
  }, 30000);
});

describe('the built mlagents-learn with threaded: true', () => {
  it('SIGINT during training saves checkpoints that load, and the process exits with 0', async () => {
    const cwd = tempDir('learn-threaded-sigint');
    writeThreadedConfig(cwd, 1_000_000);
    const child = spawn(
      process.execPath,
      [path.join(ROOT, 'dist', 'cli', 'mlagents-learn.js'), ...(await simpleGoalArgs('stopped'))],
      { cwd, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('1D. Step: 1000.')) resolve();
      });
    });
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(output).toContain('SIGINT received: saving the models and closing the environments.');
    const status = JSON.parse(fs.readFileSync(path.join(cwd, 'results', 'stopped', 'run_logs', 'training_status.json'), 'utf8'));
    const final = status['1D'].final_checkpoint;
    expect(final.steps).toBeGreaterThanOrEqual(1000);
    const { meta, arrays } = readCheckpointFile(path.join(cwd, 'results', 'stopped', '1D', 'checkpoint.ckpt'));
    expect(meta.step).toBe(final.steps);
    expect(meta.adamStep).toBeGreaterThan(0);
    expect(arrays.get('parameters')!.every(Number.isFinite)).toBe(true);
  }, 30000);
});
