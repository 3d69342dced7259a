/**
 * A disk that fills up, met by a real run: files of the results folder are links to /dev/full,
 * where every write fails with a real ENOSPC from the kernel (Linux; skipped elsewhere).
 */
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { FileWriteError, writeFileWhole } from '../../src/common/whole-files';
import { freePort, tempDir } from '../helpers/paths';

const FULL_DEVICE = '/dev/full';
const onLinux = fs.existsSync(FULL_DEVICE) ? it : it.skip;

/** Makes `file` and the partial file a whole write goes through both point at the full device. */
function onFullDisk(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.symlinkSync(FULL_DEVICE, file);
  fs.symlinkSync(FULL_DEVICE, `${file}.partial`);
}

function filesUnder(folder: string): string[] {
  return fs.readdirSync(folder, { recursive: true, encoding: 'utf8' });
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

onLinux('a write that fails leaves the previous file and no partial file, and names the file and its folder', () => {
  const folder = tempDir('whole-file');
  const file = path.join(folder, 'status.json');
  fs.writeFileSync(file, 'before');
  fs.symlinkSync(FULL_DEVICE, `${file}.partial`);
  let thrown: unknown;
  try {
    writeFileWhole(file, 'after'.repeat(1000));
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(FileWriteError);
  expect((thrown as Error).message).toBe(
    `Could not write status.json in ${folder}: no space left on the device (ENOSPC). Free space on the disk that holds ${folder}, ` +
      'or write the results to another disk (--results-dir).',
  );
  expect(fs.readFileSync(file, 'utf8')).toBe('before');
  expect(fs.readdirSync(folder)).toEqual(['status.json']);
});

onLinux('a run whose final model and timers.json meet a full disk names them, leaves no partial file and closes the environment', async () => {
  const cwd = tempDir('learn-full-disk');
  fs.writeFileSync(
    path.join(cwd, 'config.yaml'),
    'behaviors:\n  1D:\n    trainer_type: ppo\n    hyperparameters: {batch_size: 16, buffer_size: 64}\n    network_settings: {hidden_units: 16}\n    max_steps: 200\n',
  );
  const runDir = path.join(cwd, 'results', 'full');
  onFullDisk(path.join(runDir, '1D.onnx'));
  onFullDisk(path.join(runDir, 'run_logs', 'timers.json'));
  const port = await freePort();
  const logger = memoryLogger();
  const args = ['config.yaml', '--run-id=full', '--force', '--env=builtin:SimpleGoal', `--base-port=${port}`, '--backend=wasm'];

  await expect(learn(args, { cwd, logger })).rejects.toThrow(
    `Could not write 1D.onnx in ${runDir}: no space left on the device (ENOSPC). Free space on the disk that holds ${runDir}`,
  );
  expect(logger.lines).toContainEqual({
    level: 'error',
    message: expect.stringContaining(`While ending the run: Could not write timers.json in ${path.join(runDir, 'run_logs')}: no space left`),
  });
  expect(filesUnder(runDir).filter((f) => f.endsWith('.partial'))).toEqual([]);
  // What fitted was written whole: the checkpoints and the training status.
  expect(fs.statSync(path.join(runDir, '1D', 'checkpoint.ckpt')).size).toBeGreaterThan(0);
  const status = JSON.parse(fs.readFileSync(path.join(runDir, 'run_logs', 'training_status.json'), 'utf8'));
  expect(status['1D'].checkpoints.length).toBeGreaterThan(0);
  expect(await portIsFree(port)).toBe(true);
}, 30000);
