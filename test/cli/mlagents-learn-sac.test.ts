/**
 * Upstream's SAC acceptance cases on SimpleGoal (test_simple_sac and test_2d_sac of
 * test_simple_rl.py), over real gRPC, with upstream's sac_dummy_config (dummy_config.py) and
 * budgets: the mean of the last 5 episode rewards reaches 0.9 (1D) and 0.8 (2D).
 */
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { tempDir } from '../helpers/paths';
import { meanOfLastFive, simpleGoalArgs } from './learn-helpers';
import { writeSimpleSacConfig } from './learn-sac-helpers';

async function trainAndScore(runId: string, maxSteps: number, bufferInitSteps: number, envArgs: string[]): Promise<number> {
  const cwd = tempDir(`learn-${runId}`);
  writeSimpleSacConfig(cwd, maxSteps, bufferInitSteps);
  const args = await simpleGoalArgs(runId, '--env-args', ...envArgs);
  const controller = await learn(args, { cwd, logger: memoryLogger() });
  return meanOfLastFive(controller.behaviorTrainers.get('1D')!.episodeRewards);
}

describe("mlagents-learn on SimpleGoal: upstream's SAC acceptance cases", () => {
  it('1D, one continuous action (test_simple_sac): 1000 steps', async () => {
    const score = await trainAndScore('sac-1d-continuous', 1000, 100, ['--continuous', '1', '--discrete', '0']);
    expect(score).toBeGreaterThanOrEqual(0.9);
  }, 60000);

  it('1D, one discrete branch (test_simple_sac): 1000 steps', async () => {
    const score = await trainAndScore('sac-1d-discrete', 1000, 100, ['--continuous', '0', '--discrete', '1']);
    expect(score).toBeGreaterThanOrEqual(0.9);
  }, 60000);

  it('2D, two continuous actions (test_2d_sac): step size 0.8, buffer_init_steps 2000, 3000 steps', async () => {
    const score = await trainAndScore('sac-2d', 3000, 2000, ['--continuous', '2', '--discrete', '0', '--step-size', '0.8']);
    expect(score).toBeGreaterThanOrEqual(0.8);
  }, 60000);
});
