/**
 * DungeonEscape over the real protocol: the built executable connects as a Unity build does, and
 * the tests play it from what it sends. Its one observation shows the whole room (own position,
 * dragon, key, door, groupmates), so each test reads the world from the wire and walks agents
 * where it wants them.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { readDemoFile } from '../../src/communicator/demo-file';
import { EngineConfigurationChannel } from '../../src/communicator/side-channels/engine-configuration-channel';
import { StatsSideChannel } from '../../src/communicator/side-channels/stats-side-channel';
import { DecisionSteps, TerminalSteps } from '../../src/env/steps';
import { UnityEnvironment, UnityEnvironmentOptions } from '../../src/env/unity-environment';
import { Cell, DOWN, DUNGEON_ESCAPE, ESCAPED_STAT, GROUP_REWARD_STAT, LEFT, RIGHT, STAY, UP } from '../../src/sims/envs/dungeon-escape';
import { Academy } from '../../src/sims/sdk/academy';
import { HeuristicBrain } from '../../src/sims/sdk/brains';
import { parseSimArgs } from '../../src/sims/sdk/run-environment';
import { closeOpenedEnvironments, openBuiltEnvironment } from '../helpers/environments';
import { randomPlayTrace } from '../helpers/mirror';
import { ROOT, tempDir } from '../helpers/paths';

const DUNGEON_ESCAPE_ENV = path.join(ROOT, 'dist', 'sims', 'envs', 'dungeon-escape.js');
const BEHAVIOR = 'DungeonEscape';
const SIZE = 5;
const MAX_STEPS = 50;
/** What a step costs the group, as the trainer receives it (a float32). */
const STEP_PENALTY = Math.fround(-0.5 / MAX_STEPS);

afterEach(closeOpenedEnvironments);

async function launch(args: string[], options: Partial<UnityEnvironmentOptions> = {}): Promise<UnityEnvironment> {
  const env = await openBuiltEnvironment(DUNGEON_ESCAPE_ENV, args, { seed: 3, ...options });
  await env.reset();
  return env;
}

/** One agent's observation, read back into cells. */
interface Seen {
  at: Cell;
  hasKey: boolean;
  dragon: Cell | null;
  key: Cell | null;
  door: Cell;
  /** Each groupmate in the group's order: where it is and whether it holds the key; null once eaten. */
  mates: Array<{ at: Cell; hasKey: boolean } | null>;
}

function read(obs: Float32Array): Seen {
  const scale = SIZE - 1;
  const at = { x: Math.round(((obs[0] + 1) * scale) / 2), y: Math.round(((obs[1] + 1) * scale) / 2) };
  const offset = (i: number): Cell => ({ x: at.x + Math.round(obs[i] * scale), y: at.y + Math.round(obs[i + 1] * scale) });
  const mates: Seen['mates'] = [];
  for (let base = 11; base < obs.length; base += 4) mates.push(obs[base] === 1 ? { at: offset(base + 1), hasKey: obs[base + 3] === 1 } : null);
  return {
    at,
    hasKey: obs[2] === 1,
    dragon: obs[3] === 1 ? offset(4) : null,
    key: obs[6] === 1 ? offset(7) : null,
    door: offset(9),
    mates,
  };
}

/** A decision step's agents, by id, as they see the room. */
function seenById(decision: DecisionSteps): Map<number, Seen> {
  return new Map(Array.from(decision.agentId, (id, row) => [id, read(decision.observation(0, row))]));
}

/** The group rewards of `steps` steps summed as the environment sums them (in float64), plus `bonus` at the end. */
function groupTotal(steps: number, penalty: number, bonus = 0): number {
  let total = 0;
  for (let i = 0; i < steps; i++) total += penalty;
  return total + bonus;
}

/** One step: the agents named move as `moves` says, the others stay. */
async function step(env: UnityEnvironment, moves: ReadonlyMap<number, number> = new Map()): Promise<[DecisionSteps, TerminalSteps]> {
  const [decision] = env.getSteps(BEHAVIOR);
  env.setActions(BEHAVIOR, { discrete: Array.from(decision.agentId, (id) => [moves.get(id) ?? STAY]) });
  await env.step();
  return env.getSteps(BEHAVIOR);
}

