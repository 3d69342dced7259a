/**
 * Hallway, end to end: the built executable connects over real gRPC as a Unity build does. Where
 * a test needs to know where things are, it runs the same seed in process (a "mirror" Academy
 * fed the same actions, paused where the real one waits for the trainer) and reads its agents.
 */
import { execFileSync } from 'child_process';
import * as path from 'path';
import { readDemoFile } from '../../src/communicator/demo-file';
import { EngineConfigurationChannel } from '../../src/communicator/side-channels/engine-configuration-channel';
import { ObservationType } from '../../src/env/behavior-spec';
import { UnityEnvironment, UnityEnvironmentOptions } from '../../src/env/unity-environment';
import {
  BACKWARD,
  FORWARD,
  HALLWAY,
  HallwayAgent,
  HallwaySymbol,
  NOTHING,
  RAY_SENSOR_NAME,
  RayTag,
  TURN_LEFT,
  TURN_RIGHT,
  VECTOR_SENSOR_NAME,
} from '../../src/sims/envs/hallway';
import { Academy } from '../../src/sims/sdk/academy';
import { parseSimArgs } from '../../src/sims/sdk/run-environment';
import { SeededRandom } from '../../src/common/random';
import { closeOpenedEnvironments, openBuiltEnvironment } from '../helpers/environments';
import { Mirror, randomPlayTrace } from '../helpers/mirror';
import { act, playUntilInterrupted, rayOf } from '../helpers/walkers';
import { ROOT, tempDir } from '../helpers/paths';

const HALLWAY_ENV = path.join(ROOT, 'dist', 'sims', 'envs', 'hallway.js');
const BEHAVIOR = 'Hallway';
const MAX_STEP = 3000;
const DECISION_PERIOD = 6;
/** What a decision's six steps cost, as the trainer receives it (a float32). */
const DECISION_PENALTY = Math.fround(-DECISION_PERIOD / MAX_STEP);
const TAGS = 5;
const RAYS = 5;
const RAY_FRAME = RAYS * (TAGS + 2);

function launch(args: string[], extra: Partial<UnityEnvironmentOptions> = {}): Promise<UnityEnvironment> {
  return openBuiltEnvironment(HALLWAY_ENV, args, { timeoutWait: 20, ...extra });
}

afterEach(closeOpenedEnvironments);

// ---------------------------------------------------------------------------------------------
// The test's own view of the world, written apart from the environment's code

/** Inner faces of the corridor's walls (upstream's walls at x = +-9.75 and z = +-25, 0.5 thick). */
const INNER_X = 9.5;
const INNER_Z = 24.75;

/** A direction seen from above for a yaw in degrees (clockwise from +z, as Unity's). */
function facing(yaw: number): { x: number; z: number } {
  const a = (yaw * Math.PI) / 180;
  return { x: Math.sin(a), z: Math.cos(a) };
}

/** How far a ball of radius 0.5 rolls from (x, z) along `direction` before it touches a wall. */
function distanceToWalls(x: number, z: number, direction: { x: number; z: number }): number {
  const limits: number[] = [];
  if (direction.x > 1e-12) limits.push((INNER_X - 0.5 - x) / direction.x);
  if (direction.x < -1e-12) limits.push((-INNER_X + 0.5 - x) / direction.x);
  if (direction.z > 1e-12) limits.push((INNER_Z - 0.5 - z) / direction.z);
  if (direction.z < -1e-12) limits.push((-INNER_Z + 0.5 - z) / direction.z);
  return Math.min(...limits);
}

/** An agent in process, placed by hand: the episode drawn first, then what the test sets. */
function placedAgent(at: Partial<Pick<HallwayAgent, 'x' | 'z' | 'yaw' | 'selection' | 'symbolX' | 'symbolZ'>>): HallwayAgent {
  const agent = new HallwayAgent();
  agent.random = new SeededRandom(1);
  agent.onEpisodeBegin();
  Object.assign(agent, at);
  return agent;
}

// ---------------------------------------------------------------------------------------------

