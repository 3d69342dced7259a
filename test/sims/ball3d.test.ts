/**
 * 3DBall as the trainer sees it: the built executable runs as a child process and talks real
 * gRPC through UnityEnvironment, as a Unity build would; plus the physics and the scripted
 * balancer in-process, through the Academy and HeuristicBrain.
 */
import { execFile } from 'child_process';
import * as path from 'path';
import { readDemoFile } from '../../src/communicator/demo-file';
import { EnvironmentParametersChannel } from '../../src/communicator/side-channels/environment-parameters-channel';
import { DecisionSteps, TerminalSteps } from '../../src/env/steps';
import { UnityEnvironment, UnityEnvironmentOptions } from '../../src/env/unity-environment';
import { Academy } from '../../src/sims/sdk/academy';
import { HeuristicBrain } from '../../src/sims/sdk/brains';
import { SeededRandom } from '../../src/common/random';
import { DECISION_PERIOD, createBall3D } from '../../src/sims/envs/ball3d';
import { BALL_RADIUS, Ball3DWorld, PLATFORM_HALF_SIZE } from '../../src/sims/envs/ball3d-physics';
import { closeOpenedEnvironments, openBuiltEnvironment } from '../helpers/environments';
import { ROOT, tempDir } from '../helpers/paths';

const BALL3D_ENV = path.join(ROOT, 'dist', 'sims', 'envs', 'ball3d.js');
const BEHAVIOR = '3DBall';
const AGENTS = 12;
const DT = 0.02;
const G = 9.81;
const f32 = Math.fround;
/** Rewards travel as float32. */
const STAY = f32(0.1);

// Indices in the observation, in Ball3DAgent's order.
const ROT_Z = 0;
const ROT_X = 1;
const POS_X = 2;
const POS_Y = 3;
const POS_Z = 4;
const VEL_X = 5;
const VEL_Y = 6;
const VEL_Z = 7;

async function launch(args: string[] = [], options: Partial<UnityEnvironmentOptions> = {}): Promise<UnityEnvironment> {
  const env = await openBuiltEnvironment(BALL3D_ENV, args, options);
  await env.reset();
  return env;
}

afterEach(closeOpenedEnvironments);

function steps(env: UnityEnvironment): [DecisionSteps, TerminalSteps] {
  return env.getSteps(BEHAVIOR);
}

/** Ball3DAgent's fall test, on an observation. */
function fallen(obs: Float32Array): boolean {
  return obs[POS_Y] < -2 || Math.abs(obs[POS_X]) > 3 || Math.abs(obs[POS_Z]) > 3;
}