/** The first move of a shortest walk from `from` to `to` around the cells in `avoid`. */
function moveToward(from: Cell, to: Cell, avoid: readonly Cell[]): number {
  const blocked = (c: Cell) => avoid.some((a) => a.x === c.x && a.y === c.y);
  const moves: Array<[number, number, number]> = [[RIGHT, 1, 0], [LEFT, -1, 0], [UP, 0, 1], [DOWN, 0, -1]];
  const key = (c: Cell) => c.y * SIZE + c.x;
  const firstMove = new Map<number, number>([[key(from), STAY]]);
  const queue: Cell[] = [from];
  for (let head = 0; head < queue.length; head++) {
    const cell = queue[head];
    if (cell.x === to.x && cell.y === to.y) return firstMove.get(key(cell))!;
    for (const [move, dx, dy] of moves) {
      const next = { x: cell.x + dx, y: cell.y + dy };
      if (next.x < 0 || next.y < 0 || next.x >= SIZE || next.y >= SIZE || firstMove.has(key(next))) continue;
      if (blocked(next) && !(next.x === to.x && next.y === to.y)) continue;
      firstMove.set(key(next), cell === from ? move : firstMove.get(key(cell))!);
      queue.push(next);
    }
  }
  throw new Error(`no way from ${JSON.stringify(from)} to ${JSON.stringify(to)}`);
}

/**
 * Walks agent `id` to the cell `target` picks from what it sees, the others staying, around the
 * cells `avoid` picks; stops at the step where it arrives (or its episode ends), and returns every
 * step taken.
 */
async function walk(
  env: UnityEnvironment,
  id: number,
  target: (seen: Seen) => Cell,
  avoid: (seen: Seen) => Cell[] = () => [],
): Promise<Array<[DecisionSteps, TerminalSteps]>> {
  const taken: Array<[DecisionSteps, TerminalSteps]> = [];
  for (let i = 0; i < 2 * SIZE; i++) {
    const seen = seenById(env.getSteps(BEHAVIOR)[0]).get(id)!;
    const goal = target(seen);
    if (seen.at.x === goal.x && seen.at.y === goal.y) return taken;
    const result = await step(env, new Map([[id, moveToward(seen.at, goal, avoid(seen))]]));
    taken.push(result);
    if (result[1].agentId.includes(id)) return taken;
  }
  throw new Error(`agent ${id} did not reach its target`);
}

function rewardsOf(steps: DecisionSteps | TerminalSteps): { own: number[]; group: number[] } {
  return { own: Array.from(steps.reward), group: Array.from(steps.groupReward) };
}

