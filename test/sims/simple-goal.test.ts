/**
 * SimpleGoal (upstream's simple_test_envs.py) as the trainer sees it: the built executable runs
 * as a child process and talks real gRPC through UnityEnvironment, as a Unity build would.
 */
import { execFile } from 'child_process';
import * as path from 'path';
import { readDemoFile } from '../../src/communicator/demo-file';
import { DimensionProperty, ObservationType } from '../../src/env/behavior-spec';
import { DecisionSteps } from '../../src/env/steps';
import { UnityEnvironment } from '../../src/env/unity-environment';
import {
  MIN_STEPS,
  NUM_SHOW_STEPS,
  OBS_SIZE,
  SIMPLE_GOAL,
  STEP_SIZE,
  SUCCESS_REWARD,
  TIME_PENALTY,
  UpstreamGoals,
  VIS_OBS_SIZE,
  readSimpleGoalConfig,
  upstreamSeedText,
} from '../../src/sims/envs/simple-goal';
import { parseSimArgs } from '../../src/sims/sdk/run-environment';
import { closeOpenedEnvironments, openBuiltEnvironment } from '../helpers/environments';
import { ROOT, tempDir } from '../helpers/paths';

const SIMPLE_GOAL_ENV = path.join(ROOT, 'dist', 'sims', 'envs', 'simple-goal.js');
const BEHAVIOR = '1D';
const f32 = Math.fround;

/** What the trainer receives: rewards travel as float32. */
const STEP_REWARD = f32(-0.01);
const SUCCESS = f32(1.0 + 6 * 0.01);

async function launch(args: string[], options: { seed?: number; numAreas?: number } = {}): Promise<UnityEnvironment> {
  const env = await openBuiltEnvironment(SIMPLE_GOAL_ENV, args, options);
  await env.reset();
  return env;
}

afterEach(closeOpenedEnvironments);

/** The goal an agent's first observation shows (every float of every observation is the same value). */
function shownGoal(steps: DecisionSteps, row: number): number {
  return steps.observation(0, row)[0];
}

type Policy = (goal: number, row: number) => { continuous?: number[]; discrete?: number[] };

/** Toward the goal, continuous actions far beyond the step size (the environment clamps them). */
const optimal: Policy = (goal) => ({ continuous: [goal * 5, goal * 5], discrete: [goal > 0 ? 1 : 0, goal > 0 ? 1 : 0] });
const wrongWay: Policy = (goal) => optimal(-goal, 0);

/** Sets each deciding agent's actions from its shown goal. */
function act(env: UnityEnvironment, policy: Policy, goals?: readonly number[]): void {
  const spec = env.behaviorSpecs.get(BEHAVIOR)!.actionSpec;
  const [decision] = env.getSteps(BEHAVIOR);
  const continuous: number[] = [];
  const discrete: number[] = [];
  for (let row = 0; row < decision.length; row++) {
    const chosen = policy(goals?.[row] ?? shownGoal(decision, row), row);
    for (let i = 0; i < spec.continuousSize; i++) continuous.push(chosen.continuous?.[i] ?? 0);
    for (let i = 0; i < spec.discreteSize; i++) discrete.push(chosen.discrete?.[i] ?? 0);
  }
  env.setActions(BEHAVIOR, { continuous, discrete });
}

interface Episode {
  goal: number;
  /** Rewards of the decisions that followed each action, before the end. */
  stepRewards: number[];
  /** Actions taken, the last one included. */
  actions: number;
  terminalReward: number;
  endedId: number;
  nextId: number;
}

/** Plays one single-agent episode under `policy`, from the current decision to its terminal step. */
async function playEpisode(env: UnityEnvironment, policy: Policy, maxActions = 100): Promise<Episode> {
  const [start] = env.getSteps(BEHAVIOR);
  const goal = shownGoal(start, 0);
  const startId = start.agentId[0];
  const stepRewards: number[] = [];
  for (let actions = 1; actions <= maxActions; actions++) {
    act(env, policy, [goal]);
    await env.step();
    const [decision, terminal] = env.getSteps(BEHAVIOR);
    if (terminal.length > 0) {
      expect(Array.from(terminal.agentId)).toEqual([startId]);
      expect(terminal.interrupted[0]).toBe(0);
      return { goal, stepRewards, actions, terminalReward: terminal.reward[0], endedId: startId, nextId: decision.agentId[0] };
    }
    expect(Array.from(decision.agentId)).toEqual([startId]);
    stepRewards.push(decision.reward[0]);
  }
  throw new Error(`no end after ${maxActions} actions`);
}

