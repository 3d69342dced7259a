/**
 * Upstream's recurrent PPO acceptance cases on SimpleGoal's memory variant (the goal shown for
 * the first observations only, so that only a policy with memory can reach it), over real gRPC,
 * with upstream's configs, budgets and thresholds (./upstream-cases.ts), judged as upstream judges;
 * then what a recurrent run leaves: a policy that exports its memory, acts with it under
 * --inference, resumes and starts another run (--initialize-from).
 * `npm run bench:upstream -- recurrent` runs every recurrent case.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { tempDir } from '../helpers/paths';
import { meanOfLastFive, simpleGoalArgs } from './learn-helpers';
import { caseConfiguration, runUpstreamCase, upstreamCase } from './upstream-cases';

describe("mlagents-learn on SimpleGoal: upstream's recurrent PPO cases", () => {
  const cwd = tempDir('learn-memory');
  const discrete = upstreamCase('test_recurrent_ppo[(0, 1)]');
  const envArgs = ['--env-args', ...discrete.envArgs];

  it('test_recurrent_ppo[(0, 1)], and its policy exported with recurrent_in and recurrent_out', async () => {
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration(discrete));
    const controller = await learn(await simpleGoalArgs('memory', ...envArgs), { cwd, logger: memoryLogger() });
    expect(meanOfLastFive(controller.behaviorTrainers.get('1D')!.episodeRewards)).toBeGreaterThanOrEqual(discrete.threshold);
    const onnx = fs.readFileSync(path.join(cwd, 'results', 'memory', '1D.onnx')).toString('latin1');
    expect(onnx).toContain('recurrent_in');
    expect(onnx).toContain('recurrent_out');
  }, 240000);

  it('--inference --resume acts with the trained policy and its memories: the goal is still found', async () => {
    const logger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('memory', '--resume', '--inference', ...envArgs), {
      cwd,
      logger,
      onController: (running) => {
        const watch = setInterval(() => {
          if ((running.behaviorTrainers.get('1D')?.episodeRewards.length ?? 0) >= 20) {
            clearInterval(watch);
            running.requestStop();
          }
        }, 20);
      },
    });
    const rewards = controller.behaviorTrainers.get('1D')!.episodeRewards;
    // The goal is hidden after the first steps: a policy whose memories were dropped would miss it half the time.
    expect(meanOfLastFive(rewards)).toBeGreaterThanOrEqual(0.9);
  }, 60000);

  it('--resume goes on from the saved recurrent networks', async () => {
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...discrete, maxSteps: discrete.maxSteps + 500 }));
    const logger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('memory', '--resume', ...envArgs), { cwd, logger });
    expect(logger.lines.map((l) => l.message).some((m) => /^Resuming training of 1D from step \d+\.$/.test(m))).toBe(true);
    expect(controller.behaviorTrainers.get('1D')!.step).toBeGreaterThanOrEqual(discrete.maxSteps + 500);
  }, 60000);

  it('--initialize-from starts a new run from the recurrent networks', async () => {
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...discrete, maxSteps: 300 }));
    const logger = memoryLogger();
    await learn(await simpleGoalArgs('memory-again', '--initialize-from=memory', ...envArgs), { cwd, logger });
    expect(logger.lines.map((l) => l.message)).toContain(`Initialized 1D from the run in ${path.join(cwd, 'results', 'memory')}.`);
    expect(fs.existsSync(path.join(cwd, 'results', 'memory-again', '1D.onnx'))).toBe(true);
  }, 60000);

  it('test_recurrent_ppo[(1, 0)] over two environments: each agent keeps its own memories, whichever worker it is on', async () => {
    const continuous = upstreamCase('test_recurrent_ppo[(1, 0)]');
    const folder = tempDir('learn-memory-two-envs');
    fs.writeFileSync(path.join(folder, 'config.yaml'), caseConfiguration(continuous));
    const args = await simpleGoalArgs('two', '--num-envs=2', '--env-args', ...continuous.envArgs);
    const controller = await learn(args, { cwd: folder, logger: memoryLogger() });
    expect(meanOfLastFive(controller.behaviorTrainers.get('1D')!.episodeRewards)).toBeGreaterThanOrEqual(continuous.threshold);
  }, 240000);

  it('test_hybrid_recurrent_ppo', async () => {
    const c = upstreamCase('test_hybrid_recurrent_ppo');
    expect(await runUpstreamCase(c)).toBeGreaterThanOrEqual(c.threshold);
  }, 240000);
});
