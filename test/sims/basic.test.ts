/** Basic over the real protocol, its heuristic recorded to a .demo, and mlagents-envs --list. */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { readDemoFile } from '../../src/communicator/demo-file';
import { EngineConfigurationChannel } from '../../src/communicator/side-channels/engine-configuration-channel';
import { UnityEnvironment, UnityEnvironmentOptions } from '../../src/env/unity-environment';
import { closeOpenedEnvironments, openBuiltEnvironment } from '../helpers/environments';
import { ROOT, tempDir } from '../helpers/paths';

const BASIC = path.join(ROOT, 'dist', 'sims', 'envs', 'basic.js');
afterEach(closeOpenedEnvironments);

async function basic(args: string[] = [], options: Partial<UnityEnvironmentOptions> = {}): Promise<UnityEnvironment> {
  const env = await openBuiltEnvironment(BASIC, args, options);
  await env.reset();
  return env;
}

async function walk(env: UnityEnvironment, action: number, steps: number): Promise<number[]> {
  const rewards: number[] = [];
  for (let i = 0; i < steps; i++) {
    env.setActions('Basic', { discrete: [action] });
    await env.step();
    const [decision, terminal] = env.getSteps('Basic');
    rewards.push(terminal.length > 0 ? terminal.reward[0] : decision.reward[0]);
  }
  return rewards;
}

it('shows the spec of Unity\'s Basic: a one-hot position of 20 and one branch of 3', async () => {
  const env = await basic();
  const spec = env.behaviorSpecs.get('Basic')!;
  expect(spec.observationSpecs.map((o) => o.shape)).toEqual([[20]]);
  expect(spec.actionSpec.discreteBranches).toEqual([3]);
  expect(spec.actionSpec.continuousSize).toBe(0);
  const [decision] = env.getSteps('Basic');
  expect(Array.from(decision.obs[0]).indexOf(1)).toBe(10);
});

it('pays the large goal after 7 steps right and the small goal after 3 steps left', async () => {
  const env = await basic();
  const right = await walk(env, 2, 7);
  expect(right.slice(0, 6).map((r) => Math.round(r * 1000) / 1000)).toEqual([-0.01, -0.01, -0.01, -0.01, -0.01, -0.01]);
  expect(right[6]).toBeCloseTo(0.99, 6);
  expect(env.getSteps('Basic')[1].interrupted[0]).toBe(0);
  const left = await walk(env, 1, 3);
  expect(left[2]).toBeCloseTo(0.09, 6);
  // Staying put costs the step penalty and moves nothing.
  const stay = await walk(env, 0, 2);
  expect(stay.map((r) => Math.round(r * 1000) / 1000)).toEqual([-0.01, -0.01]);
  expect(Array.from(env.getSteps('Basic')[0].obs[0]).indexOf(1)).toBe(10);
});

it('records its heuristic to a .demo file that reads back as played', () => {
  const dir = tempDir('basic-demo');
  const file = path.join(dir, 'basic.demo');
  const run = spawnSync(BASIC, ['--heuristic', '--steps', '70', '--record', file], { encoding: 'utf8' });
  expect(run.status).toBe(0);
  const demo = readDemoFile(file);
  expect(demo.brainParameters.brain_name).toBe('Basic');
  expect(demo.brainParameters.action_spec?.discrete_branch_sizes).toEqual([3]);
  // 70 steps of 7-step episodes: the 10th episode ends at the last step, whose terminal report
  // would go with the next message, so 9 terminal records; Unity's writer counts the episode in
  // progress at close, hence 10 episodes in the meta.
  const done = demo.records.filter((r) => r.agent_info?.done);
  expect(done.length).toBe(9);
  expect(demo.meta.number_episodes).toBe(10);
  expect(done.every((r) => Math.abs((r.agent_info?.reward ?? 0) - 0.99) < 1e-6)).toBe(true);
  // Each record holds the action taken before it (Unity's stored actions): "right", except at
  // an episode's first decision, where the stored action was cleared (0).
  const stored = demo.records.map((r) => r.action_info?.discrete_actions?.[0] ?? 0);
  const firstOfEpisode = demo.records.map((_, i) => i === 0 || demo.records[i - 1].agent_info?.done === true);
  expect(stored.filter((_, i) => firstOfEpisode[i]).every((a) => a === 0)).toBe(true);
  expect(stored.filter((_, i) => !firstOfEpisode[i]).every((a) => a === 2)).toBe(true);
  expect(demo.meta.number_steps).toBe(demo.records.length);
  fs.rmSync(dir, { recursive: true });
});

it('lists the built-in environments with the absolute path of each executable', () => {
  const run = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'sims', 'mlagents-envs.js'), '--list'], { encoding: 'utf8' });
  expect(run.status).toBe(0);
  const lines = run.stdout.trim().split('\n').map((line) => line.split('\t'));
  expect(lines.map(([name]) => name)).toEqual(['3DBall', 'Basic', 'DungeonEscape', 'GridWorld', 'Hallway', 'Pyramids', 'Scripted', 'SimpleGoal', 'Sorter', 'Tennis', 'Visual3DBall']);
  for (const [, file] of lines) {
    expect(path.isAbsolute(file)).toBe(true);
    expect(fs.statSync(file).mode & 0o111).not.toBe(0);
  }
});

it('honors the time scale the trainer sets: at 1, a step lasts a fixed step of real time', async () => {
  const engineConfiguration = new EngineConfigurationChannel();
  engineConfiguration.setConfigurationParameters({ timeScale: 1 });
  const env = await basic([], { sideChannels: [engineConfiguration] });
  const started = Date.now();
  await walk(env, 0, 25);
  // 25 steps of Unity's fixed 0.02 s at time scale 1 take at least half a second (a lower bound:
  // the environment sleeps to keep to real time).
  expect(Date.now() - started).toBeGreaterThanOrEqual(450);
});
