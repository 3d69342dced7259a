/**
 * Every built-in environment answers --help (and -h) with what it is and its options, and exits
 * without connecting: a listener on the port it would use sees no connection.
 */
import { spawn } from 'child_process';
import * as net from 'net';
import { builtinExecutable, builtinNames } from '../../src/sims/builtin';

/** Runs `executable args` with a TCP listener on `--mlagents-port`; resolves with its exit, output and the connections seen. */
async function runBesideListener(executable: string, args: string[]): Promise<{ code: number | null; stdout: string; connections: number }> {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  try {
    const child = spawn(process.execPath, [executable, ...args, '--mlagents-port', String(port)]);
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.on('exit', (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    return { code, stdout, connections };
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe.each(builtinNames())('%s', (name) => {
  it.each([['--help'], ['-h']])('answers %s with its options and connects to nothing', async (flag) => {
    const { code, stdout, connections } = await runBesideListener(builtinExecutable(name), [flag]);
    expect(code).toBe(0);
    expect(connections).toBe(0);
    expect(stdout).toContain(`${name}: `);
    expect(stdout).toMatch(/--mlagents-port VALUE\s+port of the trainer/);
    expect(stdout).not.toContain('connecting to the trainer');
  });
});
