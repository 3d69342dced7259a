/**
 * A trainer that dies without a chance to clean up (SIGKILL here; V8 aborts the same way when its
 * heap runs out) while its environment has stalled: the built mlagents-learn and the built
 * Scripted environment, real processes.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { ROOT, freePort, tempDir } from '../helpers/paths';
import { processesWith } from '../helpers/processes';

const CLI = path.join(ROOT, 'dist', 'cli', 'mlagents-learn.js');

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

(fs.existsSync('/proc') ? it : it.skip)('a killed trainer does not leave its stalled environment running', async () => {
  const cwd = tempDir('learn-killed');
  fs.writeFileSync(path.join(cwd, 'config.yaml'), 'default_settings:\n  trainer_type: ppo\n  max_steps: 100000\n');
  const port = await freePort();
  const trainer = spawn(
    process.execPath,
    [CLI, 'config.yaml', '--run-id=killed', '--env=builtin:Scripted', `--base-port=${port}`, '--timeout-wait=60', '--env-args', '--hang-at-step', '20'],
    { cwd, stdio: 'ignore' },
  );
  const playerLog = path.join(cwd, 'results', 'killed', 'run_logs', 'Player-0.log');
  const stalled = () => fs.existsSync(playerLog) && fs.readFileSync(playerLog, 'utf8').includes('hanging at step');
  try {
    expect(await waitFor(stalled, 15000)).toBe(true);
    const environment = `--mlagents-port ${port}`;
    expect(processesWith(environment)).toHaveLength(1);
    trainer.kill('SIGKILL');
    expect(await waitFor(() => processesWith(environment).length === 0, 5000)).toBe(true);
  } finally {
    trainer.kill('SIGKILL');
  }
}, 30000);
