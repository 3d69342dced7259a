/**
 * Pyramids, end to end: the built executable connects over real gRPC as a Unity build does. Where
 * a test needs to know where things are, it runs the same seed in process (a mirror fed the same
 * actions, test/helpers/mirror.ts) and reads its agents.
 */
import { execFileSync, spawnSync } from 'child_process';
import * as path from 'path';
import { readDemoFile } from '../../src/communicator/demo-file';
import { ObservationType } from '../../src/env/behavior-spec';
import { UnityEnvironment, UnityEnvironmentOptions } from '../../src/env/unity-environment';
import {
  BACKWARD,
  FORWARD,
  NOTHING,
  PYRAMIDS,
  PyramidAgent,
  RayTag,
  TURN_LEFT,
  TURN_RIGHT,
} from '../../src/sims/envs/pyramids';
import { boxAround, distanceToBox } from '../../src/sims/envs/top-down';
import { Academy } from '../../src/sims/sdk/academy';
import { parseSimArgs } from '../../src/sims/sdk/run-environment';
import { SeededRandom } from '../../src/common/random';
import { closeOpenedEnvironments, openBuiltEnvironment } from '../helpers/environments';
import { Mirror, randomPlayTrace } from '../helpers/mirror';
import { act, playUntilInterrupted, rayOf } from '../helpers/walkers';
import { ROOT, tempDir } from '../helpers/paths';

const PYRAMIDS_ENV = path.join(ROOT, 'dist', 'sims', 'envs', 'pyramids.js');
const BEHAVIOR = 'Pyramids';
const MAX_STEP = 5000;
const DECISION_PERIOD = 5;
/** What a decision's five steps cost, as the trainer receives it (a float32). */
const DECISION_PENALTY = Math.fround(-DECISION_PERIOD / MAX_STEP);
const TAGS = 6;
const RAYS = 7;
const RAY_FRAME = RAYS * (TAGS + 2);
const SWITCH_STATE = 0;

function launch(args: string[], extra: Partial<UnityEnvironmentOptions> = {}): Promise<UnityEnvironment> {
  return openBuiltEnvironment(PYRAMIDS_ENV, args, { timeoutWait: 20, ...extra });
}

afterEach(closeOpenedEnvironments);

/** The tags the three sensors name at one decision. */
function tagsSeen(observations: Float32Array[]): Set<number> {
  const seen = new Set<number>();
  for (const frame of observations.slice(0, 3)) {
    for (let ray = 0; ray < RAYS; ray++) {
      const { tag } = rayOf(frame, ray, TAGS);
      if (tag !== null) seen.add(tag);
    }
  }
  return seen;
}

/** An agent in process at `scale`, its episode drawn, then emptied of stones and placed as the test says. */
function placedAgent(at: Partial<Pick<PyramidAgent, 'x' | 'z' | 'yaw'>>, scale = 1): PyramidAgent {
  const academy = new Academy();
  academy.seed(1);
  PYRAMIDS.create(academy, parseSimArgs(PYRAMIDS, ['--agents', '1', '--area-scale', String(scale)]).values, 1);
  academy.reset();
  const agent = academy.agents[0] as PyramidAgent;
  agent.stones = [];
  // The switch out of reach, outside the room.
  agent.switchBox = boxAround(1000, 1000, 4, 4);
  Object.assign(agent, at);
  return agent;
}

// ---------------------------------------------------------------------------------------------