describe('Hallway over gRPC', () => {
  it("shows upstream's behavior spec: stacked rays (105) and stacked StepCount/MaxStep (3), 108 floats, one branch of 5", async () => {
    const env = await launch([], { seed: 1 });
    expect(env.name).toBe('Hallway');
    await env.reset();
    const spec = env.behaviorSpecs.get(BEHAVIOR)!;
    expect(spec.observationSpecs.map((o) => [o.name, o.shape, o.observationType])).toEqual([
      ['StackingSensor_size3_RayPerceptionSensor', [105], ObservationType.DEFAULT],
      ['StackingSensor_size3_VectorSensor_size1', [3], ObservationType.DEFAULT],
    ]);
    expect(spec.observationSpecs.reduce((sum, o) => sum + o.shape[0], 0)).toBe(108);
    expect(spec.actionSpec.continuousSize).toBe(0);
    expect(spec.actionSpec.discreteBranches).toEqual([5]);

    const [decision, terminal] = env.getSteps(BEHAVIOR);
    // The scene's 16 areas.
    expect(decision.length).toBe(16);
    expect(terminal.length).toBe(0);
    for (let row = 0; row < decision.length; row++) {
      // At the first decision only the newest frame of each stack is filled.
      const rays = decision.observation(0, row);
      expect(Array.from(rays.subarray(0, 2 * RAY_FRAME)).every((v) => v === 0)).toBe(true);
      const frame = rays.subarray(2 * RAY_FRAME);
      for (let ray = 0; ray < RAYS; ray++) {
        const { tag, missed, fraction } = rayOf(frame, ray, TAGS);
        const oneHot = Array.from(frame.subarray(ray * (TAGS + 2), ray * (TAGS + 2) + TAGS));
        expect(oneHot.filter((v) => v === 1)).toHaveLength(missed ? 0 : 1);
        expect(oneHot.every((v) => v === 0 || v === 1)).toBe(true);
        if (missed) expect(fraction).toBe(1);
        else expect(tag).not.toBeNull();
        expect(fraction).toBeGreaterThanOrEqual(0);
        expect(fraction).toBeLessThanOrEqual(1);
      }
      expect(Array.from(decision.observation(1, row))).toEqual([0, 0, Math.fround(1 / MAX_STEP)]);
    }

    env.setActions(BEHAVIOR, { discrete: Array.from(decision.agentId, () => [NOTHING]) });
    await env.step();
    const [after] = env.getSteps(BEHAVIOR);
    // One decision later: six steps acted, each costing 1/MaxStep; the stacks moved by one frame.
    expect(Array.from(after.reward)).toEqual(new Array(16).fill(DECISION_PENALTY));
    expect(Array.from(after.observation(1, 0))).toEqual([0, Math.fround(1 / MAX_STEP), Math.fround(7 / MAX_STEP)]);
    expect(Array.from(after.observation(0, 0).subarray(RAY_FRAME, 2 * RAY_FRAME))).toEqual(Array.from(decision.observation(0, 0).subarray(2 * RAY_FRAME)));
  });

  it('sends what the environment sees, ray for ray (an in-process mirror fed the same actions agrees)', async () => {
    const seed = 5;
    const env = await launch(['--agents', '4'], { seed });
    const mirror = new Mirror<HallwayAgent>(HALLWAY, BEHAVIOR, seed, ['--agents', '4']);
    await env.reset();
    const choose = new SeededRandom(3);
    let hitsSeen = 0;
    for (let step = 0; step < 40; step++) {
      const [decision] = env.getSteps(BEHAVIOR);
      const seen = await mirror.decision();
      for (let row = 0; row < decision.length; row++) {
        const expected = seen.observations.get(decision.agentId[row])!;
        expect(Array.from(decision.observation(0, row))).toEqual(Array.from(expected[0]));
        expect(Array.from(decision.observation(1, row))).toEqual(Array.from(expected[1]));
        // The forward ray, checked against the walls alone when it names a wall.
        const agent = mirror.byId(decision.agentId[row]);
        const forward = rayOf(decision.observation(0, row).subarray(2 * RAY_FRAME), 0, TAGS);
        if (forward.tag === RayTag.Wall) {
          hitsSeen += 1;
          expect(forward.fraction).toBeCloseTo(distanceToWalls(agent.x, agent.z, facing(agent.yaw)) / 12, 4);
        }
      }
      // Mostly forward, sometimes turning, so that the agents travel and face all ways.
      const actions = Array.from(decision.agentId, () => [FORWARD, FORWARD, TURN_RIGHT, TURN_LEFT, NOTHING, BACKWARD][choose.int(6)]);
      mirror.act(decision.agentId, actions);
      env.setActions(BEHAVIOR, { discrete: actions.map((a) => [a]) });
      await env.step();
    }
    expect(hitsSeen).toBeGreaterThan(10);
  }, 60000);

  it('pays +1 for touching the goal that bears the symbol and -0.1 for the other, ending the episode, after -1/MaxStep a step', async () => {
    const seed = 13;
    const env = await launch(['--agents', '2'], { seed });
    const mirror = new Mirror<HallwayAgent>(HALLWAY, BEHAVIOR, seed, ['--agents', '2']);
    await env.reset();
    // Agent 1 walks to the goal that matches its symbol, agent 2 to the other one.
    const targetOf = (agent: HallwayAgent, index: number) =>
      index === 0 ? agent.selection : agent.selection === HallwaySymbol.O ? HallwaySymbol.X : HallwaySymbol.O;
    const episodes: number[][][] = [[], []];
    const current: number[][] = [[], []];
    const ids = mirror.agents.map((a) => a.id);
    for (let step = 0; step < 2000 && (episodes[0].length < 3 || episodes[1].length < 3); step++) {
      const [decision, terminal] = env.getSteps(BEHAVIOR);
      await mirror.decision();
      ids.forEach((id, i) => {
        const ended = terminal.indexOf(id);
        if (ended !== -1) {
          expect(terminal.interrupted[ended]).toBe(0);
          current[i].push(terminal.reward[ended]);
          episodes[i].push(current[i]);
          current[i] = [];
        }
        // An episode that ends between decisions is reported alone, at the next step.
        const row = decision.indexOf(id);
        if (row !== -1) current[i].push(decision.reward[row]);
      });
      const actions = Array.from(decision.agentId, (id) => {
        const agent = mirror.byId(id);
        return agent.walkTo(targetOf(agent, ids.indexOf(id)));
      });
      mirror.act(decision.agentId, actions);
      env.setActions(BEHAVIOR, { discrete: actions.map((a) => [a]) });
      await env.step();
    }
    for (const [i, finalReward] of [[0, Math.fround(1)], [1, Math.fround(-0.1)]] as const) {
      expect(episodes[i].length).toBeGreaterThanOrEqual(3);
      for (const rewards of episodes[i]) {
        // The first decision of an episode carries the steps acted since the episode began
        // (none to five: the agent repeats its cleared action until the next decision step, as
        // Unity's DecisionRequester has it); each later one six steps' penalty; touching a goal
        // sets the last decision's reward, penalties included.
        const before = Math.round((-rewards[0] * MAX_STEP));
        expect(before).toBeGreaterThanOrEqual(0);
        expect(before).toBeLessThan(DECISION_PERIOD);
        expect(rewards[0]).toBeCloseTo(-before / MAX_STEP, 7);
        expect(rewards.slice(1, -1)).toEqual(new Array(rewards.length - 2).fill(DECISION_PENALTY));
        expect(rewards[rewards.length - 1]).toBe(finalReward);
        // Well inside MaxStep: about a hundred decisions at most.
        expect(rewards.length).toBeLessThan(120);
      }
    }
  }, 60000);

  it('interrupts an episode at MaxStep 3000 (500 decisions), the penalties summing to -1, and starts the next one afresh', async () => {
    const env = await launch(['--agents', '1'], { seed: 2 });
    await env.reset();
    const { decisions, total, decision, terminal } = await playUntilInterrupted(env, BEHAVIOR, NOTHING, DECISION_PENALTY);
    // The last report is at step 3000: the stack's newest StepCount/MaxStep is 1.
    expect(terminal.observation(1, 0)[2]).toBe(1);
    // The next episode starts with its stacks emptied.
    expect(Array.from(decision.observation(1, 0))).toEqual([0, 0, Math.fround(1 / MAX_STEP)]);
    expect(decisions).toBe(MAX_STEP / DECISION_PERIOD);
    expect(total).toBeCloseTo(-1, 4);
  }, 60000);

  it('draws symbol and goal sides from the seed: the same seed replays the same episodes, another seed others', async () => {
    async function run(seed: number): Promise<string[]> {
      const env = await launch(['--agents', '3'], { seed });
      await env.reset();
      return randomPlayTrace(env, BEHAVIOR, 30, 5);
    }
    const first = await run(21);
    expect(await run(21)).toEqual(first);
    expect((await run(22))[0]).not.toBe(first[0]);
  }, 60000);

  it('honors the time scale the trainer sets: at 1, a decision lasts six fixed steps of real time', async () => {
    const engineConfiguration = new EngineConfigurationChannel();
    engineConfiguration.setConfigurationParameters({ timeScale: 1 });
    const env = await launch(['--agents', '1'], { seed: 1, sideChannels: [engineConfiguration] });
    await env.reset();
    const started = Date.now();
    for (let i = 0; i < 5; i++) {
      env.setActions(BEHAVIOR, { discrete: [[NOTHING]] });
      await env.step();
    }
    // 5 decisions of 6 steps of 0.02 s take at least half a second (a lower bound).
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
  });
});

