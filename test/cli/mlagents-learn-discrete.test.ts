/**
 * Upstream's test_simple_ppo with action sizes (0, 1): one discrete branch of 2 choices on the
 * built-in SimpleGoal 1D, over real gRPC, with upstream's test config and budget.
 */
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { tempDir } from '../helpers/paths';
import { meanOfLastFive, simpleGoalArgs, writeSimplePpoConfig } from './learn-helpers';

it('trains SimpleGoal 1D with a discrete action: the mean of the last 5 episode rewards is at least 0.9', async () => {
  const cwd = tempDir('learn-1d-discrete');
  writeSimplePpoConfig(cwd);
  const args = await simpleGoalArgs('discrete', '--env-args', '--continuous', '0', '--discrete', '1');
  const controller = await learn(args, { cwd, logger: memoryLogger() });
  const trainer = controller.behaviorTrainers.get('1D')!;
  expect(trainer.model.actionSpec.discreteBranches).toEqual([2]);
  expect(meanOfLastFive(trainer.episodeRewards)).toBeGreaterThanOrEqual(0.9);
}, 60000);