describe('3DBall: the session a trainer sees', () => {
  it('connects, shows the behavior spec and 12 agents, steps a decision every 5 academy steps, closes', async () => {
    const env = await launch([], { seed: 5 });
    expect(env.name).toBe('3DBall');
    const spec = env.behaviorSpecs.get(BEHAVIOR)!;
    expect(spec.observationSpecs.map((o) => o.shape)).toEqual([[8]]);
    expect(spec.actionSpec.continuousSize).toBe(2);
    expect(spec.actionSpec.discreteBranches).toEqual([]);

    const [first, noneEnded] = steps(env);
    expect(first.length).toBe(AGENTS);
    expect(noneEnded.length).toBe(0);
    expect(Array.from(first.reward)).toEqual(new Array(AGENTS).fill(0));
    const maxStartComponent = Math.sin((10 / 2) * (Math.PI / 180)) + 1e-6;
    for (let row = 0; row < AGENTS; row++) {
      const obs = first.observation(0, row);
      // OnEpisodeBegin: tilted up to 10 degrees about x and z, the ball dropped from 4 above the
      // centre, at most 1.5 off along x and z, at rest.
      expect(Math.abs(obs[ROT_Z])).toBeLessThanOrEqual(maxStartComponent);
      expect(Math.abs(obs[ROT_X])).toBeLessThanOrEqual(maxStartComponent);
      expect(obs[POS_Y]).toBe(4);
      expect(Math.abs(obs[POS_X])).toBeLessThanOrEqual(1.5);
      expect(Math.abs(obs[POS_Z])).toBeLessThanOrEqual(1.5);
      expect(Array.from(obs.subarray(VEL_X))).toEqual([0, 0, 0]);
    }

    env.setActions(BEHAVIOR, { continuous: new Float32Array(2 * AGENTS) });
    await env.step();
    const [second] = steps(env);
    expect(second.length).toBe(AGENTS);
    for (let row = 0; row < AGENTS; row++) {
      const before = first.observation(0, row);
      const obs = second.observation(0, row);
      // Five fixed steps of free fall passed between the two decisions (semi-implicit Euler, as
      // PhysX): v = 5 g dt, y = 4 - g dt² (1 + 2 + 3 + 4 + 5), Expert3DBall.demo's second record.
      expect(obs[VEL_Y]).toBeCloseTo(-DECISION_PERIOD * G * DT, 5);
      expect(obs[POS_Y]).toBeCloseTo(4 - G * DT * DT * 15, 5);
      expect(obs[POS_X]).toBe(before[POS_X]);
      expect(obs[ROT_Z]).toBe(before[ROT_Z]);
    }
    // SetReward(0.1) at each of the five steps: the trainer sees 0.1 a decision, not 0.5.
    expect(Array.from(second.reward)).toEqual(new Array(AGENTS).fill(STAY));
    await env.close();
  });

  it('has --agents per area, times the areas the trainer asks for', async () => {
    const env = await launch(['--agents', '3'], { numAreas: 2 });
    expect(steps(env)[0].length).toBe(6);
  });

  it('reads gravity from the environment parameters', async () => {
    const parameters = new EnvironmentParametersChannel();
    parameters.setFloatParameter('gravity', 4.905);
    const env = await launch([], { sideChannels: [parameters] });
    await env.step();
    const [decision] = steps(env);
    for (let row = 0; row < decision.length; row++) {
      expect(decision.observation(0, row)[VEL_Y]).toBeCloseTo(-DECISION_PERIOD * 4.905 * DT, 5);
    }
  });

  it('refuses a bad --max-step', async () => {
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(process.execPath, [BALL3D_ENV, '--heuristic', '--max-step', 'x'], (error, _stdout, stderr) =>
        resolve({ code: error ? (error.code as number) : 0, stderr }),
      );
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--max-step needs an integer');
  });
});

