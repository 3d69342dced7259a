/**
 * Sorter, end to end: the built executable connects over real gRPC as a Unity build does. The test
 * reads the world only through what the trainer receives (the tiles as entities, the agent's own
 * observations) and steers with a controller of its own, written apart from the environment's
 * heuristic.
 */
import { execFileSync } from 'child_process';
import * as path from 'path';
import { SeededRandom } from '../../src/common/random';
import { readDemoFile } from '../../src/communicator/demo-file';
import { EnvironmentParametersChannel } from '../../src/communicator/side-channels/environment-parameters-channel';
import { SideChannelManager } from '../../src/communicator/side-channels/side-channel-manager';
import { DimensionProperty } from '../../src/env/behavior-spec';
import { DecisionSteps, TerminalSteps } from '../../src/env/steps';
import { UnityEnvironment, UnityEnvironmentOptions } from '../../src/env/unity-environment';
import { SORTER } from '../../src/sims/envs/sorter';
import { Academy } from '../../src/sims/sdk/academy';
import { closeOpenedEnvironments, openBuiltEnvironment } from '../helpers/environments';
import { ROOT, tempDir } from '../helpers/paths';

const SORTER_ENV = path.join(ROOT, 'dist', 'sims', 'envs', 'sorter.js');
const BEHAVIOR = 'Sorter';
const MAX_ENTITIES = 20;
const ENTITY = 23;
/** What one decision's five steps cost, as the trainer receives it (a float32). */
const DECISION_PENALTY = Math.fround(-5 / 5000);
const STEP_PENALTY = 1 / 5000;

function launch(options: Partial<UnityEnvironmentOptions> = {}, args: string[] = []): Promise<UnityEnvironment> {
  return openBuiltEnvironment(SORTER_ENV, args, { timeoutWait: 20, ...options });
}

/** An environment whose num_tiles the trainer's side channel sets, as a curriculum lesson does. */
async function launchWithTiles(numTiles: number, seed: number): Promise<{ env: UnityEnvironment; parameters: EnvironmentParametersChannel }> {
  const parameters = new EnvironmentParametersChannel();
  parameters.setFloatParameter('num_tiles', numTiles);
  const env = await launch({ seed, sideChannels: [parameters] });
  await env.reset();
  return { env, parameters };
}

afterEach(closeOpenedEnvironments);

// ---------------------------------------------------------------------------------------------
// The test's reading of the observations, written apart from the environment's code

interface SeenTile {
  /** 1 to 20; the 20's mark is overwritten by its x offset, so a tile without a mark is the 20. */
  value: number;
  /** Offset of the tile's center from the agent, in meters. */
  dx: number;
  dz: number;
  visited: boolean;
}

/** The entities present in one agent's BufferSensor observation; the rest must be all zero. */
function tilesOf(buffer: Float32Array): SeenTile[] {
  const tiles: SeenTile[] = [];
  for (let row = 0; row < MAX_ENTITIES; row++) {
    const entity = buffer.subarray(row * ENTITY, (row + 1) * ENTITY);
    if (entity.every((v) => v === 0)) continue;
    const mark = Array.from(entity.subarray(0, 20)).indexOf(1);
    tiles.push({ value: mark === -1 ? 20 : mark, dx: entity[20] * 20, dz: entity[21] * 20, visited: entity[22] === 1 });
  }
  return tiles;
}

/** The agent's newest frame of its stacked vector observation: position and facing. */
function poseOf(vector: Float32Array): { x: number; z: number; yaw: number } {
  const [x, z, fx, fz] = vector.subarray(4, 8);
  return { x: x * 20, z: z * 20, yaw: (Math.atan2(fx, fz) * 180) / Math.PI };
}

/**
 * A controller that heads for the tile `pick` chooses: to a point 12 m out from the center in the
 * tile's direction, then straight out to it (a straight chord between tiles on the rim can brush
 * a neighbor). Branches: [forward axis, right axis, rotation]; rotation 2 turns clockwise.
 */
class Walker {
  private approachedValue = -1;

  constructor(private readonly pick: (unvisited: SeenTile[]) => SeenTile) {}

