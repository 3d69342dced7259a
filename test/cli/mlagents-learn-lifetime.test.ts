/**
 * The run's lifetime as a user lives it: the built mlagents-learn executable stopped by SIGINT
 * saves and exits cleanly; --force reuses a run id; --num-envs steps several environments; an
 * environment that dies mid-run is a clear error, and the models are still saved.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { listEventFiles } from '../../src/stats';
import { ROOT, freePort, tempDir } from '../helpers/paths';

const CLI = path.join(ROOT, 'dist', 'cli', 'mlagents-learn.js');

function writeConfig(folder: string, maxSteps: number): void {
  fs.writeFileSync(
    path.join(folder, 'config.yaml'),
    [
      'behaviors:',
      '  1D:',
      '    trainer_type: ppo',
      '    hyperparameters: {batch_size: 16, buffer_size: 64, learning_rate: 5.0e-3}',
      '    network_settings: {num_layers: 1, hidden_units: 32}',
      '    summary_freq: 200',
      '    checkpoint_interval: 200',
      '    keep_checkpoints: 2',
      `    max_steps: ${maxSteps}`,
      '',
    ].join('\n'),
  );
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

describe('mlagents-learn: the run\'s lifetime', () => {
  it('SIGINT saves a checkpoint, closes the environment and exits with 0', async () => {
    const cwd = tempDir('learn-sigint');
    writeConfig(cwd, 1_000_000);
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [CLI, 'config.yaml', '--run-id=stopped', '--env=builtin:SimpleGoal', '--seed=3', `--base-port=${port}`, '--backend=wasm'],
      { cwd, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('1D. Step: 400.')) resolve();
      });
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    });
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(output).toContain('SIGINT received: saving the models and closing the environments.');
    const status = JSON.parse(fs.readFileSync(path.join(cwd, 'results', 'stopped', 'run_logs', 'training_status.json'), 'utf8'));
    expect(status['1D'].final_checkpoint.steps).toBeGreaterThanOrEqual(400);
    expect(fs.existsSync(path.join(cwd, 'results', 'stopped', '1D', 'checkpoint.ckpt'))).toBe(true);
    expect(fs.existsSync(path.join(cwd, 'results', 'stopped', 'run_logs', 'timers.json'))).toBe(true);
    expect(await portIsFree(port)).toBe(true);
  }, 30000);

  it('--force trains again under an existing run id, with --num-envs 2', async () => {
    const cwd = tempDir('learn-force');
    writeConfig(cwd, 400);
    const args = async () => ['config.yaml', '--run-id=again', '--env=builtin:SimpleGoal', '--seed=2', `--base-port=${await freePort()}`, '--backend=wasm'];
    await learn(await args(), { cwd, logger: memoryLogger() });
    const logger = memoryLogger();
    const controller = await learn([...(await args()), '--force', '--num-envs=2'], { cwd, logger });
    expect(controller.behaviorTrainers.get('1D')!.step).toBeGreaterThanOrEqual(400);
    const runLogs = path.join(cwd, 'results', 'again', 'run_logs');
    expect(fs.existsSync(path.join(runLogs, 'Player-0.log'))).toBe(true);
    expect(fs.existsSync(path.join(runLogs, 'Player-1.log'))).toBe(true);
    // Without --resume, the earlier run's event file is replaced.
    expect(listEventFiles(path.join(cwd, 'results', 'again', '1D'))).toHaveLength(1);
    // Checkpoints every 200 steps and at the end, the 2 newest kept.
    const status = JSON.parse(fs.readFileSync(path.join(runLogs, 'training_status.json'), 'utf8'));
    const kept = status['1D'].checkpoints as Array<{ steps: number; file_path: string; auxillary_file_paths: string[] }>;
    expect(kept).toHaveLength(2);
    expect(kept[0].steps).toBeGreaterThanOrEqual(400);
    const keptFiles = kept.flatMap((c) => [c.file_path, ...c.auxillary_file_paths]);
    expect(keptFiles.every((f) => fs.existsSync(f))).toBe(true);
    const files = fs.readdirSync(path.join(cwd, 'results', 'again', '1D')).filter((f) => /\.(ckpt|onnx)$/.test(f));
    expect(files).toEqual(expect.arrayContaining([...keptFiles.map((f) => path.basename(f)), 'checkpoint.ckpt']));
    // The checkpoints dropped beyond keep_checkpoints (those near step 200) are deleted.
    expect(files.filter((f) => /^1D-2\d\d\./.test(f))).toEqual([]);
    expect(fs.existsSync(path.join(cwd, 'results', 'again', '1D.onnx'))).toBe(true);

    const initLogger = memoryLogger();
    const initialized = await learn(
      ['config.yaml', '--run-id=from-again', '--initialize-from=again', '--env=builtin:SimpleGoal', `--base-port=${await freePort()}`],
      { cwd, logger: initLogger },
    );
    expect(initLogger.lines.map((l) => l.message)).toContain(`Initialized 1D from the run in ${path.join(cwd, 'results', 'again')}.`);
    // Weights from the other run, steps from 0: the summaries start again at summary_freq.
    expect(initLogger.lines.map((l) => l.message)).toContainEqual(expect.stringMatching(/^1D\. Step: 200\./));
    expect(initialized.behaviorTrainers.get('1D')!.step).toBeLessThan(800);
  }, 30000);

  it('an environment that leaves mid-run is a clear error naming the worker, and the models are saved', async () => {
    const cwd = tempDir('learn-env-leaves');
    fs.writeFileSync(path.join(cwd, 'config.yaml'), 'default_settings:\n  trainer_type: ppo\n  max_steps: 5000\n');
    const port = await freePort();
    await expect(
      learn(['config.yaml', '--run-id=left', '--env=builtin:Scripted', `--base-port=${port}`, '--env-args', '--quit-after', '150'], {
        cwd,
        logger: memoryLogger(),
      }),
    ).rejects.toThrow(`Environment worker 0 (port ${port}) stopped: The environment on port ${port} ended the session`);
    const status = JSON.parse(fs.readFileSync(path.join(cwd, 'results', 'left', 'run_logs', 'training_status.json'), 'utf8'));
    expect(status.Scripted.final_checkpoint.steps).toBeGreaterThan(0);
  });

  it('without --env, writes configuration.yaml, listens on port 5004 and says to press Play', async () => {
    const cwd = tempDir('learn-editor');
    writeConfig(cwd, 400);
    const logger = memoryLogger();
    await expect(learn(['config.yaml', '--run-id=editor', '--timeout-wait=1'], { cwd, logger })).rejects.toThrow(
      /Press the Play button in the Unity Editor/,
    );
    expect(logger.lines.map((l) => l.message)).toContain(
      'Listening on port 5004. Start training by pressing the Play button in the Unity Editor.',
    );
    expect(fs.existsSync(path.join(cwd, 'results', 'editor', 'configuration.yaml'))).toBe(true);
    expect(await portIsFree(5004)).toBe(true);
  });

  it('an environment executable that is missing is a clear error', async () => {
    const cwd = tempDir('learn-missing-env');
    writeConfig(cwd, 400);
    await expect(
      learn(['config.yaml', '--run-id=missing', '--env=Builds/NoSuchGame.x86_64', `--base-port=${await freePort()}`], {
        cwd,
        logger: memoryLogger(),
      }),
    ).rejects.toThrow(/NoSuchGame\.x86_64/);
  });
});