/** What upstream's _compute_reward gives at the end, as the float32 the trainer receives. */
function upstreamEndReward(positions: readonly number[], goal: number): number {
  let reward = 0.0;
  for (const position of positions) reward += (SUCCESS_REWARD * position * goal) / positions.length;
  return f32(reward);
}

describe('SimpleGoal: upstream\'s constants', () => {
  it('are those of simple_test_envs.py', () => {
    expect(OBS_SIZE).toBe(1);
    expect(VIS_OBS_SIZE).toEqual([3, 20, 20]);
    expect(STEP_SIZE).toBe(0.2);
    expect(TIME_PENALTY).toBe(0.01);
    expect(MIN_STEPS).toBe(6); // int(1.0 / STEP_SIZE) + 1
    expect(SUCCESS_REWARD).toBe(1.0 + 6 * 0.01);
    expect(NUM_SHOW_STEPS).toBe(2);
  });
});

describe('SimpleGoal: behavior specs', () => {
  it.each([
    [1, 0],
    [0, 1],
    [2, 0],
    [0, 2],
    [1, 1],
  ])('action sizes (%i, %i): continuous size and discrete branches of 2', async (continuous, discrete) => {
    const env = await launch(['--continuous', String(continuous), '--discrete', String(discrete)]);
    expect(env.name).toBe('SimpleGoal');
    expect([...env.behaviorSpecs.keys()]).toEqual([BEHAVIOR]);
    const spec = env.behaviorSpecs.get(BEHAVIOR)!;
    expect(spec.actionSpec.continuousSize).toBe(continuous);
    expect(spec.actionSpec.discreteBranches).toEqual(new Array(discrete).fill(2));
    expect(spec.observationSpecs.map((o) => o.shape)).toEqual([[1]]);
    const [decision] = env.getSteps(BEHAVIOR);
    expect(decision.length).toBe(1);
    if (discrete > 0) expect(Array.from(decision.actionMask![0])).toEqual([0, 0]); // nothing masked
  });

  it('defaults to one continuous action, one vector observation, behavior 1D', async () => {
    const env = await launch([]);
    const spec = env.behaviorSpecs.get(BEHAVIOR)!;
    expect(spec.actionSpec.continuousSize).toBe(1);
    expect(spec.actionSpec.discreteBranches).toEqual([]);
    expect(spec.observationSpecs).toEqual([
      { shape: [1], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'observation 0 with shape (1,)' },
    ]);
  });

  it('sends vector then visual observations, every float the goal, images as raw channel-first floats', async () => {
    const env = await launch(['--num-vector', '2', '--num-visual', '2', '--agents', '3']);
    const spec = env.behaviorSpecs.get(BEHAVIOR)!;
    expect(spec.observationSpecs.map((o) => o.shape)).toEqual([[1], [1], [3, 20, 20], [3, 20, 20]]);
    expect(spec.observationSpecs.map((o) => o.name)).toEqual([
      'observation 0 with shape (1,)',
      'observation 1 with shape (1,)',
      'observation 2 with shape (3, 20, 20)',
      'observation 3 with shape (3, 20, 20)',
    ]);
    const [decision] = env.getSteps(BEHAVIOR);
    expect(decision.length).toBe(3);
    for (let row = 0; row < 3; row++) {
      const goal = shownGoal(decision, row);
      expect([-1, 1]).toContain(goal);
      for (let i = 0; i < 4; i++) {
        const obs = decision.observation(i, row);
        expect(obs.length).toBe(i < 2 ? 1 : 1200);
        expect(obs.every((v) => v === goal)).toBe(true); // -1 survives: no PNG on the way
      }
    }
  });

  it('has visual observations only with --num-vector 0, and goal signals with --goal-indices', async () => {
    const visual = await launch(['--num-vector', '0', '--num-visual', '1']);
    expect(visual.behaviorSpecs.get(BEHAVIOR)!.observationSpecs.map((o) => o.shape)).toEqual([[3, 20, 20]]);
    const goals = await launch(['--num-vector', '2', '--goal-indices', '0']);
    expect(goals.behaviorSpecs.get(BEHAVIOR)!.observationSpecs.map((o) => o.observationType)).toEqual([
      ObservationType.GOAL_SIGNAL,
      ObservationType.DEFAULT,
    ]);
  });

  it('sends variable-length observations last, [10, 5] described (VARIABLE_SIZE, NONE), every entity the goal (none padded)', async () => {
    const env = await launch(['--num-vector', '0', '--num-visual', '1', '--num-var-len', '2', '--goal-indices', '0', '--agents', '2']);
    const spec = env.behaviorSpecs.get(BEHAVIOR)!;
    expect(spec.observationSpecs.map((o) => [o.shape, o.observationType, o.name])).toEqual([
      [[3, 20, 20], ObservationType.GOAL_SIGNAL, 'observation 0 with shape (3, 20, 20)'],
      [[10, 5], ObservationType.DEFAULT, 'observation 1 with shape (10, 5)'],
      [[10, 5], ObservationType.DEFAULT, 'observation 2 with shape (10, 5)'],
    ]);
    expect(spec.observationSpecs[1].dimensionProperty).toEqual([DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE]);
    for (let step = 0; step < 2; step++) {
      const [decision] = env.getSteps(BEHAVIOR);
      for (let row = 0; row < 2; row++) {
        const goal = shownGoal(decision, row);
        for (const index of [1, 2]) {
          const entities = decision.observation(index, row);
          expect(entities.length).toBe(50);
          expect(entities.every((v) => v === goal)).toBe(true);
        }
      }
      act(env, () => ({ continuous: [0] }));
      await env.step();
    }
    const sized = await launch(['--num-var-len', '1', '--var-len-obs-size', '3x2']);
    expect(sized.behaviorSpecs.get(BEHAVIOR)!.observationSpecs.map((o) => o.shape)).toEqual([[1], [3, 2]]);
  });

  it.each([
    ['3x36x36', [3, 36, 36], '(3, 36, 36)'],
    ['5x5x5', [5, 5, 5], '(5, 5, 5)'],
  ])('takes --vis-obs-size %s (upstream\'s vis_obs_size), channel-first, every pixel the goal', async (size, shape, pythonShape) => {
    const env = await launch(['--num-vector', '1', '--num-visual', '2', '--vis-obs-size', size, '--agents', '2']);
    const spec = env.behaviorSpecs.get(BEHAVIOR)!;
    expect(spec.observationSpecs.map((o) => o.shape)).toEqual([[1], shape, shape]);
    expect(spec.observationSpecs.map((o) => o.name)).toEqual([
      'observation 0 with shape (1,)',
      `observation 1 with shape ${pythonShape}`,
      `observation 2 with shape ${pythonShape}`,
    ]);
    expect(spec.observationSpecs[1].dimensionProperty).toEqual([
      DimensionProperty.NONE,
      DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
      DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
    ]);
    const pixels = shape[0] * shape[1] * shape[2];
    // Upstream's _make_obs: np.ones(vis_obs_size) * value, the goal (or 0 once a memory agent's goal hides).
    for (let step = 0; step < 3; step++) {
      const [decision] = env.getSteps(BEHAVIOR);
      expect(decision.length).toBe(2);
      for (let row = 0; row < 2; row++) {
        const goal = shownGoal(decision, row);
        expect([-1, 1]).toContain(goal);
        for (const index of [1, 2]) {
          const image = decision.observation(index, row);
          expect(image.length).toBe(pixels);
          expect(image.every((v) => v === goal)).toBe(true);
        }
      }
      act(env, () => ({ continuous: [0] }));
      await env.step();
    }
  });

  it('shows a memory agent\'s hidden goal as 0 in every pixel of a --vis-obs-size image too', async () => {
    const env = await launch(['--memory', '--num-vector', '0', '--num-visual', '1', '--vis-obs-size', '5x5x5']);
    const [start] = env.getSteps(BEHAVIOR);
    const goal = shownGoal(start, 0);
    const shown: number[][] = [];
    for (let i = 0; i < 4; i++) {
      shown.push([...new Set(env.getSteps(BEHAVIOR)[0].observation(0, 0))]);
      act(env, () => ({ continuous: [0] }), [goal]);
      await env.step();
    }
    expect(shown).toEqual([[goal], [goal], [goal], [0]]);
  });

  it('takes another behavior name, or several (self-play teams)', async () => {
    const env = await launch(['--behavior-name', 'Simple?team=0,Simple?team=1']);
    expect([...env.behaviorSpecs.keys()].sort()).toEqual(['Simple?team=0', 'Simple?team=1']);
  });

  it('refuses options that make no game, before connecting', async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(process.execPath, [SIMPLE_GOAL_ENV, ...args], (error, _stdout, stderr) =>
          resolve({ code: error ? (error.code as number) : 0, stderr }),
        );
      });
    const noAction = await run(['--continuous', '0', '--discrete', '0']);
    expect(noAction.code).toBe(1);
    expect(noAction.stderr).toContain('needs at least one action');
    const noObservation = await run(['--num-vector', '0']);
    expect(noObservation.stderr).toContain('needs at least one observation');
    const noGoal = await run(['--num-visual', '1', '--goal-indices', '2']);
    expect(noGoal.stderr).toContain('--goal-indices: there is no observation 2 (2 observations)');
    for (const bad of ['10', '0x5', '10x5x1']) {
      const badSize = await run(['--num-var-len', '1', '--var-len-obs-size', bad]);
      expect(badSize.code).toBe(1);
      expect(badSize.stderr).toContain('--var-len-obs-size needs ENTITIESxSIZE');
    }
    for (const bad of ['20x20', '3x0x20', 'x3x20x20', '3x20x20x1', 'big']) {
      const badSize = await run(['--num-visual', '1', '--vis-obs-size', bad]);
      expect(badSize.code).toBe(1);
      expect(badSize.stderr).toContain(`--vis-obs-size needs CHANNELSxHEIGHTxWIDTH, three whole numbers of at least 1`);
      expect(badSize.stderr).toContain(JSON.stringify(bad));
    }
  });
});