  act(observations: Float32Array[]): number[] {
    const tiles = tilesOf(observations[0]);
    const pose = poseOf(observations[2]);
    const target = this.pick(tiles.filter((t) => !t.visited));
    const tx = pose.x + target.dx;
    const tz = pose.z + target.dz;
    const approach = { x: (tx * 12) / 20.5, z: (tz * 12) / 20.5 };
    if (Math.hypot(approach.x - pose.x, approach.z - pose.z) < 2) this.approachedValue = target.value;
    const aim = this.approachedValue === target.value ? { x: tx, z: tz } : approach;
    const wanted = (Math.atan2(aim.x - pose.x, aim.z - pose.z) * 180) / Math.PI;
    const error = ((wanted - pose.yaw + 540) % 360) - 180;
    const velocity = observations[1];
    const speed = Math.hypot(velocity[7], velocity[9]);
    // A decision turns 20 degrees: a band a little wider than +-10 keeps it from turning back and forth.
    if (error > 11) return [0, 0, 2];
    if (error < -11) return [0, 0, 1];
    return [speed < 8 ? 1 : 0, 0, 0];
  }

  newEpisode(): void {
    this.approachedValue = -1;
  }
}

/** What one episode of the single agent looked like to the trainer. */
interface Episode {
  tilesAtStart: SeenTile[];
  rewards: number[];
  terminalReward: number;
  interrupted: boolean;
  tilesAtEnd: SeenTile[];
}

function observationsOf(steps: DecisionSteps | TerminalSteps, row: number): Float32Array[] {
  return [0, 1, 2].map((i) => steps.observation(i, row));
}

/** Plays `count` episodes of the area's one agent under `walker`. */
async function playEpisodes(env: UnityEnvironment, walker: Walker, count: number): Promise<Episode[]> {
  const episodes: Episode[] = [];
  let [decision] = env.getSteps(BEHAVIOR);
  let current: Episode = { tilesAtStart: tilesOf(decision.observation(0, 0)), rewards: [], terminalReward: 0, interrupted: false, tilesAtEnd: [] };
  while (episodes.length < count) {
    // An episode can end between decisions: then the message holds its terminal step alone.
    if (decision.length > 0) env.setActions(BEHAVIOR, { discrete: [walker.act(observationsOf(decision, 0))] });
    await env.step();
    const [next, terminal] = env.getSteps(BEHAVIOR);
    if (terminal.length > 0) {
      current.terminalReward = terminal.reward[0];
      current.interrupted = terminal.interrupted[0] === 1;
      current.tilesAtEnd = tilesOf(terminal.observation(0, 0));
      episodes.push(current);
      walker.newEpisode();
      current = { tilesAtStart: [], rewards: [], terminalReward: 0, interrupted: false, tilesAtEnd: [] };
    } else if (next.length > 0) {
      current.rewards.push(next.reward[0]);
    }
    if (next.length > 0 && current.tilesAtStart.length === 0) current.tilesAtStart = tilesOf(next.observation(0, 0));
    decision = next;
  }
  return episodes;
}

/** A decision's reward when nothing was touched: the penalty of its five steps, or of fewer. */
function isPenalty(reward: number): boolean {
  return reward < 0 && reward >= DECISION_PENALTY;
}

const lowest = (unvisited: SeenTile[]) => unvisited.reduce((a, b) => (b.value < a.value ? b : a));
const highest = (unvisited: SeenTile[]) => unvisited.reduce((a, b) => (b.value > a.value ? b : a));

// ---------------------------------------------------------------------------------------------

