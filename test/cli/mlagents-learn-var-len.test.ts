/**
 * Variable-length observations over real gRPC: SimpleGoal sends them as Unity's BufferSensor
 * does ([10, 5] described (VARIABLE_SIZE, NONE)), the networks encode them with upstream's
 * entity attention. A representative subset of upstream's cases (./upstream-cases.ts) reaches
 * upstream's threshold here: test_var_len_obs_and_goal_ppo with a vector goal beside one
 * variable-length observation, whose run then serves --resume and --initialize-from (and refuses
 * a run with two variable-length observations, naming the difference); the rest, SAC's four
 * included, run in `npm run bench:upstream -- var_len`.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { tempDir } from '../helpers/paths';
import { simpleGoalArgs } from './learn-helpers';
import { caseConfiguration, upstreamCase } from './upstream-cases';

describe('mlagents-learn on SimpleGoal with variable-length observations', () => {
  const cwd = tempDir('learn-var-len');
  const c = upstreamCase('test_var_len_obs_and_goal_ppo[num_vis=0-num_vector=1-num_var_len=1-(0, 1)-hyper]');
  const envArgs = ['--env-args', ...c.envArgs];

  it('test_var_len_obs_and_goal_ppo[num_vis=0-num_vector=1-num_var_len=1-(0, 1)-hyper], its policy exported with the attention', async () => {
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration(c));
    const controller = await learn(await simpleGoalArgs('var-len', ...envArgs), { cwd, logger: memoryLogger() });
    const rewards = controller.behaviorTrainers.get('1D')!.episodeRewards;
    expect(rewards.slice(-5).reduce((a, b) => a + b, 0) / 5).toBeGreaterThanOrEqual(c.threshold);
    const onnx = fs.readFileSync(path.join(cwd, 'results', 'var-len', '1D.onnx')).toString('latin1');
    const expected = ['actor.encoders.x_self_encoder', 'actor.encoders.1.self_ent_encoder.seq_layers.0.weight_transposed', 'actor.encoders.rsa.fc_q', 'actor.layers.0.hypernet.5.weight'];
    expect(expected.filter((name) => !onnx.includes(name))).toEqual([]);
  }, 900000);

  it('--resume goes on from the saved attention', async () => {
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...c, maxSteps: c.maxSteps + 200 }));
    const logger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('var-len', '--resume', ...envArgs), { cwd, logger });
    expect(logger.lines.map((l) => l.message).some((m) => /^Resuming training of 1D from step \d+\.$/.test(m))).toBe(true);
    expect(controller.behaviorTrainers.get('1D')!.step).toBeGreaterThanOrEqual(c.maxSteps + 200);
  }, 120000);

  it('--initialize-from starts a new run from it, and refuses one with another variable-length observation', async () => {
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...c, maxSteps: 200 }));
    const logger = memoryLogger();
    await learn(await simpleGoalArgs('var-len-again', '--initialize-from=var-len', ...envArgs), { cwd, logger });
    expect(logger.lines.map((l) => l.message)).toContain(`Initialized 1D from the run in ${path.join(cwd, 'results', 'var-len')}.`);

    const two = c.envArgs.map((arg, i) => (c.envArgs[i - 1] === '--num-var-len' ? '2' : arg));
    const refused = await learn(await simpleGoalArgs('var-len-two', '--initialize-from=var-len', '--env-args', ...two), { cwd, logger: memoryLogger() }).then(
      () => new Error('the run started'),
      (e: unknown) => e as Error,
    );
    expect(refused.message).toContain('The checkpoint holds a different network');
    expect(refused.message).toContain("its variableLengthObservations are 1 [10, 5] and this behavior's 1 [10, 5], 2 [10, 5]");
  }, 120000);
});
