/**
 * Goal-conditioned training over real gRPC: SimpleGoal's vector observation sent as a goal signal
 * (--goal-indices 0) conditions the networks through upstream's hypernetwork
 * (goal_conditioning_type hyper, the default). Upstream's goal PPO cases (./upstream-cases.ts:
 * test_var_len_obs_and_goal_ppo without its variable-length observations) reach upstream's
 * threshold; what such a run leaves (the exported policy, its checkpoints) serves --resume and
 * --initialize-from, and refuses a run with the other goal_conditioning_type; SAC's networks
 * learn it too. `npm run bench:upstream -- goal` runs the cases with other seeds. Then the built-in
 * GridWorld, whose goal signal is upstream's use case, starts training with config/ppo/GridWorld.yaml.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { listEventFiles, readEventFile } from '../../src/stats';
import { ROOT, freePort, tempDir } from '../helpers/paths';
import { trainSacCase } from './learn-sac-helpers';
import { simpleGoalArgs } from './learn-helpers';
import { caseConfiguration, runUpstreamCase, upstreamCase } from './upstream-cases';

const LEARN = path.join(ROOT, 'dist', 'cli', 'mlagents-learn.js');

describe('mlagents-learn on SimpleGoal with a goal signal, conditioned by a hypernetwork', () => {
  const cwd = tempDir('learn-goal');
  const discrete = upstreamCase('test_goal_ppo[hyper-num_vector=1-(0, 1)]');
  const envArgs = ['--env-args', ...discrete.envArgs];

  it('test_goal_ppo[hyper-num_vector=1-(0, 1)], its policy exported with the hypernetwork', async () => {
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration(discrete));
    const controller = await learn(await simpleGoalArgs('goal', ...envArgs), { cwd, logger: memoryLogger() });
    const rewards = controller.behaviorTrainers.get('1D')!.episodeRewards;
    expect(rewards.slice(-5).reduce((a, b) => a + b, 0) / 5).toBeGreaterThanOrEqual(discrete.threshold);
    const run = path.join(cwd, 'results', 'goal');
    const resolved = YAML.parse(fs.readFileSync(path.join(run, 'configuration.yaml'), 'utf8'));
    expect(resolved.behaviors['1D'].network_settings.goal_conditioning_type).toBe('hyper');
    const onnx = fs.readFileSync(path.join(run, '1D.onnx')).toString('latin1');
    expect(['actor.layers.goal_selection', 'actor.layers.0.hypernet.5.weight'].filter((name) => !onnx.includes(name))).toEqual([]);
  }, 120000);

  it('test_goal_ppo[hyper-num_vector=1-(1, 0)]', async () => {
    const continuous = upstreamCase('test_goal_ppo[hyper-num_vector=1-(1, 0)]');
    expect(await runUpstreamCase(continuous)).toBeGreaterThanOrEqual(continuous.threshold);
  }, 120000);

  it('--resume goes on from the saved conditioned networks', async () => {
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...discrete, maxSteps: discrete.maxSteps + 300 }));
    const logger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('goal', '--resume', ...envArgs), { cwd, logger });
    expect(logger.lines.map((l) => l.message).some((m) => /^Resuming training of 1D from step \d+\.$/.test(m))).toBe(true);
    expect(controller.behaviorTrainers.get('1D')!.step).toBeGreaterThanOrEqual(discrete.maxSteps + 300);
  }, 60000);

  it('--initialize-from starts a new run from them, and refuses a run without conditioning, naming the setting', async () => {
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...discrete, maxSteps: 300 }));
    const logger = memoryLogger();
    await learn(await simpleGoalArgs('goal-again', '--initialize-from=goal', ...envArgs), { cwd, logger });
    expect(logger.lines.map((l) => l.message)).toContain(`Initialized 1D from the run in ${path.join(cwd, 'results', 'goal')}.`);

    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration({ ...discrete, maxSteps: 300, network: { goal_conditioning_type: 'none' } }));
    const refused = await learn(await simpleGoalArgs('goal-none', '--initialize-from=goal', ...envArgs), { cwd, logger: memoryLogger() }).then(
      () => new Error('the run started'),
      (e: unknown) => e as Error,
    );
    expect(refused.message).toContain('The checkpoint holds a different network: its bodies have a hypernetwork on observations 0 and this one no hypernetwork');
    expect(refused.message).toContain('network_settings.goal_conditioning_type');
  }, 60000);

  it("SAC (test_simple_sac's settings) learns it with its actor, value network and Q networks conditioned", async () => {
    const reward = await trainSacCase('goal-sac', { envArgs: ['--continuous', '0', '--discrete', '1', '--num-vector', '1', '--goal-indices', '0'], maxSteps: 1000 });
    expect(reward).toBeGreaterThanOrEqual(0.9);
  }, 120000);
});

describe('the built-in GridWorld with config/ppo/GridWorld.yaml (upstream\'s, goal_conditioning_type hyper)', () => {
  // A child process: under jest, Math.sqrt is a call into another realm, and Adam over the
  // hypernetworks' 4.8 million parameters takes 20 times longer than under node.
  it('trains: mlagents-learn updates its goal-conditioned networks after the first buffer of 256 steps', () => {
    const cwd = tempDir('learn-gridworld');
    const config = YAML.parse(fs.readFileSync(path.join(ROOT, 'config', 'ppo', 'GridWorld.yaml'), 'utf8'));
    // A short run: one update (buffer_size 256), one summary after it.
    Object.assign(config.behaviors.GridWorld, { max_steps: 320, summary_freq: 300 });
    fs.writeFileSync(path.join(cwd, 'config.yaml'), YAML.stringify(config));
    return freePort().then((port) => {
      const args = [LEARN, 'config.yaml', '--run-id=gridworld', '--env=builtin:GridWorld', '--seed=1', `--base-port=${port}`, '--backend=wasm'];
      const output = execFileSync(process.execPath, args, { cwd, encoding: 'utf8' });
      expect(output).toMatch(/GridWorld\. Step: 300\. .* Training\./);
      const run = path.join(cwd, 'results', 'gridworld');
      const resolved = YAML.parse(fs.readFileSync(path.join(run, 'configuration.yaml'), 'utf8'));
      expect(resolved.behaviors.GridWorld.network_settings.goal_conditioning_type).toBe('hyper');
      const onnx = fs.readFileSync(path.join(run, 'GridWorld.onnx')).toString('latin1');
      expect(['actor.layers.goal_selection', 'actor.layers.0.hypernet.5.weight'].filter((name) => !onnx.includes(name))).toEqual([]);
      const events = listEventFiles(path.join(run, 'GridWorld')).flatMap(readEventFile);
      const tags = new Set(events.flatMap((e) => (e.summary?.value ?? []).map((v) => v.tag)));
      expect(tags).toContain('Losses/Policy Loss');
    });
  }, 240000);
});
