/**
 * GridWorld, end to end: the built executable connects over real gRPC as a Unity build does.
 * Where a test needs to know where things are, it runs the same seed in process (a "mirror"
 * Academy fed the same actions) and reads its agents' state.
 */
import { execFileSync } from 'child_process';
import { createHash } from 'crypto';
import * as path from 'path';
import { readDemoFile } from '../../src/communicator/demo-file';
import { EnvironmentParametersChannel } from '../../src/communicator/side-channels/environment-parameters-channel';
import { DimensionProperty, ObservationType } from '../../src/env/behavior-spec';
import { decodePngObservation } from '../../src/env/png-observation';
import { DecisionSteps, TerminalSteps } from '../../src/env/steps';
import { UnityEnvironment, UnityEnvironmentOptions } from '../../src/env/unity-environment';
import {
  DOWN,
  GRIDWORLD,
  GridAgent,
  GridGoal,
  LEFT,
  NO_ACTION,
  PALETTE,
  RIGHT,
  UP,
  shortestPathAction,
} from '../../src/sims/envs/gridworld';
import { Academy, Brain, InfoBatch } from '../../src/sims/sdk/academy';
import { ActionBuffers, ObservationWriter } from '../../src/sims/sdk/agent';
import { EnvironmentParametersReceiver } from '../../src/sims/sdk/engine-channels';
import { SeededRandom } from '../../src/common/random';
import { parseSimArgs } from '../../src/sims/sdk/run-environment';
import { closeOpenedEnvironments, openBuiltEnvironment } from '../helpers/environments';
import { ROOT, tempDir } from '../helpers/paths';

const GRIDWORLD_ENV = path.join(ROOT, 'dist', 'sims', 'envs', 'gridworld.js');
const BEHAVIOR = 'GridWorld';
const WIDTH = 84;
const HEIGHT = 64;
const STEP_PENALTY = Math.fround(-0.01);

type Rgb = readonly [number, number, number];
const COLOR_OF_GOAL: Record<GridGoal, Rgb> = { [GridGoal.GreenPlus]: PALETTE.greenPlus, [GridGoal.RedEx]: PALETTE.redEx };

function launch(args: string[], extra: Partial<UnityEnvironmentOptions> = {}): Promise<UnityEnvironment> {
  return openBuiltEnvironment(GRIDWORLD_ENV, args, { timeoutWait: 20, ...extra });
}

afterEach(closeOpenedEnvironments);

// ---------------------------------------------------------------------------------------------
// The test's own view of the world, written apart from the environment's code

/**
 * The pixel over the point (x + u, z + v) of the grid, (u, v) from the center of cell (x, z): the
 * camera looks straight down, centered on the grid, its view exactly `gridSize` cells high
 * (upstream's orthographic size gridSize / 2); +z is up.
 */
function pixelAt(gridSize: number, x: number, z: number, u = 0, v = 0, width = WIDTH, height = HEIGHT) {
  const pixelsPerCell = Math.min(width, height) / gridSize;
  const middle = (gridSize - 1) / 2;
  return {
    row: Math.floor(height / 2 - (z + v - middle) * pixelsPerCell),
    col: Math.floor(width / 2 + (x + u - middle) * pixelsPerCell),
  };
}

function centerPixel(gridSize: number, x: number, z: number, width = WIDTH, height = HEIGHT) {
  return pixelAt(gridSize, x, z, 0, 0, width, height);
}

/** Where two arrays first differ, -1 if nowhere (jest's deep equality is slow on big typed arrays). */
function firstDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** The 8-bit color of a pixel of a channel-first image. */
function colorAt(image: Float32Array, row: number, col: number, width = WIDTH, height = HEIGHT): number[] {
  const plane = width * height;
  const pixel = row * width + col;
  return [0, 1, 2].map((c) => Math.round(image[c * plane + pixel] * 255));
}

function byKind<T extends { kind: GridGoal; x: number; z: number }>(goals: T[]): T[] {
  return [...goals].sort((a, b) => a.kind - b.kind || a.x - b.x || a.z - b.z);
}

interface Scene {
  gridSize: number;
  agent: { x: number; z: number };
  goals: Array<{ kind: GridGoal; x: number; z: number }>;
  wanted: GridGoal;
}

