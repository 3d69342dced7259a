/**
 * Ctrl-C while an environment has not connected yet ends the wait at once, and the process that
 * was launched for it: mlagents-drive waiting for its build, mlagents-learn waiting for a
 * restarted environment after a crash. Real child processes and a real "build": a script that,
 * once told to, starts and never connects.
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { ROOT, SCRIPTED_ENV, freePort, tempDir } from '../helpers/paths';

const DRIVE = path.join(ROOT, 'dist', 'cli', 'mlagents-drive.js');
const LEARN = path.join(ROOT, 'dist', 'cli', 'mlagents-learn.js');

/**
 * An executable that runs the scripted environment (with `scriptedArgs`) the first `connecting`
 * times it is launched, and after that writes its pid to `<folder>/stalled.pid` and sleeps without connecting.
 */
function stallingBuild(folder: string, connecting: number, scriptedArgs: string[]): string {
  const file = path.join(folder, 'build.sh');
  fs.writeFileSync(
    file,
    [
      '#!/bin/sh',
      `count=$(cat "${folder}/launches" 2>/dev/null || echo 0)`,
      `echo $((count + 1)) > "${folder}/launches"`,
      `if [ "$count" -lt ${connecting} ]; then exec "${process.execPath}" "${SCRIPTED_ENV}" "$@" ${scriptedArgs.join(' ')}; fi`,
      `echo $$ > "${folder}/stalled.pid"`,
      'exec sleep 300',
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  return file;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(condition: () => boolean, what: string, seconds = 60): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs a CLI; resolves with its exit code and output once it exits. */
function run(args: string[], cwd: string): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, args, { cwd });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

describe('Ctrl-C while waiting for an environment to connect', () => {
  it('mlagents-drive: ends the wait and the build it launched at once, exit 130', async () => {
    const folder = tempDir('interrupt-drive');
    const build = stallingBuild(folder, 0, []);
    const drive = run([DRIVE, `--env=${build}`, '--timeout-wait', '120', '--base-port', String(await freePort())], folder);
    const pidFile = path.join(folder, 'stalled.pid');
    await waitFor(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').trim() !== '', 'the build to start');
    const stalled = Number(fs.readFileSync(pidFile, 'utf8'));
    drive.child.kill('SIGINT');
    expect(await drive.exited).toBe(130);
    expect(drive.output()).toContain('Interrupted while waiting for the environment to connect');
    expect(alive(stalled)).toBe(false);
  }, 60_000);

  it('mlagents-learn: ends the wait for a restarted environment, saves the models and stops its process', async () => {
    const folder = tempDir('interrupt-learn');
    fs.writeFileSync(path.join(folder, 'config.yaml'), 'behaviors:\n  Scripted:\n    trainer_type: ppo\n    max_steps: 100000\n');
    // The first launch plays 40 steps and leaves; its restart never connects.
    const build = stallingBuild(folder, 1, ['--quit-after', '40']);
    const learn = run(
      [LEARN, 'config.yaml', '--run-id=interrupted', `--env=${build}`, '--timeout-wait', '120', `--base-port=${await freePort()}`, '--backend=wasm'],
      folder,
    );
    const pidFile = path.join(folder, 'stalled.pid');
    await waitFor(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').trim() !== '', 'the restarted build to start');
    const stalled = Number(fs.readFileSync(pidFile, 'utf8'));
    learn.child.kill('SIGINT');
    expect(await learn.exited).toBe(0);
    expect(learn.output()).toContain('Restarting worker[0]');
    expect(learn.output()).toContain('Stopped by a signal while waiting for an environment to connect: saving the models.');
    expect(fs.existsSync(path.join(folder, 'results', 'interrupted', 'Scripted.onnx'))).toBe(true);
    expect(alive(stalled)).toBe(false);
  }, 90_000);
});
