/**
 * A behavior name from the environment that the results layout already uses (run_logs) is
 * refused, and nothing is written into the run's logs: the built Scripted environment over gRPC.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { freePort, tempDir } from '../helpers/paths';

it('refuses an environment\'s behavior named run_logs, naming it and the fix', async () => {
  const cwd = tempDir('learn-run-logs-behavior');
  fs.writeFileSync(path.join(cwd, 'config.yaml'), 'default_settings:\n  trainer_type: ppo\n  max_steps: 500\n');
  const args = ['config.yaml', '--run-id=named', '--env=builtin:Scripted', `--base-port=${await freePort()}`, '--env-args', '--behavior', 'run_logs'];
  await expect(learn(args, { cwd, logger: memoryLogger() })).rejects.toThrow(
    'behaviors.run_logs: the behavior name "run_logs" cannot be trained: its folder in the run folder would be the run\'s log folder',
  );
  const runLogs = fs.readdirSync(path.join(cwd, 'results', 'named', 'run_logs'));
  expect(runLogs.filter((file) => /\.(ckpt|onnx)$/.test(file) || file.startsWith('events.out'))).toEqual([]);
});