function sceneOf(agent: GridAgent): Scene {
  return {
    gridSize: agent.area.gridSize,
    agent: { x: agent.area.agentX, z: agent.area.agentZ },
    goals: byKind(agent.area.goals.map((g) => ({ ...g }))),
    wanted: agent.currentGoal,
  };
}

/**
 * Reads the scene back from an image: the agent is a blue ring along its cell's edges (read 0.4
 * left of the center, on the ring), the goals cover their cells' centers; the other centers show
 * the floor, lit or in a shadow (the agent's own, through its ring, always in shadow).
 */
function sceneFromImage(image: Float32Array, gridSize: number, width = WIDTH, height = HEIGHT): Omit<Scene, 'wanted'> {
  let agent: { x: number; z: number } | undefined;
  const goals: Scene['goals'] = [];
  const colorOver = (x: number, z: number, u: number) => {
    const { row, col } = pixelAt(gridSize, x, z, u, 0, width, height);
    return colorAt(image, row, col, width, height).join(',');
  };
  for (let x = 0; x < gridSize; x++) {
    for (let z = 0; z < gridSize; z++) {
      const center = colorOver(x, z, 0);
      if (colorOver(x, z, -0.4) === PALETTE.agent.join(',')) {
        agent = { x, z };
        expect(center).toBe(PALETTE.floorInShadow.join(','));
      } else if (center === PALETTE.greenPlus.join(',')) goals.push({ kind: GridGoal.GreenPlus, x, z });
      else if (center === PALETTE.redEx.join(',')) goals.push({ kind: GridGoal.RedEx, x, z });
      else expect([PALETTE.floor.join(','), PALETTE.floorInShadow.join(',')]).toContain(center);
    }
  }
  if (agent === undefined) throw new Error('no agent in the image');
  return { gridSize, agent, goals: byKind(goals) };
}

/** The moves into walls from (x, z): exactly what upstream's mask forbids. */
function movesIntoWalls(gridSize: number, x: number, z: number): number[] {
  const forbidden: number[] = [];
  if (z === gridSize - 1) forbidden.push(UP);
  if (z === 0) forbidden.push(DOWN);
  if (x === 0) forbidden.push(LEFT);
  if (x === gridSize - 1) forbidden.push(RIGHT);
  return forbidden;
}

/** Breadth-first distances to `target` over the grid, never through `avoid`. */
function distancesTo(gridSize: number, target: { x: number; z: number }, avoid: ReadonlyArray<{ x: number; z: number }>): number[][] {
  const distance = Array.from({ length: gridSize }, () => new Array<number>(gridSize).fill(Infinity));
  distance[target.x][target.z] = 0;
  const queue = [target];
  while (queue.length > 0) {
    const cell = queue.shift()!;
    for (const [dx, dz] of [[0, 1], [0, -1], [-1, 0], [1, 0]]) {
      const x = cell.x + dx;
      const z = cell.z + dz;
      if (x < 0 || z < 0 || x >= gridSize || z >= gridSize || distance[x][z] !== Infinity) continue;
      if (avoid.some((a) => a.x === x && a.z === z)) continue;
      distance[x][z] = distance[cell.x][cell.z] + 1;
      queue.push({ x, z });
    }
  }
  return distance;
}

/** The move toward `target` (avoiding `avoid`) from the agent's cell. */
function moveToward(scene: Scene, target: { x: number; z: number }, avoid: ReadonlyArray<{ x: number; z: number }>): number {
  const distance = distancesTo(scene.gridSize, target, avoid);
  const { x, z } = scene.agent;
  const options: Array<[number, number, number]> = [[UP, x, z + 1], [DOWN, x, z - 1], [LEFT, x - 1, z], [RIGHT, x + 1, z]];
  for (const [action, nx, nz] of options) {
    if (nx >= 0 && nz >= 0 && nx < scene.gridSize && nz < scene.gridSize && distance[nx][nz] === distance[x][z] - 1) return action;
  }
  throw new Error('no way to the target');
}