describe('3DBall: physics as the trainer sees it', () => {
  it('with no action, the ball rolls down the tilt and falls: -1, a true end', async () => {
    const env = await launch([], { seed: 9 });
    const [first] = steps(env);
    const start = new Map<number, Float32Array>();
    for (let row = 0; row < first.length; row++) start.set(first.agentId[row], first.observation(0, row).slice());
    const fell = new Map<number, Float32Array>();
    for (let decision = 0; decision < 400 && fell.size < AGENTS; decision++) {
      await env.step();
      const [, terminal] = steps(env);
      for (let row = 0; row < terminal.length; row++) {
        const id = terminal.agentId[row];
        if (fell.has(id)) continue;
        expect(terminal.reward[row]).toBe(-1);
        expect(terminal.interrupted[row]).toBe(0);
        fell.set(id, terminal.observation(0, row).slice());
      }
    }
    expect(fell.size).toBe(AGENTS);
    for (const [id, end] of fell) {
      const begin = start.get(id)!;
      expect(fallen(end)).toBe(true);
      // From rest on a fixed tilt the ball runs straight down the slope: a positive turn about z
      // sends it towards -x, a positive turn about x towards +z.
      const dx = end[POS_X] - begin[POS_X];
      const dz = end[POS_Z] - begin[POS_Z];
      if (Math.abs(dx) > 1) expect(Math.sign(dx)).toBe(-Math.sign(begin[ROT_Z]));
      if (Math.abs(dz) > 1) expect(Math.sign(dz)).toBe(Math.sign(begin[ROT_X]));
      expect(Math.max(Math.abs(dx), Math.abs(dz))).toBeGreaterThan(1);
    }
  });

  it('loses balls under random actions at a plausible rate (an episode of about 20 decisions)', async () => {
    const env = await launch([], { seed: 4 });
    const random = new SeededRandom(77);
    const decisions = 300;
    let episodes = 0;
    for (let decision = 0; decision < decisions; decision++) {
      const count = steps(env)[0].length;
      env.setActions(BEHAVIOR, { continuous: Float32Array.from({ length: 2 * count }, () => random.range(-1, 1)) });
      await env.step();
      const [, terminal] = steps(env);
      for (let row = 0; row < terminal.length; row++) {
        expect(terminal.reward[row]).toBe(-1);
        expect(terminal.interrupted[row]).toBe(0);
        episodes += 1;
      }
    }
    // Upstream's PPO starts 3DBall near a mean reward of 1, about 20 decisions an episode.
    const meanDecisions = (decisions * AGENTS) / episodes;
    expect(meanDecisions).toBeGreaterThan(8);
    expect(meanDecisions).toBeLessThan(40);
  });

  it('interrupts an episode at --max-step: a terminal step flagged interrupted, then a new episode', async () => {
    const env = await launch(['--max-step', '50'], { seed: 2 });
    // Decisions at agent steps 1, 6, ..., 46; step 50 ends the episode, reported at the next decision.
    for (let decision = 1; decision < 10; decision++) {
      await env.step();
      expect(steps(env)[1].length).toBe(0);
    }
    await env.step();
    const [next, ended] = steps(env);
    expect(ended.length).toBe(AGENTS);
    expect(Array.from(ended.interrupted)).toEqual(new Array(AGENTS).fill(1));
    expect(Array.from(ended.reward)).toEqual(new Array(AGENTS).fill(STAY));
    expect(Array.from(next.agentId)).toEqual(Array.from(ended.agentId));
    for (let row = 0; row < next.length; row++) expect(next.observation(0, row)[POS_Y]).toBe(4);
    expect(Array.from(next.reward)).toEqual(new Array(AGENTS).fill(0));
  });

  it('replays an episode exactly for the same seed, and another for another seed', async () => {
    const play = async (seed: number): Promise<Float32Array[]> => {
      const env = await launch([], { seed });
      const seen: Float32Array[] = [steps(env)[0].obs[0].slice()];
      for (let decision = 0; decision < 200; decision++) {
        const count = steps(env)[0].length;
        // Actions that follow the observations, so that any difference would grow.
        const obs = steps(env)[0].obs[0];
        const continuous = new Float32Array(2 * count);
        for (let row = 0; row < count; row++) {
          continuous[2 * row] = Math.sin(decision / 7 + obs[row * 8 + POS_X]);
          continuous[2 * row + 1] = Math.cos(decision / 5 + obs[row * 8 + POS_Z]);
        }
        env.setActions(BEHAVIOR, { continuous });
        await env.step();
        const [decisionSteps, terminal] = steps(env);
        seen.push(decisionSteps.obs[0].slice(), terminal.obs[0].slice());
      }
      await env.close();
      return seen;
    };
    const first = await play(21);
    const again = await play(21);
    const other = await play(22);
    expect(again).toEqual(first);
    expect(other).not.toEqual(first);
  });
});

describe('3DBall: the scripted balancer', () => {
  it('keeps every ball up for whole episodes: 1000 decisions of 0.1, 100 an episode, interrupted at 5000 steps', async () => {
    const academy = new Academy();
    academy.seed(8);
    createBall3D(academy, 2 * AGENTS);
    const episodeReward = new Map<number, number>();
    const finished: Array<{ reward: number; interrupted: boolean }> = [];
    academy.addBatchListener((batches) => {
      const batch = batches.get(BEHAVIOR)!;
      for (let row = 0; row < batch.count; row++) {
        const id = batch.id[row];
        const sum = (episodeReward.get(id) ?? 0) + batch.reward[row];
        if (batch.done[row]) {
          finished.push({ reward: sum, interrupted: batch.maxStepReached[row] === 1 });
          episodeReward.set(id, 0);
        } else {
          episodeReward.set(id, sum);
        }
      }
    });
    academy.reset();
    const brain = new HeuristicBrain();
    for (let step = 0; step < 2 * 5000 + 1; step++) await academy.step(brain);
    expect(finished).toHaveLength(2 * 2 * AGENTS);
    for (const episode of finished) {
      expect(episode.interrupted).toBe(true);
      expect(episode.reward).toBeCloseTo(1000 * STAY, 4);
    }
  });

  it('records the same reward with --heuristic --record: 0 at the first decision, then 0.1 each', async () => {
    const demoPath = path.join(tempDir('ball3d-demo'), 'heuristic.demo');
    await new Promise<void>((resolve, reject) => {
      execFile(
        process.execPath,
        [BALL3D_ENV, '--heuristic', '--steps', '5005', '--seed', '3', '--record', demoPath],
        (error) => (error ? reject(error) : resolve()),
      );
    });
    const demo = readDemoFile(demoPath);
    // The first agent: decisions at steps 1, 6, ..., 4996, the terminal step of 5000, then the
    // first decision of its next episode.
    expect(demo.records).toHaveLength(1002);
    const rewards = demo.records.map((r) => r.agent_info?.reward ?? 0);
    expect(rewards[0]).toBe(0);
    expect(rewards.slice(1, 1001)).toEqual(new Array(1000).fill(STAY));
    const end = demo.records[1000].agent_info!;
    expect(end.done).toBe(true);
    expect(end.max_step_reached).toBe(true);
    expect(rewards.slice(0, 1001).reduce((a, b) => a + b, 0)).toBeCloseTo(100, 4);
    expect(rewards[1001]).toBe(0);
  });
});

