/**
 * An error nobody catches, met in the middle of a run of the built mlagents-learn (its standard
 * output closed by the reader, as `mlagents-learn ... | head` does): the run still saves its model
 * and closes its environment before it exits with a failure.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import { ROOT, freePort, tempDir } from '../helpers/paths';

const CLI = path.join(ROOT, 'dist', 'cli', 'mlagents-learn.js');

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

it('a closed standard output ends the run as a failure that saves the model and closes the environment', async () => {
  const cwd = tempDir('learn-closed-stdout');
  fs.writeFileSync(
    path.join(cwd, 'config.yaml'),
    'behaviors:\n  1D:\n    trainer_type: ppo\n    hyperparameters: {batch_size: 16, buffer_size: 64}\n    summary_freq: 100\n    max_steps: 1000000\n',
  );
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, 'config.yaml', '--run-id=closed', '--env=builtin:SimpleGoal', `--base-port=${port}`, '--backend=wasm'], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let output = '';
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('1D. Step: 200.')) resolve();
    });
  });
  child.stdout.destroy();

  expect(await exited).toBe(1);
  expect(errors).toContain('EPIPE');
  const runDir = path.join(cwd, 'results', 'closed');
  const status = JSON.parse(fs.readFileSync(path.join(runDir, 'run_logs', 'training_status.json'), 'utf8'));
  expect(status['1D'].final_checkpoint.steps).toBeGreaterThanOrEqual(200);
  expect(fs.statSync(path.join(runDir, '1D.onnx')).size).toBeGreaterThan(0);
  expect(await portIsFree(port)).toBe(true);
}, 30000);