/** Shortest walk length to the wanted goal around the other one, from geometry alone (one goal each). */
function expectedPathLength(scene: Pick<Scene, 'agent' | 'goals' | 'wanted'>): number {
  const wanted = scene.goals.find((g) => g.kind === scene.wanted)!;
  const other = scene.goals.find((g) => g.kind !== scene.wanted)!;
  const { x, z } = scene.agent;
  const between = (v: number, a: number, b: number) => v > Math.min(a, b) && v < Math.max(a, b);
  const blocked =
    (x === wanted.x && other.x === x && between(other.z, z, wanted.z)) ||
    (z === wanted.z && other.z === z && between(other.x, x, wanted.x));
  return Math.abs(x - wanted.x) + Math.abs(z - wanted.z) + (blocked ? 2 : 0);
}

/** The mean episode reward of a perfect walker over every placement (distinct cells, either goal wanted). */
function expectedMeanReward(gridSize: number): number {
  let sum = 0;
  let count = 0;
  const cells = gridSize * gridSize;
  const at = (n: number) => ({ x: Math.floor(n / gridSize), z: n % gridSize });
  for (let plus = 0; plus < cells; plus++) {
    for (let ex = 0; ex < cells; ex++) {
      for (let agent = 0; agent < cells; agent++) {
        if (plus === ex || plus === agent || ex === agent) continue;
        const goals = [{ kind: GridGoal.GreenPlus, ...at(plus) }, { kind: GridGoal.RedEx, ...at(ex) }];
        for (const wanted of [GridGoal.GreenPlus, GridGoal.RedEx]) {
          sum += 1 - 0.01 * (expectedPathLength({ agent: at(agent), goals, wanted }) - 1);
          count += 1;
        }
      }
    }
  }
  return sum / count;
}

// ---------------------------------------------------------------------------------------------
// The mirror: the same environment in process, fed the same actions

interface BatchCopy {
  ids: number[];
  done: number[];
  reward: number[];
  images: Map<number, Float32Array>;
}

class Mirror {
  readonly academy = new Academy();
  readonly agents: GridAgent[];

  constructor(seed: number, argv: string[] = []) {
    this.academy.seed(seed);
    GRIDWORLD.create(this.academy, parseSimArgs(GRIDWORLD, argv).values, 1);
    this.agents = this.academy.agents as GridAgent[];
    this.academy.reset();
  }

  byId(id: number): GridAgent {
    return this.agents.find((a) => a.id === id)!;
  }

  /** One step with the trainer's actions (its rows' ids and actions); returns what the agents reported before acting. */
  async step(ids: ArrayLike<number>, actions: ArrayLike<number>): Promise<BatchCopy> {
    const actionOf = new Map(Array.from(ids, (id, row) => [id, actions[row]]));
    let copy: BatchCopy | undefined;
    const brain: Brain = {
      decide: async (batches: ReadonlyMap<string, InfoBatch>) => {
        const batch = batches.get(BEHAVIOR)!;
        const size = batch.group.writers[0].values.length;
        copy = {
          ids: Array.from(batch.id.subarray(0, batch.count)),
          done: Array.from(batch.done.subarray(0, batch.count)),
          reward: Array.from(batch.reward.subarray(0, batch.count)),
          images: new Map(),
        };
        for (let row = 0; row < batch.count; row++) {
          if (!batch.done[row]) copy.images.set(batch.id[row], batch.observations[0].slice(row * size, (row + 1) * size));
        }
        const discrete = Int32Array.from(batch.decidingAgents(), (agent) => actionOf.get(agent.id)!);
        return { kind: 'actions', actions: new Map([[BEHAVIOR, { continuous: new Float32Array(0), discrete }]]) };
      },
    };
    await this.academy.step(brain);
    return copy!;
  }
}

function maskRow(decision: DecisionSteps, row: number): number[] {
  const mask = decision.actionMask;
  if (mask === null) return [];
  const forbidden: number[] = [];
  for (let action = 0; action < 5; action++) if (mask[0][row * 5 + action] === 1) forbidden.push(action);
  return forbidden;
}

function terminalRewards(terminal: TerminalSteps): Map<number, number> {
  return new Map(Array.from(terminal.agentId, (id, row) => [id, terminal.reward[row]]));
}

// ---------------------------------------------------------------------------------------------

