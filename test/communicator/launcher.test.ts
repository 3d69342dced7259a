import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

import {
  buildExecutableArgs,
  launchEnvironment,
  resolveExecutablePath,
  type LaunchedEnvironment,
} from '../../src/communicator/launcher';

let dir: string;
const launched: LaunchedEnvironment[] = [];

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'launcher-test-'));
});

afterAll(async () => {
  await Promise.all(launched.map((env) => env.close(500)));
  fs.rmSync(dir, { recursive: true, force: true });
});

function track(env: LaunchedEnvironment): LaunchedEnvironment {
  launched.push(env);
  return env;
}

function writeScript(name: string, body: string, mode = 0o755): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode });
  fs.chmodSync(file, mode);
  return file;
}

async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Whether `pid` runs: a zombie (dead, not yet reaped) does not count. */
function running(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

describe('buildExecutableArgs', () => {
  it('follows ML-Agents order: graphics flags, port, log file, then extra arguments', () => {
    expect(
      buildExecutableArgs({ port: 5005, noGraphics: true, logFile: '/l/Player-0.log', extraArgs: ['--foo', 'bar'] }),
    ).toEqual(['-nographics', '-batchmode', '--mlagents-port', '5005', '-logFile', '/l/Player-0.log', '--foo', 'bar']);
    expect(buildExecutableArgs({ port: 5004, noGraphics: false })).toEqual(['--mlagents-port', '5004']);
  });

  it('does not add -logFile when the extra arguments already set one', () => {
    expect(
      buildExecutableArgs({ port: 5006, noGraphics: false, logFile: '/a.log', extraArgs: ['-LOGFILE', '/b.log'] }),
    ).toEqual(['--mlagents-port', '5006', '-LOGFILE', '/b.log']);
  });
});

describe('resolveExecutablePath', () => {
  it('finds NAME.x86_64 for NAME, as ML-Agents does on Linux', () => {
    const exe = writeScript('Game.x86_64', 'exit 0');
    expect(resolveExecutablePath(path.join(dir, 'Game'), 'linux')).toBe(exe);
    // Given with its extension, or relative to the current directory, it resolves the same way.
    expect(resolveExecutablePath(exe, 'linux')).toBe(exe);
    expect(resolveExecutablePath(path.relative(process.cwd(), path.join(dir, 'Game')), 'linux')).toBe(exe);
  });

  it('falls back to NAME.x86, and accepts an existing file without extension as is', () => {
    const x86 = writeScript('Old.x86', 'exit 0');
    expect(resolveExecutablePath(path.join(dir, 'Old'), 'linux')).toBe(x86);
    expect(resolveExecutablePath(path.join(dir, 'Old.x86_64'), 'linux')).toBe(x86);
    const plain = writeScript('plain-player', 'exit 0');
    expect(resolveExecutablePath(plain, 'linux')).toBe(plain);
  });

  it('finds the player inside a macOS .app bundle', () => {
    const macos = path.join(dir, 'Mac.app', 'Contents', 'MacOS');
    fs.mkdirSync(macos, { recursive: true });
    fs.writeFileSync(path.join(macos, 'Mac'), '');
    expect(resolveExecutablePath(path.join(dir, 'Mac'), 'darwin')).toBe(path.join(macos, 'Mac'));
  });

  it('says what it tried and points at --env when nothing matches', () => {
    const missing = path.join(dir, 'NoSuchGame');
    let message = '';
    try {
      resolveExecutablePath(missing, 'linux');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain(`"${missing}"`);
    expect(message).toContain(`"${missing}.x86_64"`);
    expect(message).toContain(`"${missing}.x86"`);
    expect(message).toContain('--env');
  });
});

describe('launchEnvironment', () => {
  it('passes the exact ML-Agents argv and creates the log folder', async () => {
    const argvFile = path.join(dir, 'argv.txt');
    const exe = writeScript('Argv.x86_64', `for a in "$@"; do printf '%s\\n' "$a"; done > "${argvFile}"\nexec sleep 30`);
    const logFile = path.join(dir, 'logs', 'run', 'Player-0.log');
    const env = track(
      launchEnvironment({
        executable: path.join(dir, 'Argv'),
        port: 5005,
        noGraphics: true,
        logFile,
        extraArgs: ['--foo', 'bar'],
      }),
    );
    const expected = ['-nographics', '-batchmode', '--mlagents-port', '5005', '-logFile', logFile, '--foo', 'bar'];
    expect(env.executable).toBe(exe);
    expect(env.args).toEqual(expected);
    expect(env.pid).toBeGreaterThan(0);
    expect(fs.statSync(path.dirname(logFile)).isDirectory()).toBe(true);

    await waitFor(() => fs.existsSync(argvFile) && fs.readFileSync(argvFile, 'utf8').endsWith('bar\n'));
    expect(fs.readFileSync(argvFile, 'utf8').split('\n').slice(0, -1)).toEqual(expected);
    expect(env.hasExited()).toBe(false);

    await env.close(2000);
    expect(env.hasExited()).toBe(true);
    expect((await env.exited).signal).toBe('SIGTERM');
    expect(running(env.pid)).toBe(false);
  });

  it('close() ends the whole process group, grandchildren included', async () => {
    const pidFile = path.join(dir, 'grandchild.pid');
    writeScript('Parent.x86_64', `sleep 60 &\necho $! > "${pidFile}"\nwait`);
    const env = track(launchEnvironment({ executable: path.join(dir, 'Parent'), port: 5006, noGraphics: true }));
    await waitFor(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').trim() !== '');
    const grandchild = Number(fs.readFileSync(pidFile, 'utf8').trim());
    expect(running(grandchild)).toBe(true);

    await env.close(3000);
    await waitFor(() => !running(grandchild), 2000);
    expect(running(grandchild)).toBe(false);
    expect(env.hasExited()).toBe(true);
    // A second close is a no-op, not an error.
    await expect(env.close()).resolves.toBeUndefined();
  });

  it('reports a player that exits at once: code, log path and its last output', async () => {
    const exe = writeScript('Crash.x86_64', 'echo "starting player"\necho "boom: no GPU found" >&2\nexit 3');
    const logFile = path.join(dir, 'crash-logs', 'Player-1.log');
    const env = track(launchEnvironment({ executable: exe, port: 5007, noGraphics: false, logFile }));
    await expect(env.exited).resolves.toEqual({ code: 3, signal: null });
    expect(env.hasExited()).toBe(true);

    const message = env.describeExit();
    expect(message).toContain(exe);
    expect(message).toContain('exited with code 3');
    expect(message).toContain(logFile);
    expect(message).toContain('boom: no GPU found');
    expect(message).toContain('starting player');
    // Closing a player that is already gone does not throw.
    await expect(env.close(100)).resolves.toBeUndefined();
  });

  it('kills a player that ignores SIGTERM once the timeout passes', async () => {
    const ready = path.join(dir, 'stubborn.ready');
    writeScript('Stubborn.x86_64', `trap '' TERM\necho ready > "${ready}"\nexec sleep 60`);
    const env = track(launchEnvironment({ executable: path.join(dir, 'Stubborn'), port: 5008, noGraphics: true }));
    await waitFor(() => fs.existsSync(ready));

    const start = Date.now();
    await env.close(400);
    const elapsed = Date.now() - start;
    expect(elapsed).toBeGreaterThanOrEqual(350);
    expect(elapsed).toBeLessThan(3000);
    expect(await env.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(running(env.pid)).toBe(false);
  });

  it('explains a file that is not executable, naming the fix', () => {
    const file = writeScript('NoExec.x86_64', 'exit 0', 0o644);
    expect(() => launchEnvironment({ executable: file, port: 5009, noGraphics: true })).toThrow(
      `chmod +x "${file}"`,
    );
    expect(() => launchEnvironment({ executable: file, port: 5009, noGraphics: true })).toThrow(file);
  });

  it('explains a file the system cannot start', () => {
    const file = path.join(dir, 'BadInterp.x86_64');
    fs.writeFileSync(file, '#!/no/such/interpreter\n', { mode: 0o755 });
    let message = '';
    try {
      track(launchEnvironment({ executable: file, port: 5010, noGraphics: true }));
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain(file);
    expect(message).toContain('interpreter');
    expect(message).toContain('--env');
  });

  it('throws the not-found error for a missing build', () => {
    expect(() => launchEnvironment({ executable: path.join(dir, 'Missing'), port: 5011, noGraphics: true })).toThrow(
      /Could not find the environment executable.*Missing\.x86_64.*--env/s,
    );
  });
});