describe('Pyramids over gRPC', () => {
  it("shows upstream's behavior spec: three ray sensors of 56 and the vector observation of 4, one branch of 5", async () => {
    const env = await launch([], { seed: 1 });
    expect(env.name).toBe('Pyramids');
    await env.reset();
    const spec = env.behaviorSpecs.get(BEHAVIOR)!;
    expect(spec.observationSpecs.map((o) => [o.name, o.shape, o.observationType])).toEqual([
      ['RayPerceptionSensor', [56], ObservationType.DEFAULT],
      ['RayPerceptionSensor1', [56], ObservationType.DEFAULT],
      ['RayPerceptionSensor2', [56], ObservationType.DEFAULT],
      ['VectorSensor_size4', [4], ObservationType.DEFAULT],
    ]);
    expect(spec.actionSpec.continuousSize).toBe(0);
    expect(spec.actionSpec.discreteBranches).toEqual([5]);

    const [decision, terminal] = env.getSteps(BEHAVIOR);
    // The scene's 16 areas.
    expect(decision.length).toBe(16);
    expect(terminal.length).toBe(0);
    for (let row = 0; row < decision.length; row++) {
      for (let sensor = 0; sensor < 3; sensor++) {
        const frame = decision.observation(sensor, row);
        for (let ray = 0; ray < RAYS; ray++) {
          const { tag, missed, fraction } = rayOf(frame, ray, TAGS);
          const oneHot = Array.from(frame.subarray(ray * (TAGS + 2), ray * (TAGS + 2) + TAGS));
          expect(oneHot.filter((v) => v === 1)).toHaveLength(missed ? 0 : 1);
          expect(oneHot.every((v) => v === 0 || v === 1)).toBe(true);
          // Nothing is tagged block, and no gold pyramid stands before the switch is pressed.
          expect(tag === RayTag.Block || tag === RayTag.Goal || tag === RayTag.SwitchOn).toBe(false);
          if (missed) expect(fraction).toBe(1);
          expect(fraction).toBeGreaterThanOrEqual(0);
          expect(fraction).toBeLessThanOrEqual(1);
        }
      }
      // The switch is off and the agent still.
      expect(Array.from(decision.observation(3, row)).every((v) => v === 0)).toBe(true);
    }

    env.setActions(BEHAVIOR, { discrete: Array.from(decision.agentId, () => [NOTHING]) });
    await env.step();
    const [after] = env.getSteps(BEHAVIOR);
    // One decision later: five steps acted, each costing 1/MaxStep.
    expect(Array.from(after.reward)).toEqual(new Array(16).fill(DECISION_PENALTY));
  });

  it('sends what the environment sees, ray for ray (an in-process mirror fed the same actions agrees)', async () => {
    const seed = 5;
    const env = await launch(['--agents', '4'], { seed });
    const mirror = new Mirror<PyramidAgent>(PYRAMIDS, BEHAVIOR, seed, ['--agents', '4']);
    await env.reset();
    const choose = new SeededRandom(3);
    const tags = new Set<number>();
    for (let step = 0; step < 40; step++) {
      const [decision] = env.getSteps(BEHAVIOR);
      const seen = await mirror.decision();
      for (let row = 0; row < decision.length; row++) {
        const expected = seen.observations.get(decision.agentId[row])!;
        expected.forEach((values, i) => expect(Array.from(decision.observation(i, row))).toEqual(Array.from(values)));
        // The velocity, in the agent's frame: as long as the mirror agent's own, level.
        const agent = mirror.byId(decision.agentId[row]);
        const [, right, up, forward] = decision.observation(3, row);
        expect(up).toBe(0);
        expect(Math.hypot(right, forward)).toBeCloseTo(Math.hypot(agent.vx, agent.vz), 4);
        tagsSeen([0, 1, 2].map((i) => decision.observation(i, row))).forEach((tag) => tags.add(tag));
      }
      // Mostly forward, sometimes turning, so that the agents travel and face all ways.
      const actions = Array.from(decision.agentId, () => [FORWARD, FORWARD, TURN_RIGHT, TURN_LEFT, NOTHING, BACKWARD][choose.int(6)]);
      mirror.act(decision.agentId, actions);
      env.setActions(BEHAVIOR, { discrete: actions.map((a) => [a]) });
      await env.step();
    }
    expect([...tags]).toEqual(expect.arrayContaining([RayTag.Wall, RayTag.Stone, RayTag.SwitchOff]));
  }, 60000);

  it('pays +2 for the gold pyramid that the switch raised, ending the episode, after -1/MaxStep a step', async () => {
    const seed = 13;
    const args = ['--agents', '3', '--area-scale', '0.5'];
    const env = await launch(args, { seed });
    const mirror = new Mirror<PyramidAgent>(PYRAMIDS, BEHAVIOR, seed, args);
    await env.reset();
    const ids = mirror.agents.map((a) => a.id);
    interface Episode {
      rewards: number[];
      /** The decision at which the switch first read on, and at which a ray first named the gold pyramid. */
      switchedAt: number | null;
      goldSeenAt: number | null;
    }
    const fresh = (): Episode => ({ rewards: [], switchedAt: null, goldSeenAt: null });
    const finished: Episode[] = [];
    const current = ids.map(fresh);
    for (let step = 0; step < 3000 && finished.length < 4; step++) {
      const [decision, terminal] = env.getSteps(BEHAVIOR);
      await mirror.decision();
      ids.forEach((id, i) => {
        const ended = terminal.indexOf(id);
        if (ended !== -1) {
          // Only the gold pyramid ends an episode this early.
          expect(terminal.interrupted[ended]).toBe(0);
          current[i].rewards.push(terminal.reward[ended]);
          finished.push(current[i]);
          current[i] = fresh();
        }
        const row = decision.indexOf(id);
        if (row === -1) return;
        const episode = current[i];
        episode.rewards.push(decision.reward[row]);
        const on = decision.observation(3, row)[SWITCH_STATE];
        if (on === 1 && episode.switchedAt === null) episode.switchedAt = episode.rewards.length - 1;
        if (on === 0) expect(episode.switchedAt).toBeNull();
        const tags = tagsSeen([0, 1, 2].map((o) => decision.observation(o, row)));
        if (tags.has(RayTag.Goal) && episode.goldSeenAt === null) episode.goldSeenAt = episode.rewards.length - 1;
        // The switch reads off to every ray until it is pressed, and on after.
        if (on === 0) expect(tags.has(RayTag.SwitchOn)).toBe(false);
        else expect(tags.has(RayTag.SwitchOff)).toBe(false);
      });
      const actions = Array.from(decision.agentId, (id) => {
        const agent = mirror.byId(id);
        return agent.walkTo(agent.gold ?? agent.switchBox);
      });
      mirror.act(decision.agentId, actions);
      env.setActions(BEHAVIOR, { discrete: actions.map((a) => [a]) });
      await env.step();
    }
    expect(finished.length).toBeGreaterThanOrEqual(4);
    for (const { rewards, switchedAt, goldSeenAt } of finished) {
      // The switch first, then the gold pyramid comes into sight, then the brick.
      expect(switchedAt).not.toBeNull();
      expect(goldSeenAt).not.toBeNull();
      expect(goldSeenAt!).toBeGreaterThanOrEqual(switchedAt!);
      // The first decision of an episode carries the steps acted since it began (none to four);
      // each later one five steps' penalty; the brick sets the last decision's reward to +2.
      const before = Math.round(-rewards[0] * MAX_STEP);
      expect(before).toBeGreaterThanOrEqual(0);
      expect(before).toBeLessThan(DECISION_PERIOD);
      expect(rewards[0]).toBeCloseTo(-before / MAX_STEP, 7);
      expect(rewards.slice(1, -1)).toEqual(new Array(rewards.length - 2).fill(DECISION_PENALTY));
      expect(rewards[rewards.length - 1]).toBe(2);
    }
  }, 120000);

  it('interrupts an episode at MaxStep 5000 (1000 decisions), the penalties summing to -1, and starts the next one afresh', async () => {
    const env = await launch(['--agents', '1'], { seed: 2 });
    await env.reset();
    const { decisions, total } = await playUntilInterrupted(env, BEHAVIOR, TURN_LEFT, DECISION_PENALTY);
    expect(decisions).toBe(MAX_STEP / DECISION_PERIOD);
    expect(total).toBeCloseTo(-1, 4);
  }, 60000);

  it('--max-step shortens the episodes and raises the step cost to -1/max-step', async () => {
    const env = await launch(['--agents', '1', '--max-step', '100'], { seed: 2 });
    await env.reset();
    const rewards: number[] = [];
    for (;;) {
      env.setActions(BEHAVIOR, { discrete: [[NOTHING]] });
      await env.step();
      const [decision, terminal] = env.getSteps(BEHAVIOR);
      if (terminal.length > 0) {
        expect(terminal.interrupted[0]).toBe(1);
        rewards.push(terminal.reward[0]);
        break;
      }
      rewards.push(decision.reward[0]);
    }
    // 19 decisions after the first, then the terminal step at 100.
    expect(rewards).toEqual(new Array(100 / DECISION_PERIOD).fill(Math.fround(-DECISION_PERIOD / 100)));
  });

  it('draws the layout from the seed: the same seed replays the same episodes, another seed others', async () => {
    async function run(seed: number): Promise<string[]> {
      const env = await launch(['--agents', '3'], { seed });
      await env.reset();
      return randomPlayTrace(env, BEHAVIOR, 30, 5);
    }
    const first = await run(21);
    expect(await run(21)).toEqual(first);
    expect((await run(22))[0]).not.toBe(first[0]);
  }, 60000);
});

