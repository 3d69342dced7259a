/** mlagents-drive as a user runs it: the built executable, in a child process. */
import { spawnSync } from 'child_process';
import * as path from 'path';
import { ROOT, freePort } from '../helpers/paths';

const DRIVE = path.join(ROOT, 'dist', 'cli', 'mlagents-drive.js');

function run(args: string[]) {
  const result = spawnSync(process.execPath, [DRIVE, ...args], { encoding: 'utf8', timeout: 60000 });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

describe('mlagents-drive', () => {
  it('drives the built-in environment and reports its behavior', async () => {
    const { code, out } = run(['--env=builtin:Scripted', '--steps', '12', '--base-port', String(await freePort())]);
    expect(code).toBe(0);
    expect(out).toContain('Drove ScriptedEnv for 12 steps');
    // 2 agents x 12 steps; episodes of 5 steps end twice per agent.
    expect(out).toMatch(/Scripted: observations \[8\] VectorSensor; ActionSpec\(continuous: 2, discrete branches: \[\]\); 24 decisions, 4 episodes ended/);
  });

  it('names the built-in environments when asked for one that does not exist', () => {
    const { code, err } = run(['--env=builtin:Nope']);
    expect(code).toBe(1);
    expect(err).toMatch(/There is no built-in environment named "Nope"\. The built-in environments are: 3DBall, Basic, DungeonEscape, GridWorld, Hallway, Pyramids, Scripted, SimpleGoal, Sorter, Tennis, Visual3DBall /);
  });

  it('lists what it tried when the executable cannot be found', async () => {
    const { code, err } = run(['--env=/nonexistent/MyGame', '--base-port', String(await freePort())]);
    expect(code).toBe(1);
    expect(err).toContain('/nonexistent/MyGame.x86_64');
    expect(err).toMatch(/--env/);
  });

  it('warns once, at start, when --bind-address opens the port to the network', async () => {
    const open = run(['--env=builtin:Scripted', '--steps', '2', '--bind-address', '0.0.0.0', '--base-port', String(await freePort())]);
    expect(open.code).toBe(0);
    expect(open.err.match(/open to the network, without authentication or encryption/g)).toHaveLength(1);
    const local = run(['--env=builtin:Scripted', '--steps', '2', '--base-port', String(await freePort())]);
    expect(local.code).toBe(0);
    expect(local.err).not.toContain('open to the network');
  });

  it('refuses a malformed option value, naming the option', () => {
    const { code, err } = run(['--steps', 'many']);
    expect(code).not.toBe(0);
    expect(err).toContain("option '--steps <n>' argument 'many' is invalid");
  });
});
