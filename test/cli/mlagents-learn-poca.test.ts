/**
 * MA-POCA over real gRPC: SimpleGoal --group plays upstream's MultiAgentEnvironment (two agents a
 * group; one that ends first waits for the other, whose end reward is the group's). Upstream's
 * test_simple_poca[(0, 1)] reaches its threshold (judged on the group rewards, see
 * ./upstream-cases.ts), with POCA's TensorBoard tags and the actor alone in the exported model;
 * its run then serves --resume (the critic and its Adam restored) and --initialize-from. Upstream's
 * test_visual_poca[1] (each member's image through the critic's encoder) reaches its threshold,
 * and test_recurrent_poca[is_multiagent=true-(0, 1)] trains with memory; test_simple_poca[(0, 1)]
 * with threaded: true reaches its threshold too, its updates in the worker. Every POCA case (simple,
 * visual, variable-length with goals, recurrent) runs in `npm run bench:upstream -- poca`.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { readCheckpointFile } from '../../src/networks/checkpoint-file';
import { PocaTrainer } from '../../src/trainers/poca/trainer';
import { tempDir } from '../helpers/paths';
import { meanOfLastFive, simpleGoalArgs } from './learn-helpers';
import { caseConfiguration, pocaGroupRewards, runUpstreamCase, upstreamCase } from './upstream-cases';

describe('mlagents-learn trainer_type: poca on SimpleGoal --group', () => {
  const cwd = tempDir('learn-poca');
  const c = upstreamCase('test_simple_poca[(0, 1)]');
  const envArgs = ['--env-args', ...c.envArgs];

  it('test_simple_poca[(0, 1)], with POCA\'s tags and the actor exported', async () => {
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration(c));
    const controller = await learn(await simpleGoalArgs('poca', ...envArgs), { cwd, logger: memoryLogger() });
    const trainer = controller.behaviorTrainers.get('1D');
    expect(trainer).toBeInstanceOf(PocaTrainer);
    expect(meanOfLastFive(pocaGroupRewards(trainer as PocaTrainer))).toBeGreaterThanOrEqual(c.threshold);

    const folder = path.join(cwd, 'results', 'poca', '1D');
    const events = fs.readdirSync(folder).filter((name) => name.startsWith('events.out.tfevents'));
    const tags = events.map((name) => fs.readFileSync(path.join(folder, name)).toString('latin1')).join('');
    const expected = ['Environment/Group Cumulative Reward', 'Policy/Extrinsic Baseline Estimate', 'Policy/Extrinsic Value Estimate', 'Losses/Baseline Loss', 'Losses/Value Loss', 'Losses/Policy Loss'];
    expect(expected.filter((tag) => !tags.includes(tag))).toEqual([]);
    const onnx = fs.readFileSync(path.join(cwd, 'results', 'poca', '1D.onnx')).toString('latin1');
    expect(onnx).toContain('discrete_actions');
    expect(onnx).not.toContain('critic');
  }, 900000);

  it('--resume restores the critic, its Adam and the most members seen, and goes on', async () => {
    const checkpoint = readCheckpointFile(path.join(cwd, 'results', 'poca', '1D', 'checkpoint.ckpt'));
    expect(checkpoint.meta.kind).toBe('poca');
    expect(checkpoint.arrays.get('critic.current_max_agents')![0]).toBe(2);
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...c, maxSteps: c.maxSteps + 200 }));
    const logger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('poca', '--resume', ...envArgs), { cwd, logger });
    const trainer = controller.behaviorTrainers.get('1D') as PocaTrainer;
    expect(logger.lines.map((l) => l.message).some((m) => /^Resuming training of 1D from step \d+\.$/.test(m))).toBe(true);
    expect(trainer.step).toBeGreaterThanOrEqual(c.maxSteps + 200);
    expect(trainer.critic.maxAgents).toBe(2);
    // Adam's step count goes on from the checkpoint's (a fresh critic Adam would count from 0).
    expect(trainer.optimizer.criticAdam.step).toBeGreaterThan(checkpoint.meta.adamStep as number);
  }, 120000);

  it('--initialize-from starts a new run from it, and refuses a run of other actions, naming the difference', async () => {
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...c, maxSteps: 200 }));
    const logger = memoryLogger();
    await learn(await simpleGoalArgs('poca-again', '--initialize-from=poca', ...envArgs), { cwd, logger });
    expect(logger.lines.map((l) => l.message)).toContain(`Initialized 1D from the run in ${path.join(cwd, 'results', 'poca')}.`);

    const continuous = upstreamCase('test_simple_poca[(1, 0)]');
    const refused = await learn(await simpleGoalArgs('poca-continuous', '--initialize-from=poca', '--env-args', ...continuous.envArgs), { cwd, logger: memoryLogger() }).then(
      () => new Error('the run started'),
      (e: unknown) => e as Error,
    );
    expect(refused.message).toContain('The checkpoint holds a different network');
  }, 120000);

  it('test_simple_poca[(0, 1)] with threaded: true: the update worker trains actor and critic to the threshold', async () => {
    const threadedCwd = tempDir('poca-threaded');
    fs.writeFileSync(path.join(threadedCwd, 'config.yaml'), caseConfiguration(c).replace('threaded: false', 'threaded: true'));
    const controller = await learn(await simpleGoalArgs('poca-threaded', ...envArgs), { cwd: threadedCwd, logger: memoryLogger() });
    const trainer = controller.behaviorTrainers.get('1D') as PocaTrainer;
    expect(trainer.settings.threaded).toBe(true);
    expect(trainer.optimizer.criticAdam.step).toBeGreaterThan(0);
    expect(meanOfLastFive(pocaGroupRewards(trainer))).toBeGreaterThanOrEqual(c.threshold);
  }, 900000);

  it('test_visual_poca[1]: each member\'s image through the critic\'s visual encoder', async () => {
    const visual = upstreamCase('test_visual_poca[1]');
    expect(await runUpstreamCase(visual, 1, tempDir('poca-visual'))).toBeGreaterThanOrEqual(visual.threshold);
  }, 300000);

  it('test_recurrent_poca[is_multiagent=true-(0, 1)]: the actor\'s and the critic\'s memories in the checkpoint, trained on sequences', async () => {
    const recurrent = upstreamCase('test_recurrent_poca[is_multiagent=true-(0, 1)]');
    const folder = tempDir('poca-recurrent');
    await runUpstreamCase(recurrent, 1, folder);
    const checkpoint = readCheckpointFile(path.join(folder, 'results', 'test_recurrent_poca_is_multiagent_true-_0_1_', '1D', 'checkpoint.ckpt'));
    expect((checkpoint.meta.critic as { memorySize: number }).memorySize).toBe(16);
    expect(checkpoint.arrays.get('critic.parameters')!.length).toBeGreaterThan(0);
  }, 300000);
});