describe('SimpleGoal: dynamics and rewards', () => {
  it('reaches the goal with the optimal continuous actions: 5 actions, -TIME_PENALTY each, then SUCCESS_REWARD', async () => {
    const env = await launch([], { seed: 3 });
    for (let episode = 0; episode < 4; episode++) {
      const played = await playEpisode(env, optimal);
      // int(1 / 0.2) actions; with the first observation, MIN_STEPS reports make the episode.
      expect(played.actions).toBe(MIN_STEPS - 1);
      expect(played.stepRewards).toEqual(new Array(MIN_STEPS - 2).fill(STEP_REWARD));
      expect(played.terminalReward).toBe(SUCCESS);
      expect(played.terminalReward).toBe(upstreamEndReward([1], 1));
      expect(played.nextId).toBe(played.endedId + 1);
    }
  });

  it('gives -SUCCESS_REWARD the wrong way, with discrete actions too', async () => {
    const continuous = await launch([]);
    expect((await playEpisode(continuous, wrongWay)).terminalReward).toBe(-SUCCESS);
    const discrete = await launch(['--continuous', '0', '--discrete', '1']);
    const right = await playEpisode(discrete, optimal);
    expect([right.actions, right.terminalReward]).toEqual([5, SUCCESS]);
    const wrong = await playEpisode(discrete, wrongWay);
    expect([wrong.actions, wrong.terminalReward]).toEqual([5, -SUCCESS]);
  });

  it('clamps continuous actions to the step size, and moves by smaller ones', async () => {
    const env = await launch([]);
    const huge = await playEpisode(env, (goal) => ({ continuous: [goal * 1000] }));
    expect(huge.actions).toBe(5);
    const half = await playEpisode(env, (goal) => ({ continuous: [goal * 0.1] }));
    expect(half.actions).toBe(10);
    expect(half.terminalReward).toBe(SUCCESS);
    // Back and forth: never at an end.
    const [decision] = env.getSteps(BEHAVIOR);
    const goal = shownGoal(decision, 0);
    for (let i = 0; i < 12; i++) {
      act(env, () => ({ continuous: [i % 2 === 0 ? 1 : -1] }), [goal]);
      await env.step();
      expect(env.getSteps(BEHAVIOR)[1].length).toBe(0);
      expect(env.getSteps(BEHAVIOR)[0].reward[0]).toBe(STEP_REWARD);
    }
  });

  it('ends only when every position is at an end, and averages the positions\' rewards', async () => {
    const env = await launch(['--continuous', '1', '--discrete', '1']);
    // The continuous position goes to the goal, the discrete one the other way: 0.53 - 0.53.
    const mixed = await playEpisode(env, (goal) => ({ continuous: [goal], discrete: [goal > 0 ? 0 : 1] }));
    expect(mixed.actions).toBe(5);
    expect(mixed.terminalReward).toBe(upstreamEndReward([1, -1], 1));
    expect(mixed.terminalReward).toBe(0);
    // The continuous position alone at its end: the episode goes on.
    const [decision] = env.getSteps(BEHAVIOR);
    const goal = shownGoal(decision, 0);
    for (let i = 0; i < 8; i++) {
      act(env, () => ({ continuous: [goal], discrete: [i % 2] }), [goal]);
      await env.step();
      expect(env.getSteps(BEHAVIOR)[1].length).toBe(0);
    }
    const both = await playEpisode(env, optimal);
    expect(both.terminalReward).toBe(SUCCESS);
  });

  it('reaches SUCCESS_REWARD with two positions of step size 0.8 in 2 actions (test_2d_ppo)', async () => {
    const env = await launch(['--continuous', '0', '--discrete', '2', '--step-size', '0.8']);
    const played = await playEpisode(env, optimal);
    expect([played.actions, played.terminalReward]).toEqual([2, upstreamEndReward([1, 1], 1)]);
    expect(played.terminalReward).toBe(SUCCESS);
  });

  it('gives each episode a new agent id, as upstream (2 for the first episode after a reset)', async () => {
    const env = await launch([]);
    const ids: number[] = [env.getSteps(BEHAVIOR)[0].agentId[0]];
    for (let i = 0; i < 3; i++) ids.push((await playEpisode(env, optimal)).nextId);
    expect(ids).toEqual([2, 3, 4, 5]);
    await env.reset();
    expect(Array.from(env.getSteps(BEHAVIOR)[0].agentId)).toEqual([6]);
  });

  it('plays the optimal policy as its heuristic: SUCCESS_REWARD after 5 actions', () => {
    const demo = path.join(tempDir('simple-goal-demo'), 'optimal.demo');
    return new Promise<void>((resolve, reject) => {
      execFile(process.execPath, [SIMPLE_GOAL_ENV, '--heuristic', '--steps', '31', '--record', demo], (error) => {
        if (error) return reject(error);
        try {
          const records = readDemoFile(demo).records.map((r) => r.agent_info!);
          // Per episode: the first decision (reward 0), 4 steps, the terminal step; then again.
          expect(records.length).toBe(37);
          for (let episode = 0; episode < 6; episode++) {
            const own = records.slice(episode * 6, episode * 6 + 6);
            expect(own.map((r) => r.reward ?? 0)).toEqual([0, STEP_REWARD, STEP_REWARD, STEP_REWARD, STEP_REWARD, SUCCESS]);
            expect(own.map((r) => r.done ?? false)).toEqual([false, false, false, false, false, true]);
          }
          resolve();
        } catch (failure) {
          reject(failure);
        }
      });
    });
  });
});