describe('GridWorld over gRPC', () => {
  it('connects, shows upstream\'s behavior spec, resets, steps and closes', async () => {
    const env = await launch(['--agents', '2'], { seed: 1 });
    expect(env.name).toBe('GridWorld');
    await env.reset();
    const spec = env.behaviorSpecs.get(BEHAVIOR)!;
    expect(spec.observationSpecs).toHaveLength(2);
    expect(spec.observationSpecs[0]).toEqual({
      shape: [3, HEIGHT, WIDTH],
      dimensionProperty: [DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE],
      observationType: ObservationType.DEFAULT,
      name: 'CameraSensor',
    });
    expect(spec.observationSpecs[1]).toMatchObject({ shape: [2], observationType: ObservationType.GOAL_SIGNAL, name: 'VectorSensor' });
    expect(spec.actionSpec.continuousSize).toBe(0);
    expect(spec.actionSpec.discreteBranches).toEqual([5]);

    const [decision, terminal] = env.getSteps(BEHAVIOR);
    const firstImages = decision.obs[0].slice();
    expect(Array.from(decision.agentId)).toEqual([1, 2]);
    expect(terminal.length).toBe(0);
    expect(decision.obs[0].length).toBe(2 * 3 * HEIGHT * WIDTH);
    for (let row = 0; row < 2; row++) {
      const goal = Array.from(decision.observation(1, row));
      expect(goal.slice().sort()).toEqual([0, 1]);
    }

    env.setActions(BEHAVIOR, { discrete: [[NO_ACTION], [NO_ACTION]] });
    await env.step();
    const [after] = env.getSteps(BEHAVIOR);
    expect(Array.from(after.reward)).toEqual([STEP_PENALTY, STEP_PENALTY]);
    // Standing still changes nothing in the picture.
    expect(firstDifference(after.obs[0], firstImages)).toBe(-1);
    await env.close();
  });

  it('sends images that show the agent and goals where the environment put them, and masks that forbid exactly the moves into walls', async () => {
    const seed = 5;
    const env = await launch([], { seed });
    const mirror = new Mirror(seed);
    await env.reset();
    const choose = new SeededRandom(99);
    let cornersSeen = 0;
    let agentsChecked = 0;
    for (let step = 0; step < 60; step++) {
      const [decision, terminal] = env.getSteps(BEHAVIOR);
      expect(decision.length).toBe(9);
      const actions = new Int32Array(decision.length);
      for (let row = 0; row < decision.length; row++) {
        const agent = mirror.byId(decision.agentId[row]);
        expect(agent).toBeDefined();
        const scene = sceneOf(agent);
        const image = decision.observation(0, row);

        // The agent's ring and the goals' colors where the environment put them, floor elsewhere.
        expect(sceneFromImage(image, 5)).toEqual({ gridSize: 5, agent: scene.agent, goals: scene.goals });
        // The east and west walls frame the 84x64 view.
        expect(colorAt(image, HEIGHT / 2, 0)).toEqual([...PALETTE.wall]);
        expect(colorAt(image, HEIGHT / 2, WIDTH - 1)).toEqual([...PALETTE.wall]);
        // The goal signal names the wanted goal.
        const signal = [0, 0];
        signal[scene.wanted] = 1;
        expect(Array.from(decision.observation(1, row))).toEqual(signal);

        const forbidden = maskRow(decision, row);
        expect(forbidden.sort()).toEqual(movesIntoWalls(5, scene.agent.x, scene.agent.z).sort());
        if (forbidden.length === 2) {
          cornersSeen += 1;
          expect([0, 4]).toContain(scene.agent.x);
          expect([0, 4]).toContain(scene.agent.z);
        }
        // A random move among those allowed.
        const allowed = [NO_ACTION, UP, DOWN, LEFT, RIGHT].filter((a) => !forbidden.includes(a));
        actions[row] = allowed[choose.int(allowed.length)];
        agentsChecked += 1;
      }

      // The whole picture is the in-process one, pixel for pixel, after the PNG round trip.
      const seen = await mirror.step(decision.agentId, actions);
      for (let row = 0; row < decision.length; row++) {
        const expected = seen.images.get(decision.agentId[row])!;
        expect(firstDifference(decision.observation(0, row), expected)).toBe(-1);
      }
      // Episodes that ended arrive as terminal steps with the same rewards.
      const mirrorEnded = new Map(seen.ids.flatMap((id, i) => (seen.done[i] ? [[id, seen.reward[i]] as const] : [])));
      expect(terminalRewards(terminal)).toEqual(mirrorEnded);

      env.setActions(BEHAVIOR, { discrete: actions });
      await env.step();
    }
    expect(agentsChecked).toBe(540);
    expect(cornersSeen).toBeGreaterThan(0);
  }, 60000);

  it('with --no-masks forbids nothing, and a move into a wall leaves the agent where it was', async () => {
    const seed = 8;
    const env = await launch(['--no-masks'], { seed });
    const mirror = new Mirror(seed, ['--no-masks']);
    await env.reset();
    let bumps = 0;
    for (let step = 0; step < 6; step++) {
      const [decision] = env.getSteps(BEHAVIOR);
      const before = mirror.agents.map((a) => sceneOf(a));
      for (let row = 0; row < decision.length; row++) expect(maskRow(decision, row)).toEqual([]);
      const actions = new Int32Array(decision.length).fill(LEFT);
      await mirror.step(decision.agentId, actions);
      env.setActions(BEHAVIOR, { discrete: actions });
      await env.step();
      const [next, terminal] = env.getSteps(BEHAVIOR);
      mirror.agents.forEach((agent, i) => {
        if (before[i].agent.x !== 0 || terminal.indexOf(agent.id) !== -1) return;
        bumps += 1;
        expect(sceneOf(agent).agent).toEqual(before[i].agent);
        const row = next.indexOf(agent.id);
        expect(next.reward[row]).toBe(STEP_PENALTY);
        // Trainer side too: the agent is still in the leftmost column.
        expect(sceneFromImage(next.observation(0, row), 5).agent).toEqual(before[i].agent);
      });
    }
    expect(bumps).toBeGreaterThan(0);
  });

  it('pays +1 for the wanted goal and -1 for the other, ending the episode, after -0.01 a step', async () => {
    const seed = 13;
    const env = await launch(['--agents', '2'], { seed });
    const mirror = new Mirror(seed, ['--agents', '2']);
    await env.reset();
    // Agent 1 walks to its wanted goal, agent 2 to the other one, each around the goal it avoids.
    const targetOf = (scene: Scene, index: number) => {
      const wanted = scene.goals.find((g) => g.kind === scene.wanted)!;
      const other = scene.goals.find((g) => g.kind !== scene.wanted)!;
      return index === 0 ? { target: wanted, avoid: [other] } : { target: other, avoid: [wanted] };
    };
    function distanceFor(scene: Scene, index: number): number {
      const { target, avoid } = targetOf(scene, index);
      return distancesTo(scene.gridSize, target, avoid)[scene.agent.x][scene.agent.z];
    }
    type Episode = { rewards: number[]; expectedLength: number };
    const episodes: Episode[][] = [[], []];
    const current: Episode[] = mirror.agents.map((agent, i) => ({ rewards: [], expectedLength: distanceFor(sceneOf(agent), i) }));

    while (episodes[0].length < 4 || episodes[1].length < 4) {
      const [decision, terminal] = env.getSteps(BEHAVIOR);
      const ended = terminalRewards(terminal);
      const actions = new Int32Array(2);
      mirror.agents.forEach((agent, i) => {
        if (ended.has(agent.id)) {
          // The mirror is in step with the trainer: its agent already stands in the next episode.
          current[i].rewards.push(ended.get(agent.id)!);
          episodes[i].push(current[i]);
          current[i] = { rewards: [], expectedLength: distanceFor(sceneOf(agent), i) };
        }
        const row = decision.indexOf(agent.id);
        current[i].rewards.push(decision.reward[row]);
        const scene = sceneOf(agent);
        const { target, avoid } = targetOf(scene, i);
        actions[row] = moveToward(scene, target, avoid);
      });
      await mirror.step(decision.agentId, actions);
      env.setActions(BEHAVIOR, { discrete: actions });
      await env.step();
    }

    for (const [i, finalReward] of [[0, 1], [1, -1]] as const) {
      for (const episode of episodes[i]) {
        // The first decision of an episode carries no reward; then -0.01 a step; the last step's reward is set to +-1.
        const length = episode.expectedLength;
        expect(episode.rewards).toHaveLength(length + 1);
        expect(episode.rewards[0]).toBe(0);
        expect(episode.rewards.slice(1, length)).toEqual(new Array(length - 1).fill(STEP_PENALTY));
        expect(episode.rewards[length]).toBe(finalReward);
        const total = episode.rewards.reduce((a, b) => a + b, 0);
        expect(total).toBeCloseTo(finalReward - 0.01 * (length - 1), 5);
      }
    }
  });

  it('replays the same episodes for the same seed, and others for another seed', async () => {
    /** One digest per step of everything the trainer received. */
    async function run(seed: number): Promise<string[]> {
      const env = await launch(['--agents', '3'], { seed });
      await env.reset();
      const choose = new SeededRandom(4);
      const trace: string[] = [];
      for (let step = 0; step < 40; step++) {
        const [decision, terminal] = env.getSteps(BEHAVIOR);
        const digest = createHash('sha256');
        const arrays = [decision.agentId, decision.reward, ...decision.obs, ...(decision.actionMask ?? []), terminal.agentId, terminal.reward, ...terminal.obs];
        for (const array of arrays) digest.update(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
        trace.push(digest.digest('hex'));
        const actions = Array.from(decision.agentId, () => [choose.int(5)]);
        env.setActions(BEHAVIOR, { discrete: actions });
        await env.step();
      }
      await env.close();
      return trace;
    }
    const first = await run(21);
    expect(await run(21)).toEqual(first);
    const other = await run(22);
    expect(other[0]).not.toBe(first[0]);
  }, 60000);

  it('takes the grid size from the gridSize environment parameter or --grid-size, and the image size from --image-size', async () => {
    const seed = 17;
    const channel = new EnvironmentParametersChannel();
    channel.setFloatParameter('gridSize', 7);
    const fromParameter = await launch(['--agents', '2', '--image-size', '96'], { seed, sideChannels: [channel] });
    const fromOption = await launch(['--agents', '2', '--image-size', '96', '--grid-size', '7'], { seed });
    await fromParameter.reset();
    await fromOption.reset();
    expect(fromParameter.behaviorSpecs.get(BEHAVIOR)!.observationSpecs[0].shape).toEqual([3, 96, 96]);
    const choose = new SeededRandom(2);
    let edgesSeen = 0;
    for (let step = 0; step < 30; step++) {
      const [a] = fromParameter.getSteps(BEHAVIOR);
      const [b] = fromOption.getSteps(BEHAVIOR);
      expect(a.obs.map((obs, i) => firstDifference(obs, b.obs[i]))).toEqual([-1, -1]);
      for (let row = 0; row < a.length; row++) {
        const scene = sceneFromImage(a.observation(0, row), 7, 96, 96);
        expect(scene.goals).toHaveLength(2);
        const expected = movesIntoWalls(7, scene.agent.x, scene.agent.z);
        if (expected.length > 0) edgesSeen += 1;
        expect(maskRow(a, row).sort()).toEqual(expected.sort());
      }
      const actions = Array.from(a.agentId, () => [choose.int(5)]);
      fromParameter.setActions(BEHAVIOR, { discrete: actions });
      fromOption.setActions(BEHAVIOR, { discrete: actions });
      await Promise.all([fromParameter.step(), fromOption.step()]);
    }
    expect(edgesSeen).toBeGreaterThan(0);
  }, 60000);
});

describe('GridWorld\'s heuristic', () => {
  it('walks shortest paths to the wanted goal: the recorded demonstration earns the expected mean reward', () => {
    const folder = tempDir('gridworld-demo');
    const demoPath = path.join(folder, 'heuristic.demo');
    execFileSync(process.execPath, [GRIDWORLD_ENV, '--heuristic', '--steps', '2500', '--seed', '3', '--agents', '1', '--record', demoPath], {
      timeout: 60000,
    });
    const demo = readDemoFile(demoPath);
    expect(demo.brainParameters.brain_name).toBe(BEHAVIOR);

    const episodeRewards: number[] = [];
    let start = 0;
    const records = demo.records;
    for (let i = 0; i < records.length; i++) {
      if (!records[i].agent_info?.done) continue;
      // Records start..i: the episode's decisions, then its terminal step.
      const first = records[start].agent_info!;
      const image = first.observations![0];
      const pixels = decodePngObservation(image.compressed_data!, image.shape!, image.compressed_channel_mapping ?? [], { layout: 'CHW' });
      const signal = first.observations![1].float_data!.data!;
      const scene = { ...sceneFromImage(pixels, 5), wanted: signal[0] === 1 ? GridGoal.GreenPlus : GridGoal.RedEx };
      const length = expectedPathLength(scene);
      const rewards = records.slice(start, i + 1).map((r) => r.agent_info!.reward ?? 0);
      expect(rewards).toHaveLength(length + 1);
      expect(rewards[length]).toBe(1);
      expect(records[i].agent_info!.max_step_reached ?? false).toBe(false);
      episodeRewards.push(rewards.reduce((a, b) => a + b, 0));
      start = i + 1;
    }
    expect(episodeRewards.length).toBeGreaterThan(500);
    const mean = episodeRewards.reduce((a, b) => a + b, 0) / episodeRewards.length;
    const expected = expectedMeanReward(5);
    expect(expected).toBeCloseTo(0.9764, 4);
    expect(Math.abs(mean - expected)).toBeLessThan(0.003);
  }, 60000);

  it('goes around the goal it must avoid and never into a wall', () => {
    const parameters = new EnvironmentParametersReceiver();
    const agent = new GridAgent({ defaultGridSize: 5, imageWidth: WIDTH, imageHeight: HEIGHT, maskActions: true, parameters });
    agent.area.gridSize = 5;
    // The other goal sits between the agent and the wanted one, on the bottom row.
    agent.area.goals = [{ kind: GridGoal.GreenPlus, x: 3, z: 0 }, { kind: GridGoal.RedEx, x: 1, z: 0 }];
    agent.area.agentX = 0;
    agent.area.agentZ = 0;
    agent.currentGoal = GridGoal.GreenPlus;
    const visited: string[] = [];
    for (let step = 0; step < 10 && agent.endRequest === null; step++) {
      const action = shortestPathAction(agent.area, agent.currentGoal);
      const { x, z } = { x: agent.area.agentX, z: agent.area.agentZ };
      expect(movesIntoWalls(5, x, z)).not.toContain(action);
      const out = new ActionBuffers(0, 1);
      out.discrete[0] = action;
      agent.onActionReceived(out);
      agent.takeReward(); // as the Academy does when the agent reports
      visited.push(`${agent.area.agentX},${agent.area.agentZ}`);
    }
    expect(visited).not.toContain('1,0');
    expect(visited).toHaveLength(5); // 3 across plus 2 to go around
    expect(visited[visited.length - 1]).toBe('3,0');
    expect(agent.cumulativeReward).toBeCloseTo(1 - 0.01 * 4, 6);
  });
});

describe('GridWorld in process', () => {
  function agentAt(x: number, z: number, maskActions = true): GridAgent {
    const agent = new GridAgent({
      defaultGridSize: 5,
      imageWidth: WIDTH,
      imageHeight: HEIGHT,
      maskActions,
      parameters: new EnvironmentParametersReceiver(),
    });
    agent.area.gridSize = 5;
    agent.area.goals = [{ kind: GridGoal.GreenPlus, x: 4, z: 4 }, { kind: GridGoal.RedEx, x: 4, z: 3 }];
    agent.area.agentX = x;
    agent.area.agentZ = z;
    return agent;
  }

  it('numbers its actions as upstream: 0 stay, 1 up (+z), 2 down (-z), 3 left (-x), 4 right (+x)', () => {
    const cases: Array<[number, [number, number]]> = [[NO_ACTION, [2, 2]], [UP, [2, 3]], [DOWN, [2, 1]], [LEFT, [1, 2]], [RIGHT, [3, 2]]];
    for (const [action, [x, z]] of cases) {
      const agent = agentAt(2, 2);
      const out = new ActionBuffers(0, 1);
      out.discrete[0] = action;
      agent.onActionReceived(out);
      expect([agent.area.agentX, agent.area.agentZ]).toEqual([x, z]);
      expect(agent.cumulativeReward).toBeCloseTo(-0.01, 6);
    }
  });

  it('draws +z at the top of the image and +x at its right', () => {
    const agent = agentAt(0, 4);
    const image = new Float32Array(3 * WIDTH * HEIGHT);
    agent.collectObservations(0, new ObservationWriter(image));
    // Top-left cell of the grid, right of the west wall (10 columns at 12.8 pixels a cell).
    expect(colorAt(image, 2, 12)).toEqual([...PALETTE.agent]);
    expect(colorAt(image, HEIGHT - 3, WIDTH - 14)).toEqual([...PALETTE.floor]);
    // The "+" at (4, 4) top right, the "x" just below it.
    const plus = centerPixel(5, 4, 4);
    expect(colorAt(image, plus.row, plus.col)).toEqual([...COLOR_OF_GOAL[GridGoal.GreenPlus]]);
    const ex = centerPixel(5, 4, 3);
    expect(colorAt(image, ex.row, ex.col)).toEqual([...COLOR_OF_GOAL[GridGoal.RedEx]]);
    expect(ex.row).toBeGreaterThan(plus.row);
  });

  it('draws the prefabs\' shapes in their materials\' colors, and their shadows toward -x, +z', () => {
    // AgentBlue, Green (its emission makes it a pale lime), Red and GrayMiddle, lit from above.
    expect(PALETTE.agent).toEqual([57, 173, 255]);
    expect(PALETTE.greenPlus).toEqual([247, 255, 157]);
    expect(PALETTE.redEx).toEqual([209, 84, 69]);
    expect(PALETTE.wall).toEqual([122, 124, 128]);
    // The floor where the shadows (strength 0.8) hold back the light's direct share.
    expect(PALETTE.floorInShadow).toEqual([175, 177, 181]);
    const image = new Float32Array(3 * WIDTH * HEIGHT);
    agentAt(1, 1).collectObservations(0, new ObservationWriter(image));
    const colorsAt = (x: number, z: number, points: number[][]) =>
      points.map(([u, v]) => {
        const { row, col } = pixelAt(5, x, z, u, v);
        return colorAt(image, row, col);
      });
    const all = (color: Rgb, count: number) => Array.from({ length: count }, () => [...color]);
    // The agent (1, 1): a ring 0.2 wide along its cell's edges; its middle, the floor, in its shadow,
    // which reaches the next cell up-left (0, 2) and leaves the one down-right (2, 0) lit.
    const ring = [[-0.42, 0], [0.42, 0], [0, -0.42], [0, 0.42], [0.42, 0.42]];
    const hole = [[0, 0], [0.2, 0], [-0.2, 0.2]];
    expect(colorsAt(1, 1, ring)).toEqual(all(PALETTE.agent, ring.length));
    expect(colorsAt(1, 1, hole)).toEqual(all(PALETTE.floorInShadow, hole.length));
    expect(colorsAt(0, 2, [[0, 0]])).toEqual([[...PALETTE.floorInShadow]]);
    expect(colorsAt(2, 0, [[0, 0]])).toEqual([[...PALETTE.floor]]);
    // The "+" (4, 4): two bars 0.2 wide from edge to edge of its cell, shading the floor up-left
    // of its bars, not down-right.
    const plus = [[0, 0], [0.45, 0], [-0.45, 0], [0, 0.45], [0, -0.45], [0.3, 0]];
    expect(colorsAt(4, 4, plus)).toEqual(all(PALETTE.greenPlus, plus.length));
    expect(colorsAt(4, 4, [[0.2, 0.2], [-0.3, 0.3]])).toEqual(all(PALETTE.floorInShadow, 2));
    expect(colorsAt(4, 4, [[0.3, -0.3], [0.45, -0.2]])).toEqual(all(PALETTE.floor, 2));
    // The "x" (4, 3): the same bars turned 45 degrees, their ends short of the cell's corners.
    const ex = [[0, 0], [0.3, 0.3], [-0.3, 0.3], [0.3, -0.3], [-0.3, -0.3]];
    expect(colorsAt(4, 3, ex)).toEqual(all(PALETTE.redEx, ex.length));
    expect(colorsAt(4, 3, [[-0.3, 0], [0, 0.3]])).toEqual(all(PALETTE.floorInShadow, 2));
    expect(colorsAt(4, 3, [[0.45, 0], [0.45, 0.45], [-0.45, -0.45], [0.2, -0.45]])).toEqual(all(PALETTE.floor, 4));
  });

  it('rejects options and parameters it cannot honour, with clear messages', () => {
    const academy = new Academy();
    expect(() => GRIDWORLD.create(academy, parseSimArgs(GRIDWORLD, ['--image-size', 'big']).values, 1)).toThrow(/--image-size/);
    expect(() => GRIDWORLD.create(academy, parseSimArgs(GRIDWORLD, ['--grid-size', '1']).values, 1)).toThrow(/do not fit/);
  });
});