describe('Pyramids in process', () => {
  it('puts the agent, the switch, the gold pyramid and six stones on the 9 spots, each inside its own, anew every episode', () => {
    const layouts: string[] = [];
    for (const seed of [3, 4]) {
      const academy = new Academy();
      academy.seed(seed);
      PYRAMIDS.create(academy, parseSimArgs(PYRAMIDS, ['--agents', '4']).values, 1);
      for (let episode = 0; episode < 3; episode++) {
        academy.reset();
        for (const agent of academy.agents as PyramidAgent[]) {
          // The spot of a point: the 25-wide cell around (-30, 0 or 30) on each axis.
          const spotOf = (x: number, z: number) => {
            const col = [-30, 0, 30].findIndex((c) => Math.abs(x - c) <= 12.5);
            const row = [-30, 0, 30].findIndex((c) => Math.abs(z - c) <= 12.5);
            expect(col).not.toBe(-1);
            expect(row).not.toBe(-1);
            return row * 3 + col;
          };
          const boxSpot = (box: { minX: number; maxX: number; minZ: number; maxZ: number }) => {
            const spot = spotOf(box.minX, box.minZ);
            expect(spotOf(box.maxX, box.maxZ)).toBe(spot);
            return spot;
          };
          const spots = [spotOf(agent.x, agent.z), boxSpot(agent.switchBox), agent.goldSpot, ...agent.stones.map(boxSpot)];
          expect(new Set(spots).size).toBe(9);
          expect(Number.isInteger(agent.yaw) && agent.yaw >= 0 && agent.yaw < 360).toBe(true);
          expect(agent.switchOn).toBe(false);
          expect(agent.gold).toBeNull();
          layouts.push(spots.join(','));
        }
      }
    }
    expect(new Set(layouts).size).toBe(layouts.length);
  });

  it('numbers its actions as upstream: 1 forward, 2 backward, 3 turn right, 4 turn left, 4 degrees a step', () => {
    const still = placedAgent({ x: 30, z: 0, yaw: 0 });
    act(still, NOTHING, 5);
    expect([still.x, still.z, still.yaw]).toEqual([30, 0, 0]);

    const forward = placedAgent({ x: 30, z: 0, yaw: 0 });
    act(forward, FORWARD, 5);
    expect(forward.z).toBeGreaterThan(0.3);
    expect(forward.x).toBeCloseTo(30, 9);
    const backward = placedAgent({ x: 30, z: 0, yaw: 90 });
    act(backward, BACKWARD, 5);
    expect(backward.x).toBeLessThan(29.7);
    expect(backward.z).toBeCloseTo(0, 9);

    const right = placedAgent({ x: 30, z: 0, yaw: 0 });
    act(right, TURN_RIGHT, 5);
    expect(right.yaw).toBeCloseTo(20, 9);
    act(right, FORWARD, 5);
    expect(Math.atan2(right.x - 30, right.z) * (180 / Math.PI)).toBeCloseTo(20, 6);
    const left = placedAgent({ x: 30, z: 0, yaw: 0 });
    act(left, TURN_LEFT, 5);
    expect(left.yaw).toBeCloseTo(340, 9);
    expect(left.cumulativeReward).toBeCloseTo(-5 / MAX_STEP, 9);
  });

  it('never passes through a wall, even in the smallest room where walls are a quarter thick', () => {
    for (const scale of [1, 0.25]) {
      const agent = placedAgent({}, scale);
      const walls = agent.room.walls;
      const choose = new SeededRandom(9);
      let nearestWall = Infinity;
      let farthestOut = 0;
      for (let decision = 0; decision < 3000; decision++) {
        act(agent, [FORWARD, FORWARD, FORWARD, TURN_RIGHT, TURN_LEFT][choose.int(5)], 5);
        for (const wall of walls) nearestWall = Math.min(nearestWall, distanceToBox(wall, agent.x, agent.z));
        farthestOut = Math.max(farthestOut, Math.abs(agent.x), Math.abs(agent.z));
      }
      expect(nearestWall).toBeGreaterThan(0.5 - 1e-6);
      // It did reach the walls, and no further.
      expect(nearestWall).toBeLessThan(0.5 + 1e-6);
      expect(farthestOut).toBeLessThanOrEqual(49.5 * scale - 0.5 + 1e-6);
    }
  });

  it('casts 7 rays a sensor, forward then alternately right and left, over 70, 65 and 75 degrees, each naming what it hit', () => {
    // From (30, 0) facing +x, the outer wall at 49.5: the ball rolls 19 before touching it.
    const agent = placedAgent({ x: 30, z: 0, yaw: 90 });
    const frame = new Float32Array(RAY_FRAME);
    agent.perceive(0, frame);
    expect(rayOf(frame, 0, TAGS)).toEqual({ tag: RayTag.Wall, missed: 0, fraction: Math.fround(19 / 35) });

    // A stone 30 away, 20 degrees right of +z from the middle spot: the last right ray of the
    // first sensor (90 - 70 = 20) sees it; those of the others (25 and 15) pass beside it.
    const a = (20 * Math.PI) / 180;
    const seer = placedAgent({ x: 0, z: 0, yaw: 0 });
    seer.stones = [boxAround(30 * Math.cos(a), 30 * Math.sin(a), 3, 3)];
    const tagsOfRay5 = [0, 1, 2].map((sensor) => {
      seer.perceive(sensor, frame);
      return rayOf(frame, 5, TAGS).tag;
    });
    expect(tagsOfRay5[0]).toBe(RayTag.Stone);
    expect(tagsOfRay5.slice(1)).not.toContain(RayTag.Stone);
    // Its left twin (ray 6, 160 degrees) sees no stone.
    seer.perceive(0, frame);
    expect(rayOf(frame, 6, TAGS).tag).not.toBe(RayTag.Stone);

    // The switch ahead: off, then on once touched, and the gold pyramid appears on its spot.
    const presser = placedAgent({ x: 0, z: 0, yaw: 0 });
    presser.switchBox = boxAround(0, 6, 4, 4);
    presser.perceive(0, frame);
    expect(rayOf(frame, 0, TAGS)).toEqual({ tag: RayTag.SwitchOff, missed: 0, fraction: Math.fround(3.5 / 35) });
    act(presser, FORWARD, 50);
    expect(presser.switchOn).toBe(true);
    expect(presser.gold).not.toBeNull();
    presser.perceive(0, frame);
    expect(rayOf(frame, 0, TAGS).tag).toBe(RayTag.SwitchOn);
    const goldCenter = { x: (presser.gold!.minX + presser.gold!.maxX) / 2, z: (presser.gold!.minZ + presser.gold!.maxZ) / 2 };
    const spot = presser.room.spots[presser.goldSpot];
    expect(Math.abs(goldCenter.x - spot.x)).toBeLessThanOrEqual(11);
    expect(Math.abs(goldCenter.z - spot.z)).toBeLessThanOrEqual(11);
    expect(presser.endRequest).toBeNull();
  });
});

