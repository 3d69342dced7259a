/** mlagents-learn --board: the board beside a run, and its port flag. */
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import { learn } from '../../src/cli/mlagents-learn';
import { memoryLogger } from '../../src/common/logger';
import { parseCommandLine } from '../../src/config/command-line';
import { freePort, tempDir } from '../helpers/paths';

describe('mlagents-learn --board', () => {
  it('takes --board and --board-port (6006 by default, as TensorBoard)', () => {
    expect(parseCommandLine(['c.yaml']).boardPort).toBeNull();
    expect(parseCommandLine(['c.yaml', '--board']).boardPort).toBe(6006);
    expect(parseCommandLine(['c.yaml', '--board', '--board-port', '7007']).boardPort).toBe(7007);
    expect(() => parseCommandLine(['c.yaml', '--board-port', '70000'])).toThrow('Expected a port number from 1 to 65535.');
  });

  it('stops before any environment starts when the board port is taken, naming --board-port', async () => {
    const cwd = tempDir('learn-board');
    fs.writeFileSync(path.join(cwd, 'config.yaml'), 'behaviors:\n  1D:\n    trainer_type: ppo\n    max_steps: 100\n');
    const port = await freePort();
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(port, 'localhost', resolve));
    try {
      const run = learn(['config.yaml', '--run-id=boarded', '--env=builtin:SimpleGoal', `--base-port=${await freePort()}`, '--board', `--board-port=${port}`], { cwd, logger: memoryLogger() });
      await expect(run).rejects.toThrow(`Port ${port} on localhost is taken (TensorBoard or another board?): choose another with --board-port.`);
      expect(fs.existsSync(path.join(cwd, 'results', 'boarded', 'run_logs', 'environments.json'))).toBe(false);
    } finally {
      taken.close();
    }
  });
});