describe('DungeonEscape over gRPC', () => {
  it('announces one vector of 19 and one branch of 5; 8 rooms of a group of 3, each room drawn whole', async () => {
    const env = await launch([]);
    const spec = env.behaviorSpecs.get(BEHAVIOR)!;
    expect(spec.observationSpecs.map((o) => [o.name, o.shape])).toEqual([['VectorSensor_size19', [19]]]);
    expect(spec.actionSpec.discreteBranches).toEqual([5]);
    expect(spec.actionSpec.continuousSize).toBe(0);

    const [decision, terminal] = env.getSteps(BEHAVIOR);
    expect(terminal.length).toBe(0);
    expect(decision.length).toBe(24);
    const groups = new Map<number, number[]>();
    decision.groupId.forEach((group, row) => groups.set(group, [...(groups.get(group) ?? []), decision.agentId[row]]));
    expect([...groups.keys()].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const seen = seenById(decision);
    const middles = [{ x: 2, y: 4 }, { x: 4, y: 2 }, { x: 2, y: 0 }, { x: 0, y: 2 }];
    for (const members of groups.values()) {
      expect(members).toHaveLength(3);
      const views = members.map((id) => seen.get(id)!);
      // Everyone agrees on where the door and the dragon are; the door in the middle of a side.
      expect(new Set(views.map((v) => JSON.stringify([v.door, v.dragon]))).size).toBe(1);
      expect(middles).toContainEqual(views[0].door);
      // The members, the dragon and the door on distinct cells; no key yet, nobody holds one.
      const cells = [...views.map((v) => v.at), views[0].dragon!, views[0].door].map((c) => `${c.x},${c.y}`);
      expect(new Set(cells).size).toBe(5);
      expect(views.every((v) => v.key === null && !v.hasKey)).toBe(true);
      // Each member sees its groupmates, in the group's order, where they see themselves.
      views.forEach((view, i) => {
        const others = views.filter((_, j) => j !== i);
        expect(view.mates).toEqual(others.map((o) => ({ at: o.at, hasKey: false })));
      });
    }
  });

  it('opens the door only after one member is eaten and another carries the key there: +1 to those left, their episodes end', async () => {
    const stats = new StatsSideChannel();
    const env = await launch(['--areas', '1'], { sideChannels: [stats] });
    const [first] = env.getSteps(BEHAVIOR);
    const [a, b, c] = Array.from(first.agentId);

    // Staying costs the group the time penalty; nobody earns anything of its own.
    const [still] = await step(env);
    expect(rewardsOf(still)).toEqual({ own: [0, 0, 0], group: [STEP_PENALTY, STEP_PENALTY, STEP_PENALTY] });

    // B stands on the door without a key: nothing happens.
    const toTheDoor = await walk(env, b, (s) => s.door, (s) => [s.dragon!]);
    for (const [decision, terminal] of toTheDoor) {
      expect(terminal.length).toBe(0);
      expect(rewardsOf(decision).group).toEqual([STEP_PENALTY, STEP_PENALTY, STEP_PENALTY]);
    }
    expect(seenById(env.getSteps(BEHAVIOR)[0]).get(b)!.at).toEqual(seenById(env.getSteps(BEHAVIOR)[0]).get(b)!.door);
    await step(env);
    expect(env.getSteps(BEHAVIOR)[1].length).toBe(0);

    // A walks into the dragon: its episode ends (a true end), the others go on without it.
    const dragon = seenById(env.getSteps(BEHAVIOR)[0]).get(a)!.dragon!;
    const eaten = await walk(env, a, (s) => s.dragon!);
    const [afterMeal, lastOfA] = eaten[eaten.length - 1];
    expect(Array.from(lastOfA.agentId)).toEqual([a]);
    expect(lastOfA.interrupted[0]).toBe(0);
    expect(rewardsOf(lastOfA)).toEqual({ own: [0], group: [STEP_PENALTY] });
    expect(Array.from(afterMeal.agentId)).toEqual([b, c]);
    // The dragon is gone and its key lies where it stood; A's slot is empty for the others.
    for (const [id, view] of seenById(afterMeal)) {
      expect(view.dragon).toBeNull();
      expect(view.key).toEqual(dragon);
      expect(view.mates[0]).toBeNull();
      expect(view.mates[1]).toEqual({ at: seenById(afterMeal).get(id === b ? c : b)!.at, hasKey: false });
    }

    // B fetches the key; A stays out of the game while the group plays on.
    const fetched = await walk(env, b, (s) => s.key ?? s.at);
    for (const [decision, terminal] of fetched) {
      expect(Array.from(decision.agentId)).toEqual([b, c]);
      expect(terminal.length).toBe(0);
    }
    const carrying = seenById(env.getSteps(BEHAVIOR)[0]);
    expect(carrying.get(b)!.hasKey).toBe(true);
    expect(carrying.get(b)!.key).toBeNull();
    expect(carrying.get(c)!.mates[1]!.hasKey).toBe(true);

    // B carries it to the door: the step's group reward is +1 less its cost, to B and C alone.
    stats.getAndResetStats();
    const opened = await walk(env, b, (s) => s.door);
    const [next, ended] = opened[opened.length - 1];
    expect(Array.from(ended.agentId)).toEqual([b, c]);
    expect(Array.from(ended.interrupted)).toEqual([0, 0]);
    expect(rewardsOf(ended)).toEqual({ own: [0, 0], group: [Math.fround(1 + STEP_PENALTY), Math.fround(1 + STEP_PENALTY)] });
    // Both last steps show the room as the game ended: B with the key on the door, as C sees it too.
    const [lastOfB, lastOfC] = [read(ended.observation(0, 0)), read(ended.observation(0, 1))];
    expect(lastOfB.at).toEqual(lastOfB.door);
    expect(lastOfB.hasKey).toBe(true);
    expect(lastOfC.mates).toEqual([null, { at: lastOfB.door, hasKey: true }]);
    expect([lastOfC.dragon, lastOfC.key]).toEqual([null, null]);
    // The whole group, A included, starts again under the same ids in a fresh room, owed nothing.
    expect(Array.from(next.agentId).sort()).toEqual([a, b, c].sort());
    expect(rewardsOf(next)).toEqual({ own: [0, 0, 0], group: [0, 0, 0] });
    const fresh = seenById(next);
    expect([...fresh.values()].every((v) => v.dragon !== null && v.key === null && !v.hasKey && v.mates.every((m) => m !== null))).toBe(true);
    // The environment's own record of the group episode.
    const recorded = stats.getAndResetStats();
    expect(recorded.get(ESCAPED_STAT)).toEqual([[1, 0]]);
    const steps = 1 + toTheDoor.length + 1 + eaten.length + fetched.length + opened.length;
    expect(recorded.get(GROUP_REWARD_STAT)).toEqual([[Math.fround(groupTotal(steps, -0.5 / MAX_STEPS, 1)), 0]]);
  }, 30000);

  it('interrupts the group after MaxEnvironmentSteps, the eaten member not among them', async () => {
    const stats = new StatsSideChannel();
    const env = await launch(['--areas', '1', '--max-environment-steps', '12'], { sideChannels: [stats] });
    const penalty = Math.fround(-0.5 / 12);
    const [first] = env.getSteps(BEHAVIOR);
    const [a, b, c] = Array.from(first.agentId);
    const eaten = await walk(env, a, (s) => s.dragon!);
    let steps = eaten.length;
    let terminal = eaten[eaten.length - 1][1];
    expect(Array.from(terminal.agentId)).toEqual([a]);
    while (steps < 12) {
      [, terminal] = await step(env);
      steps += 1;
      if (steps < 12) expect(terminal.length).toBe(0);
    }
    expect(Array.from(terminal.agentId)).toEqual([b, c]);
    expect(Array.from(terminal.interrupted)).toEqual([1, 1]);
    expect(Array.from(terminal.groupReward)).toEqual([penalty, penalty]);
    // The eaten member earned nothing while out of the game: its next episode starts owed nothing.
    const [next] = env.getSteps(BEHAVIOR);
    expect(Array.from(next.agentId)).toEqual([a, b, c]);
    expect(Array.from(next.groupReward)).toEqual([0, 0, 0]);
    const recorded = stats.getAndResetStats();
    expect(recorded.get(ESCAPED_STAT)).toEqual([[0, 0]]);
    expect(recorded.get(GROUP_REWARD_STAT)).toEqual([[Math.fround(groupTotal(12, -0.5 / 12)), 0]]);
  }, 30000);

  it('replays the same rooms for a seed and others for another seed', async () => {
    async function run(seed: number): Promise<string[]> {
      const env = await launch(['--areas', '2'], { seed });
      return randomPlayTrace(env, BEHAVIOR, 120, 5);
    }
    const first = await run(5);
    expect(await run(5)).toEqual(first);
    expect((await run(6))[0]).not.toBe(first[0]);
  }, 60000);

  it('honors the time scale the trainer sets: at 1, a step lasts a fixed step of real time', async () => {
    const engineConfiguration = new EngineConfigurationChannel();
    engineConfiguration.setConfigurationParameters({ timeScale: 1 });
    const env = await launch(['--areas', '1'], { sideChannels: [engineConfiguration] });
    const started = Date.now();
    for (let i = 0; i < 25; i++) await step(env);
    // 25 steps of Unity's fixed 0.02 s at time scale 1 take at least half a second (a lower bound).
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
  });

  it('refuses a room too small or a group of one, naming the option', () => {
    for (const [args, message] of [
      [['--size', '2'], '--size needs an integer of at least 3'],
      [['--group-size', '1'], '--group-size needs an integer of at least 2'],
      [['--size', '3', '--group-size', '8'], '--group-size 8 does not fit a room of 3 by 3'],
    ] as const) {
      expect(() => DUNGEON_ESCAPE.create(new Academy(), parseSimArgs(DUNGEON_ESCAPE, [...args]).values, 1)).toThrow(message);
    }
  });
});

describe('DungeonEscape under its heuristic', () => {
  it('escapes every group episode, well before the step limit', async () => {
    const academy = new Academy();
    academy.seed(9);
    const recorded: Array<[string, number]> = [];
    jest.spyOn(academy.stats, 'add').mockImplementation((key, value) => void recorded.push([key, value]));
    DUNGEON_ESCAPE.create(academy, parseSimArgs(DUNGEON_ESCAPE, []).values, 1);
    academy.reset();
    const brain = new HeuristicBrain();
    for (let i = 0; i < 500; i++) await academy.step(brain);
    const escaped = recorded.filter(([key]) => key === ESCAPED_STAT).map(([, v]) => v);
    const rewards = recorded.filter(([key]) => key === GROUP_REWARD_STAT).map(([, v]) => v);
    // 8 rooms over 500 steps: every episode escapes, at least 0.7 left of the +1 (at most 30 steps).
    expect(escaped.length).toBeGreaterThan(8 * 500 / 30);
    expect(escaped.every((v) => v === 1)).toBe(true);
    expect(Math.min(...rewards)).toBeGreaterThanOrEqual(0.7);
  });

  it('records its first agent to a .demo: every one of its episodes ends by the dragon or the door, none at the limit', () => {
    const dir = tempDir('dungeon-escape-demo');
    const file = path.join(dir, 'escape.demo');
    const run = spawnSync(DUNGEON_ESCAPE_ENV, ['--heuristic', '--steps', '300', '--areas', '1', '--record', file], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    const demo = readDemoFile(file);
    expect(demo.brainParameters.brain_name).toBe(BEHAVIOR);
    const ends = demo.records.filter((r) => r.agent_info?.done);
    expect(ends.length).toBeGreaterThan(5);
    expect(ends.every((r) => r.agent_info?.max_step_reached !== true)).toBe(true);
    // Its episodes that ended at the door paid the group's +1 less the step's cost.
    const atTheDoor = ends.filter((r) => (r.agent_info?.group_reward ?? 0) > 0);
    expect(atTheDoor.length).toBeGreaterThan(0);
    expect(atTheDoor.every((r) => Math.abs(r.agent_info!.group_reward! - (1 + STEP_PENALTY)) < 1e-6)).toBe(true);
    fs.rmSync(dir, { recursive: true });
  });
});