describe('3DBall: the physics alone', () => {
  /** A world of one ball resting on the top face of a cube tilted `degrees` about z. */
  function restingOnTilt(degrees: number): Ball3DWorld {
    const world = new Ball3DWorld(1);
    world.setTilt(0, 0, degrees);
    const angle = (degrees * Math.PI) / 180;
    const up = PLATFORM_HALF_SIZE + BALL_RADIUS;
    // The point `up` along the face's normal from the centre: the ball just touches the face.
    world.placeBall(0, -Math.sin(angle) * up, Math.cos(angle) * up, 0);
    return world;
  }

  it('rolls a ball down a fixed slope at 5/7 g sin(angle), as a solid sphere rolls', () => {
    const degrees = 8;
    const world = restingOnTilt(degrees);
    const steps = 30;
    for (let i = 0; i < steps; i++) world.step(DT);
    const angle = (degrees * Math.PI) / 180;
    const speed = Math.hypot(world.velX[0], world.velY[0], world.velZ[0]);
    const expected = (5 / 7) * G * Math.sin(angle) * steps * DT;
    expect(speed).toBeGreaterThan(expected * 0.98);
    expect(speed).toBeLessThan(expected * 1.02);
    expect(world.velX[0]).toBeLessThan(0);
    // It rolls rather than slides: the rim's speed matches the centre's.
    expect(Math.abs(world.spinZ[0]) * BALL_RADIUS).toBeCloseTo(speed, 2);
    // It stays on the face.
    const distanceFromFace = world.posX[0] * -Math.sin(angle) + world.posY[0] * Math.cos(angle);
    expect(distanceFromFace).toBeCloseTo(PLATFORM_HALF_SIZE + BALL_RADIUS, 3);
  });

  it('stops a dropped ball on the face without a bounce, at its radius above it (scale included)', () => {
    const world = new Ball3DWorld(2);
    world.radius[1] = 2 * BALL_RADIUS;
    world.placeBall(0, 0.5, 4, -0.5);
    world.placeBall(1, 0.5, 4, -0.5);
    for (let i = 0; i < 100; i++) world.step(DT);
    expect(world.posY[0]).toBeCloseTo(PLATFORM_HALF_SIZE + BALL_RADIUS, 3);
    expect(world.posY[1]).toBeCloseTo(PLATFORM_HALF_SIZE + 2 * BALL_RADIUS, 3);
    expect(Math.abs(world.velY[0])).toBeLessThan(0.01);
    expect(world.posX[0]).toBeCloseTo(0.5, 6);
  });

  it('lets a ball roll over the edge and fall', () => {
    const world = new Ball3DWorld(1);
    world.placeBall(0, 2, PLATFORM_HALF_SIZE + BALL_RADIUS, 0);
    world.velX[0] = 1;
    world.spinZ[0] = -1 / BALL_RADIUS; // rolling towards +x
    let lowest = Infinity;
    for (let i = 0; i < 150; i++) {
      world.step(DT);
      lowest = Math.min(lowest, world.posY[0]);
    }
    expect(world.posX[0]).toBeGreaterThan(PLATFORM_HALF_SIZE + BALL_RADIUS);
    expect(lowest).toBeLessThan(-2);
  });

  it('pushes the ball out as fast as a turning face comes at it', () => {
    const world = restingOnTilt(0);
    world.placeBall(0, 1.5, PLATFORM_HALF_SIZE + BALL_RADIUS, 0);
    world.step(DT);
    // A turn of 2 degrees about z lifts the face at x = 1.5 by about 1.5 x 2 degrees in one step.
    world.rotateAboutLocalZ(0, 2);
    world.step(DT);
    const lift = 1.5 * ((2 * Math.PI) / 180) / DT;
    expect(world.velY[0]).toBeGreaterThan(0.8 * lift);
    expect(world.velY[0]).toBeLessThan(1.2 * lift);
  });
});