describe('Sorter over gRPC', () => {
  it("shows upstream's behavior spec: the tiles as a BufferSensor [20, 23] of variable size, RBSensor (10), stacked position and facing (8), three branches of 3", async () => {
    const env = await launch({ seed: 1 });
    expect(env.name).toBe('Sorter');
    await env.reset();
    const spec = env.behaviorSpecs.get(BEHAVIOR)!;
    expect(spec.observationSpecs.map((o) => [o.name, o.shape, o.dimensionProperty])).toEqual([
      ['BufferSensor', [20, 23], [DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE]],
      ['RBSensor', [10], [DimensionProperty.NONE]],
      ['StackingSensor_size2_VectorSensor_size4', [8], [DimensionProperty.NONE]],
    ]);
    expect(spec.actionSpec.continuousSize).toBe(0);
    expect(spec.actionSpec.discreteBranches).toEqual([3, 3, 3]);
    // The scene's one area.
    expect(env.getSteps(BEHAVIOR)[0].length).toBe(1);
  });

  it('has --agents per area, times the areas the trainer asks for', async () => {
    const env = await launch({ numAreas: 3 }, ['--agents', '2']);
    await env.reset();
    expect(env.getSteps(BEHAVIOR)[0].length).toBe(6);
  });

  it('lays out each tile as an entity (its number marked, its offset over 20, not visited), ascending, padded with zeros; the agent at the center facing -z', async () => {
    const { env } = await launchWithTiles(20, 4);
    const seenCounts = new Set<number>();
    for (let episode = 0; episode < 6; episode++) {
      const [decision] = env.getSteps(BEHAVIOR);
      const buffer = decision.observation(0, 0);
      const tiles = tilesOf(buffer);
      seenCounts.add(tiles.length);
      expect(tiles.length).toBeGreaterThanOrEqual(1);
      // Entities first, then all-zero rows: none present after the first absent one.
      expect(Array.from(buffer.subarray(tiles.length * ENTITY)).every((v) => v === 0)).toBe(true);
      const values = tiles.map((t) => t.value);
      expect(values).toEqual([...values].sort((a, b) => a - b));
      expect(new Set(values).size).toBe(values.length);
      for (let row = 0; row < tiles.length; row++) {
        const entity = buffer.subarray(row * ENTITY, (row + 1) * ENTITY);
        // Exactly one mark among indices 1..19, none at 0; the 20 has none.
        const marks = Array.from(entity.subarray(0, 20)).filter((v) => v !== 0);
        expect(marks).toEqual(tiles[row].value === 20 ? [] : [1]);
        expect(entity[0]).toBe(0);
        expect(tiles[row].visited).toBe(false);
      }
      // From the center, every tile lies 20.5 away, in one of 20 slots 18 degrees apart, no two alike.
      const slots = tiles.map((t) => {
        expect(Math.hypot(t.dx, t.dz)).toBeCloseTo(20.5, 4);
        const degrees = ((Math.atan2(t.dx, t.dz) * 180) / Math.PI + 360) % 360;
        const slot = Math.round(degrees / 18) % 20;
        expect(Math.abs(degrees - slot * 18) % 360).toBeLessThan(1e-3);
        return slot;
      });
      expect(new Set(slots).size).toBe(slots.length);
      // The body sensor: itself as its own root, at rest.
      expect(Array.from(decision.observation(1, 0), (v) => v + 0)).toEqual([0, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
      // Position and facing, 2 deep: at an episode's first decision only the newest frame is filled.
      const vector = Array.from(decision.observation(2, 0));
      if (episode === 0) {
        expect(vector.slice(0, 4)).toEqual([0, 0, 0, 0]);
        expect(vector[4]).toBe(0);
        expect(vector[5]).toBe(0);
        expect(vector[6]).toBeCloseTo(0, 6);
        expect(vector[7]).toBeCloseTo(-1, 6);
      }
      await env.reset();
    }
    expect(Math.max(...seenCounts)).toBeGreaterThan(2);
  }, 60000);

  it('gives -1/MaxStep a step, +1 for each tile visited in ascending order, and ends when all are visited', async () => {
    const { env } = await launchWithTiles(4, 7);
    const episodes = await playEpisodes(env, new Walker(lowest), 8);
    let visits = 0;
    for (const episode of episodes) {
      const count = episode.tilesAtStart.length;
      expect(episode.interrupted).toBe(false);
      // Every decision between costs its steps' penalty (five, or fewer at an episode's first, which
      // began between decisions), or brings a tile's +1 beside it.
      const bonuses = episode.rewards.filter((r) => r > 0);
      expect(bonuses).toHaveLength(count - 1);
      expect(episode.rewards.filter((r) => r <= 0).every(isPenalty)).toBe(true);
      for (const reward of bonuses) {
        expect(reward).toBeGreaterThan(1 - 5 * STEP_PENALTY - 1e-6);
        expect(reward).toBeLessThan(1);
      }
      // The last tile's +1 comes with the terminal step, whose observation shows every tile visited.
      expect(episode.terminalReward).toBeGreaterThan(1 - 5 * STEP_PENALTY - 1e-6);
      expect(episode.terminalReward).toBeLessThan(1);
      expect(episode.tilesAtEnd.map((t) => t.value)).toEqual(episode.tilesAtStart.map((t) => t.value));
      expect(episode.tilesAtEnd.every((t) => t.visited)).toBe(true);
      visits += count;
    }
    expect(visits).toBeGreaterThan(episodes.length);
  }, 120000);

  it('gives -1 and ends the episode when a tile is touched out of order', async () => {
    const { env } = await launchWithTiles(3, 11);
    const episodes = await playEpisodes(env, new Walker(highest), 8);
    const outOfOrder = episodes.filter((e) => e.tilesAtStart.length > 1);
    expect(outOfOrder.length).toBeGreaterThanOrEqual(2);
    for (const episode of episodes) {
      expect(episode.interrupted).toBe(false);
      expect(episode.rewards.every(isPenalty)).toBe(true);
      if (episode.tilesAtStart.length === 1) {
        expect(episode.terminalReward).toBeGreaterThan(1 - 5 * STEP_PENALTY - 1e-6);
        continue;
      }
      expect(episode.terminalReward).toBeLessThan(-1);
      expect(episode.terminalReward).toBeGreaterThan(-1 - 5 * STEP_PENALTY - 1e-6);
      expect(episode.tilesAtEnd.some((t) => t.visited)).toBe(false);
    }
  }, 120000);

  it('shows as many tiles as the curriculum allows: num_tiles 1, then 20 after a reset', async () => {
    const { env, parameters } = await launchWithTiles(1, 3);
    const counts: number[] = [];
    for (let i = 0; i < 8; i++) {
      counts.push(tilesOf(env.getSteps(BEHAVIOR)[0].observation(0, 0)).length);
      await env.reset();
    }
    expect(counts.every((c) => c === 1)).toBe(true);
    // A new lesson's value reaches the environment with the next reset, as the trainer sends it.
    parameters.setFloatParameter('num_tiles', 20);
    const later: number[] = [];
    for (let i = 0; i < 12; i++) {
      await env.reset();
      later.push(tilesOf(env.getSteps(BEHAVIOR)[0].observation(0, 0)).length);
    }
    expect(Math.max(...later)).toBeGreaterThan(4);
    expect(later.every((c) => c >= 1 && c <= 20)).toBe(true);
  }, 60000);

  it('plays the same world under the same seed and the same actions, another under another seed', async () => {
    async function trace(seed: number): Promise<number[]> {
      const { env } = await launchWithTiles(8, seed);
      const random = new SeededRandom(42);
      const out: number[] = [];
      for (let i = 0; i < 150; i++) {
        const [decision, terminal] = env.getSteps(BEHAVIOR);
        for (const steps of [terminal, decision]) {
          for (let row = 0; row < steps.length; row++) out.push(steps.reward[row], ...observationsOf(steps, row).flatMap((o) => Array.from(o)));
        }
        if (decision.length > 0) env.setActions(BEHAVIOR, { discrete: [[random.int(3), random.int(3), random.int(3)]] });
        await env.step();
      }
      return out;
    }
    const first = await trace(5);
    expect(await trace(5)).toEqual(first);
    expect(await trace(6)).not.toEqual(first);
  }, 60000);
});

describe('Sorter in process', () => {
  it('refuses a num_tiles outside 1..20, naming the parameter and the fix', () => {
    const trainer = new EnvironmentParametersChannel();
    trainer.setFloatParameter('num_tiles', 25);
    const academy = new Academy();
    new SideChannelManager([academy.environmentParameters]).processSideChannelMessage(new SideChannelManager([trainer]).generateSideChannelMessages());
    SORTER.create(academy, { agents: '1' }, 1);
    expect(() => academy.reset()).toThrow(/num_tiles is 25: Sorter shows from 1 to 20 tiles\. Set environment_parameters\.num_tiles/);
  });
});

describe('Sorter under its heuristic', () => {
  it('visits every tile in order, episode after episode, and records it as a demonstration', () => {
    const demoPath = path.join(tempDir('sorter-demo-'), 'sorter.demo');
    execFileSync(process.execPath, [SORTER_ENV, '--heuristic', '--steps', '6000', '--seed', '3', '--record', demoPath], { timeout: 60000 });
    const demo = readDemoFile(demoPath);
    expect(demo.brainParameters.brain_name).toBe(BEHAVIOR);
    expect(demo.brainParameters.action_spec?.discrete_branch_sizes).toEqual([3, 3, 3]);
    const ends = demo.records.filter((r) => r.agent_info?.done);
    expect(ends.length).toBeGreaterThanOrEqual(4);
    for (const end of ends) {
      // The last tile's +1, less the penalty of the steps of that decision; never a wrong tile's -1.
      expect(end.agent_info!.reward).toBeGreaterThan(1 - 5 * STEP_PENALTY - 1e-6);
      expect(end.agent_info!.max_step_reached ?? false).toBe(false);
    }
    expect(demo.records.every((r) => (r.agent_info?.reward ?? 0) > -0.5)).toBe(true);
  }, 60000);
});