describe('SimpleGoal: memory variant', () => {
  it('shows the goal while upstream\'s step count is at most 2 (3 observations), then 0', async () => {
    const env = await launch(['--memory']);
    for (let episode = 0; episode < 2; episode++) {
      const [start] = env.getSteps(BEHAVIOR);
      const goal = shownGoal(start, 0);
      expect([-1, 1]).toContain(goal);
      const shown = [goal];
      for (let i = 0; i < 5; i++) {
        act(env, optimal, [goal]);
        await env.step();
        const [decision, terminal] = env.getSteps(BEHAVIOR);
        shown.push(i < 4 ? shownGoal(decision, 0) : terminal.observation(0, 0)[0]);
        if (i === 4) expect(terminal.reward[0]).toBe(SUCCESS);
      }
      expect(shown).toEqual([goal, goal, goal, 0, 0, 0]);
    }
  });

  it('counts steps once per action dimension, as upstream\'s step_count', async () => {
    const env = await launch(['--memory', '--continuous', '2']);
    const [start] = env.getSteps(BEHAVIOR);
    const goal = shownGoal(start, 0);
    const shown = [goal];
    for (let i = 0; i < 3; i++) {
      act(env, optimal, [goal]);
      await env.step();
      shown.push(shownGoal(env.getSteps(BEHAVIOR)[0], 0));
    }
    expect(shown).toEqual([goal, goal, 0, 0]); // step counts 0, 2, 4, 6
  });
});