describe('Hallway in process', () => {
  it('varies the symbol and the goals\' sides from episode to episode and replays them for a seed', () => {
    function layouts(seed: number): string[] {
      const academy = new Academy();
      academy.seed(seed);
      HALLWAY.create(academy, parseSimArgs(HALLWAY, []).values, 1);
      academy.reset();
      return (academy.agents as HallwayAgent[]).map((a) => {
        const oGoalX = (a.goalOf(HallwaySymbol.O).box.minX + a.goalOf(HallwaySymbol.O).box.maxX) / 2;
        return `${a.selection}:${oGoalX}:${a.symbolX.toFixed(3)}:${a.symbolZ.toFixed(3)}:${a.x.toFixed(3)}:${a.z.toFixed(3)}`;
      });
    }
    const a = layouts(3);
    expect(layouts(3)).toEqual(a);
    expect(layouts(4)).not.toEqual(a);
    const all = [3, 4, 5, 6].flatMap(layouts).map((s) => s.split(':').map(Number));
    // Both symbols, both sides for the O goal (the X goal opposite).
    expect(new Set(all.map((l) => l[0]))).toEqual(new Set([HallwaySymbol.O, HallwaySymbol.X]));
    expect(new Set(all.map((l) => l[1]))).toEqual(new Set([-7, 7]));
    for (const [selection, , symbolX, symbolZ, x, z] of all) {
      // As upstream: the O block shifts sideways within 3, the X block stays centred; both
      // within 5 of the middle; the agent within 3 of the axis and 10 to 20 before the middle.
      if (selection === HallwaySymbol.X) expect(symbolX).toBe(0);
      else expect(Math.abs(symbolX)).toBeLessThanOrEqual(3);
      expect(Math.abs(symbolZ)).toBeLessThanOrEqual(5);
      expect(Math.abs(x)).toBeLessThanOrEqual(3);
      expect(z).toBeGreaterThanOrEqual(-20);
      expect(z).toBeLessThanOrEqual(-10);
    }
    expect(all.some(([selection, , symbolX]) => selection === HallwaySymbol.O && symbolX !== 0)).toBe(true);
  });

  it("numbers its actions as upstream: 1 forward, 2 backward, 3 turn right, 4 turn left, 3 degrees a step", () => {
    const still = placedAgent({ x: 0, z: -15, yaw: 0 });
    act(still, NOTHING, 6);
    expect([still.x, still.z, still.yaw]).toEqual([0, -15, 0]);

    const forward = placedAgent({ x: 0, z: -15, yaw: 0 });
    act(forward, FORWARD, 6);
    expect(forward.z).toBeGreaterThan(-14.7);
    expect(forward.x).toBeCloseTo(0, 9);

    const backward = placedAgent({ x: 0, z: -15, yaw: 90 });
    act(backward, BACKWARD, 6);
    expect(backward.x).toBeLessThan(-0.3);
    expect(backward.z).toBeCloseTo(-15, 9);

    const right = placedAgent({ x: 0, z: -15, yaw: 0 });
    act(right, TURN_RIGHT, 6);
    expect(right.yaw).toBeCloseTo(18, 9);
    // Turned right, forward goes toward +x, 18 degrees off +z.
    act(right, FORWARD, 6);
    expect(right.x).toBeGreaterThan(0.1);
    expect(Math.atan2(right.x, right.z + 15) * (180 / Math.PI)).toBeCloseTo(18, 6);

    const left = placedAgent({ x: 0, z: -15, yaw: 0 });
    act(left, TURN_LEFT, 6);
    expect(left.yaw).toBeCloseTo(342, 9);
    expect(left.cumulativeReward).toBeCloseTo(-6 / MAX_STEP, 9);
  });

  it('stops at the walls and at the symbol block, and slides to a stop once it stops pushing', () => {
    const agent = placedAgent({ x: 0, z: -15, yaw: 90 });
    act(agent, FORWARD, 200);
    expect(agent.x).toBeCloseTo(INNER_X - 0.5, 6);
    const blocked = placedAgent({ x: 0, z: -8, yaw: 0, symbolX: 0, symbolZ: 0 });
    act(blocked, FORWARD, 200);
    expect(blocked.endRequest).toBeNull();
    expect(blocked.z).toBeCloseTo(-0.5 - 0.5, 6);
    const coasting = placedAgent({ x: 0, z: -20, yaw: 0 });
    act(coasting, FORWARD, 12);
    act(coasting, NOTHING, 100);
    expect(Math.hypot(coasting.vx, coasting.vz)).toBe(0);
    const stoppedAt = coasting.z;
    act(coasting, NOTHING, 6);
    expect(coasting.z).toBe(stoppedAt);
  });

  it('casts its rays forward, then alternately right and left at 35 and 70 degrees, each naming what it hit', () => {
    // Facing the near end wall (-z) from 4.75 before it: the ball rolls 4.25 before touching it.
    const agent = placedAgent({ x: 0, z: -20, yaw: 180 });
    const frame = new Float32Array(RAY_FRAME);
    agent.perceive(frame);
    expect(rayOf(frame, 0, TAGS)).toEqual({ tag: RayTag.Wall, missed: 0, fraction: Math.fround(4.25 / 12) });
    // Right of -z is -x: the rays at 55 and 20 degrees lean to -x, those at 125 and 160 to +x.
    for (const [ray, angle] of [[1, 55], [2, 125], [3, 20], [4, 160]] as const) {
      const a = (angle * Math.PI) / 180;
      const direction = { x: -Math.cos(a), z: -Math.sin(a) };
      const distance = distanceToWalls(0, -20, direction);
      const expected = distance > 12 ? { tag: null, missed: 1, fraction: 1 } : { tag: RayTag.Wall, missed: 0, fraction: Math.fround(distance / 12) };
      expect(rayOf(frame, ray, TAGS)).toEqual(expected);
    }

    // The symbol block 5 ahead (1 deep): the ball touches it after 4.
    for (const selection of [HallwaySymbol.O, HallwaySymbol.X]) {
      const facingSymbol = placedAgent({ x: 0, z: -5, yaw: 0, selection, symbolX: 0, symbolZ: 0 });
      facingSymbol.perceive(frame);
      const tag = selection === HallwaySymbol.O ? RayTag.SymbolO : RayTag.SymbolX;
      expect(rayOf(frame, 0, TAGS)).toEqual({ tag, missed: 0, fraction: Math.fround(4 / 12) });
    }

    // A goal 5 ahead of its near edge, in its lane: each names its own symbol.
    const nearGoals = placedAgent({ x: 0, z: 15.29, yaw: 0 });
    for (const symbol of [HallwaySymbol.O, HallwaySymbol.X]) {
      const lane = nearGoals.goalOf(symbol).box;
      nearGoals.x = (lane.minX + lane.maxX) / 2;
      nearGoals.perceive(frame);
      const tag = symbol === HallwaySymbol.O ? RayTag.SymbolOGoal : RayTag.SymbolXGoal;
      expect(rayOf(frame, 0, TAGS)).toEqual({ tag, missed: 0, fraction: Math.fround(4.5 / 12) });
    }
  });
});

describe("Hallway's heuristic", () => {
  it('walks to the goal that matches the symbol: every recorded episode ends on +1', () => {
    const folder = tempDir('hallway-demo');
    const demoPath = path.join(folder, 'heuristic.demo');
    execFileSync(process.execPath, [HALLWAY_ENV, '--heuristic', '--steps', '3000', '--seed', '3', '--agents', '1', '--record', demoPath], {
      timeout: 60000,
    });
    const demo = readDemoFile(demoPath);
    expect(demo.brainParameters.brain_name).toBe(BEHAVIOR);
    expect(demo.brainParameters.action_spec?.discrete_branch_sizes).toEqual([5]);
    const ends = demo.records.filter((r) => r.agent_info?.done);
    expect(ends.length).toBeGreaterThanOrEqual(4);
    for (const end of ends) {
      expect(end.agent_info!.reward).toBe(1);
      expect(end.agent_info!.max_step_reached ?? false).toBe(false);
    }
    // A decision every 6 steps: 500 decisions in 3000 steps, terminal steps aside.
    expect(demo.records.length - ends.length).toBe(500);
  }, 60000);
});