describe("Pyramids' heuristic and options", () => {
  it('presses the switch, then walks to the gold pyramid: recorded episodes end on +2', () => {
    const folder = tempDir('pyramids-demo');
    const demoPath = path.join(folder, 'heuristic.demo');
    execFileSync(process.execPath, [PYRAMIDS_ENV, '--heuristic', '--steps', '5000', '--seed', '3', '--agents', '1', '--area-scale', '0.5', '--record', demoPath], {
      timeout: 60000,
    });
    const demo = readDemoFile(demoPath);
    expect(demo.brainParameters.brain_name).toBe(BEHAVIOR);
    const ends = demo.records.filter((r) => r.agent_info?.done);
    const reached = ends.filter((end) => end.agent_info!.reward === 2 && !(end.agent_info!.max_step_reached ?? false));
    expect(reached.length).toBeGreaterThanOrEqual(5);
    expect(reached.length).toBe(ends.length);
  }, 60000);

  it('--help names --area-scale and --max-step with their defaults; a bad --area-scale is refused naming the flag', () => {
    const help = execFileSync(process.execPath, [PYRAMIDS_ENV, '--help']).toString();
    expect(help).toMatch(/--area-scale VALUE\s+the room's lengths times this, from 0\.25 to 1 .*\(default 1\)/);
    expect(help).toMatch(/--max-step VALUE\s+steps before an episode is interrupted .*\(default 5000\)/);
    const refused = spawnSync(process.execPath, [PYRAMIDS_ENV, '--heuristic', '--area-scale', '2']);
    expect(refused.status).toBe(1);
    expect(refused.stderr.toString()).toContain('--area-scale needs a number from 0.25 to 1');
  });
});