describe('SimpleGoal: group variant (upstream\'s MultiAgentEnvironment)', () => {
  it('groups 2 agents with ids 0 and 1 in group 1; the first to finish waits, the last brings the group reward', async () => {
    const env = await launch(['--group']);
    let [decision] = env.getSteps(BEHAVIOR);
    expect(Array.from(decision.agentId)).toEqual([0, 1]);
    expect(Array.from(decision.groupId)).toEqual([1, 1]);
    const goals = [shownGoal(decision, 0), shownGoal(decision, 1)];
    // Upstream's agents each draw from an identically seeded copy: the same goal each episode.
    expect(goals[0]).toBe(goals[1]);

    // Agent 0 goes to the goal, agent 1 stays.
    const agent0First: Policy = (goal, row) => (row === 0 ? optimal(goal, row) : { continuous: [0] });
    for (let i = 0; i < 5; i++) {
      act(env, agent0First, goals);
      await env.step();
    }
    let terminal;
    [decision, terminal] = env.getSteps(BEHAVIOR);
    expect(Array.from(terminal.agentId)).toEqual([0]);
    expect(Array.from(terminal.groupId)).toEqual([1]);
    expect(Array.from(terminal.reward)).toEqual([STEP_REWARD]); // min(-TIME_PENALTY, success)
    expect(Array.from(terminal.groupReward)).toEqual([0]);
    expect(Array.from(decision.agentId)).toEqual([1]);
    expect(Array.from(decision.reward)).toEqual([STEP_REWARD]);

    // Agent 0 waits: it asks for nothing while agent 1 plays on.
    for (let i = 0; i < 4; i++) {
      act(env, () => ({ continuous: [goals[1]] }), [goals[1]]);
      await env.step();
      [decision, terminal] = env.getSteps(BEHAVIOR);
      expect(Array.from(decision.agentId)).toEqual([1]);
      expect(terminal.length).toBe(0);
    }
    act(env, () => ({ continuous: [goals[1]] }), [goals[1]]);
    await env.step();
    [decision, terminal] = env.getSteps(BEHAVIOR);
    expect(Array.from(terminal.agentId)).toEqual([1]);
    expect(Array.from(terminal.reward)).toEqual([0]);
    expect(Array.from(terminal.groupReward)).toEqual([SUCCESS]);
    // The whole group starts again, under the same ids.
    expect(Array.from(decision.agentId)).toEqual([0, 1]);
    expect(Array.from(decision.groupId)).toEqual([1, 1]);
    expect(Array.from(decision.reward)).toEqual([0, 0]);
    expect(Array.from(decision.groupReward)).toEqual([0, 0]);
    expect(shownGoal(decision, 0)).toBe(shownGoal(decision, 1));
  });

  it('steps a member that finished first and comes after the last finisher once more with its last action as the group starts again, as upstream', async () => {
    const env = await launch(['--group']);
    let [decision, terminal] = env.getSteps(BEHAVIOR);
    const goal = shownGoal(decision, 0);
    // Agent 1 goes to the goal, agent 0 stays.
    for (let i = 0; i < 5; i++) {
      act(env, (g, row) => (row === 1 ? optimal(g, row) : { continuous: [0] }), [goal, goal]);
      await env.step();
    }
    [decision, terminal] = env.getSteps(BEHAVIOR);
    expect(Array.from(terminal.agentId)).toEqual([1]);
    // Agent 0 goes to the goal, the last to finish.
    for (let i = 0; i < 5; i++) {
      act(env, optimal, [goal]);
      await env.step();
    }
    [decision, terminal] = env.getSteps(BEHAVIOR);
    expect(Array.from(terminal.agentId)).toEqual([0]);
    expect(Array.from(terminal.groupReward)).toEqual([SUCCESS]);
    expect(Array.from(decision.agentId)).toEqual([0, 1]);
    // Agent 1 has moved toward the old goal once more: that step's time penalty comes with its first decision.
    expect(Array.from(decision.reward)).toEqual([0, STEP_REWARD]);
    // So 4 moves that way end its episode, while agent 0 is 0.8 from its start.
    for (let i = 0; i < 4; i++) {
      act(env, () => ({ continuous: [goal] }), [goal, goal]);
      await env.step();
    }
    [decision, terminal] = env.getSteps(BEHAVIOR);
    expect(Array.from(terminal.agentId)).toEqual([1]);
    expect(Array.from(decision.agentId)).toEqual([0]);
  });

  it('when both finish at the same step: the first gets its capped reward, the last the group reward', async () => {
    const env = await launch(['--group', '--continuous', '0', '--discrete', '1']);
    // Agent 0 the wrong way, agent 1 the right way.
    const policy: Policy = (goal, row) => (row === 0 ? wrongWay(goal, row) : optimal(goal, row));
    for (let i = 0; i < 5; i++) {
      act(env, policy);
      await env.step();
    }
    const [decision, terminal] = env.getSteps(BEHAVIOR);
    expect(Array.from(terminal.agentId)).toEqual([0, 1]);
    expect(Array.from(terminal.reward)).toEqual([-SUCCESS, 0]); // min(-TIME_PENALTY, -SUCCESS_REWARD)
    expect(Array.from(terminal.groupReward)).toEqual([0, SUCCESS]);
    expect(Array.from(decision.agentId)).toEqual([0, 1]);
  });

  it('starts the whole group again on the trainer\'s reset, waiting agents included', async () => {
    const env = await launch(['--group', '--continuous', '0', '--discrete', '1']);
    for (let i = 0; i < 5; i++) {
      act(env, (goal, row) => (row === 0 ? optimal(goal, row) : { discrete: [i % 2] }));
      await env.step();
    }
    expect(Array.from(env.getSteps(BEHAVIOR)[0].agentId)).toEqual([1]);
    await env.reset();
    const [decision, terminal] = env.getSteps(BEHAVIOR);
    expect(Array.from(decision.agentId)).toEqual([0, 1]);
    expect(terminal.length).toBe(0);
    // Positions are back at 0: five full steps to an end.
    for (let i = 0; i < 4; i++) {
      act(env, optimal);
      await env.step();
      expect(env.getSteps(BEHAVIOR)[1].length).toBe(0);
    }
    act(env, optimal);
    await env.step();
    expect(Array.from(env.getSteps(BEHAVIOR)[1].groupReward)).toEqual([0, SUCCESS]);
  });

  it('makes one group per training area, ids unique across areas', async () => {
    const env = await launch(['--group', '--agents', '3'], { numAreas: 2 });
    const [decision] = env.getSteps(BEHAVIOR);
    expect(Array.from(decision.agentId)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(Array.from(decision.groupId)).toEqual([1, 1, 1, 2, 2, 2]);
  });
});

describe('SimpleGoal: goals', () => {
  async function goalSequence(args: string[], seed: number, episodes: number): Promise<number[]> {
    const env = await launch(args, { seed });
    const goals: number[] = [];
    for (let i = 0; i < episodes; i++) goals.push((await playEpisode(env, optimal)).goal);
    await env.close();
    return goals;
  }

  // The sequences CPython gives random.Random(str(arguments)).choice([-1, 1]) after the two draws
  // of the environment's construction, as upstream's SimpleEnvironment draws them.
  it("draws upstream's goals, whatever the trainer's seed: Python's random seeded with the environment's arguments", async () => {
    const hybridMemory = ['--continuous', '1', '--discrete', '1', '--memory', '--step-size', '0.5'];
    const [first, otherSeed, hybrid] = await Promise.all([goalSequence([], 11, 12), goalSequence([], 12, 12), goalSequence(hybridMemory, 11, 12)]);
    expect(first).toEqual([1, 1, 1, 1, -1, -1, 1, -1, -1, -1, 1, 1]);
    expect(otherSeed).toEqual(first);
    expect(hybrid).toEqual([1, 1, 1, -1, -1, -1, -1, 1, 1, -1, 1, -1]);
  });

  it("seeds from upstream's argument tuple, every behavior name of the environment in it", () => {
    const config = readSimpleGoalConfig(parseSimArgs(SIMPLE_GOAL, ['--behavior-name', '1D?team=0,1D?team=1']).values);
    expect(upstreamSeedText(config, config.behaviorNames)).toBe("(['1D?team=0', '1D?team=1'], 0.2, 0, 1, 0, (3, 20, 20), 1, (10, 5), (1, 0))");
    // Both names draw from that one stream: two draws each as it is built, then in name order.
    const goals = new UpstreamGoals(config, config.behaviorNames);
    expect(Array.from({ length: 12 }, () => goals.draw())).toEqual([-1, -1, -1, 1, 1, -1, -1, -1, 1, -1, 1, -1]);
  });
});
