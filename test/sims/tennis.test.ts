/**
 * Tennis over the real protocol: the built executable connects as a Unity build does, with its
 * two teams as two behaviors, and the tests play it from what it sends. Each court adds its
 * team-0 agent, then its team-1 agent, so a court's agents have ids k and k + 1. The rules of a
 * point that need the ball in a given place are also tested on a court in process, its state set
 * by hand; the heuristic is played against the random player in process too.
 */
import { createHash } from 'crypto';
import * as path from 'path';
import { SeededRandom } from '../../src/common/random';
import { EngineConfigurationChannel } from '../../src/communicator/side-channels/engine-configuration-channel';
import { DecisionSteps, TerminalSteps } from '../../src/env/steps';
import { UnityEnvironment, UnityEnvironmentOptions } from '../../src/env/unity-environment';
import { Academy } from '../../src/sims/sdk/academy';
import { parseSimArgs } from '../../src/sims/sdk/run-environment';
import {
  COURT_LENGTH,
  Court,
  HOME_DISTANCE,
  NET_GAP,
  NET_HEIGHT,
  REACH,
  SHOT_ANGLE,
  SHOT_ANGLE_SPAN,
  TENNIS,
  Team,
  WALL_DISTANCE,
  createCourts,
  playHeuristic,
  playRandom,
  shotVelocity,
  teamBehaviorName,
} from '../../src/sims/envs/tennis';
import { closeOpenedEnvironments, openBuiltEnvironment } from '../helpers/environments';
import { ROOT } from '../helpers/paths';

const TENNIS_ENV = path.join(ROOT, 'dist', 'sims', 'envs', 'tennis.js');
const BEHAVIORS = [teamBehaviorName(0), teamBehaviorName(1)] as const;

// Indices in an observation, in the order TennisAgent writes them.
const OWN_X = 0;
const OWN_VX = 1;
const ANGLE = 2;
const BALL_X = 3;
const BALL_Y = 4;
const BALL_VX = 5;
const BALL_VY = 6;
const OTHER_X = 7;
const TURN = 8;

afterEach(closeOpenedEnvironments);

async function launch(args: string[] = [], options: Partial<UnityEnvironmentOptions> = {}): Promise<UnityEnvironment> {
  const env = await openBuiltEnvironment(TENNIS_ENV, args, { seed: 3, ...options });
  await env.reset();
  return env;
}

type Steps = [DecisionSteps, TerminalSteps];

/** Each team's steps. */
function both(env: UnityEnvironment): [Steps, Steps] {
  return [env.getSteps(BEHAVIORS[0]), env.getSteps(BEHAVIORS[1])];
}

/** One decision: every agent acts as `policy` says from its own observation, then the environment steps to the next decision. */
async function play(env: UnityEnvironment, policy: (team: Team, obs: Float32Array) => [number, number]): Promise<[Steps, Steps]> {
  for (const team of [0, 1] as const) {
    const [decision] = env.getSteps(BEHAVIORS[team]);
    env.setActions(BEHAVIORS[team], { continuous: Array.from(decision.agentId, (_, row) => policy(team, decision.observation(0, row))) });
  }
  await env.step();
  return both(env);
}

/** The courts of a step: each team-0 agent's row beside its opponent's (id + 1), in `a` and `b`. */
function courts(a: DecisionSteps | TerminalSteps, b: DecisionSteps | TerminalSteps): Array<[number, number]> {
  return Array.from(a.agentId, (id, row) => [row, b.indexOf(id + 1)] as [number, number]).filter(([, other]) => other >= 0);
}

/** x and -x, whatever the sign of zero. */
function expectOpposite(a: number, b: number): void {
  expect(Math.abs(a + b)).toBe(0);
}

/** The two sides of a court see the same game, each from its own side. */
function expectMirrored(team0: Float32Array, team1: Float32Array): void {
  expectOpposite(team0[BALL_X], team1[BALL_X]);
  expect(team0[BALL_Y]).toBe(team1[BALL_Y]);
  expectOpposite(team0[BALL_VX], team1[BALL_VX]);
  expect(team0[BALL_VY]).toBe(team1[BALL_VY]);
  expectOpposite(team0[OWN_X], team1[OTHER_X]);
  expectOpposite(team0[OTHER_X], team1[OWN_X]);
  // Each sees itself on its own half, the other on the far one.
  for (const obs of [team0, team1]) {
    expect(obs[OWN_X]).toBeLessThan(0);
    expect(obs[OTHER_X]).toBeGreaterThan(0);
  }
  // The ball is always exactly one side's to hit.
  expect(team0[TURN] + team1[TURN]).toBe(1);
}

const runBack = (): [number, number] => [-1, 0];

describe('Tennis over gRPC', () => {
  it('announces Tennis?team=0 and Tennis?team=1, 9 observations and 2 continuous actions each, one agent of each per court', async () => {
    const env = await launch();
    expect([...env.behaviorSpecs.keys()].sort()).toEqual([...BEHAVIORS]);
    for (const name of BEHAVIORS) {
      const spec = env.behaviorSpecs.get(name)!;
      expect(spec.observationSpecs.map((o) => [o.name, o.shape])).toEqual([['VectorSensor_size9', [9]]]);
      expect(spec.actionSpec.continuousSize).toBe(2);
      expect(spec.actionSpec.discreteBranches).toEqual([]);
    }
    const [[team0], [team1]] = both(env);
    expect([team0.length, team1.length]).toEqual([8, 8]);
    expect(courts(team0, team1)).toHaveLength(8);
  });

  it('mirrors the court: at the start and through random play, each side sees the game from its own side', async () => {
    const env = await launch();
    const [[start0], [start1]] = both(env);
    for (const [row0, row1] of courts(start0, start1)) {
      const [team0, team1] = [start0.observation(0, row0), start1.observation(0, row1)];
      expectMirrored(team0, team1);
      for (const obs of [team0, team1]) {
        expect([obs[OWN_X], obs[OWN_VX], obs[ANGLE], obs[OTHER_X]]).toEqual([Math.fround(-HOME_DISTANCE / WALL_DISTANCE), 0, 0, Math.fround(HOME_DISTANCE / WALL_DISTANCE)]);
        // The serve: the ball at rest above the server's half.
        expect([obs[BALL_VX], obs[BALL_VY]]).toEqual([0, 0]);
        expect(obs[BALL_X] < 0).toBe(obs[TURN] === 1);
      }
    }
    const random = new SeededRandom(8);
    let checked = 0;
    for (let i = 0; i < 80; i++) {
      const [[decision0], [decision1]] = await play(env, () => [random.range(-1, 1), random.range(-1, 1)]);
      // Both sides of a court ask for their decisions together.
      expect(courts(decision0, decision1)).toHaveLength(decision0.length);
      expect(decision1.length).toBe(decision0.length);
      for (const [row0, row1] of courts(decision0, decision1)) {
        expectMirrored(decision0.observation(0, row0), decision1.observation(0, row1));
        checked += 1;
      }
    }
    // Most steps hold every court's decisions; a message with points' ends alone holds none.
    expect(checked).toBeGreaterThan(80 * 8 * 0.5);
  }, 30000);

  it('gives +1 and -1 at the end of a point, both episodes ending at the same step: a zero-sum game', async () => {
    const env = await launch();
    const random = new SeededRandom(9);
    let points = 0;
    for (let i = 0; i < 150; i++) {
      const [[decision0, terminal0], [decision1, terminal1]] = await play(env, () => [random.range(-1, 1), random.range(-1, 1)]);
      // A point that ends ends for both sides, never for one alone.
      expect(courts(terminal0, terminal1)).toHaveLength(terminal0.length);
      expect(terminal1.length).toBe(terminal0.length);
      for (const [row0, row1] of courts(terminal0, terminal1)) {
        expect([terminal0.reward[row0], terminal1.reward[row1]].sort()).toEqual([-1, 1]);
        expect([terminal0.interrupted[row0], terminal1.interrupted[row1]]).toEqual([0, 0]);
        points += 1;
      }
      // Between points nobody earns anything: no shaping.
      expect([...decision0.reward, ...decision1.reward].every((r) => r === 0)).toBe(true);
    }
    expect(points).toBeGreaterThan(20);
  }, 30000);

  it('a serve left to fall loses the point for the server: -1 to it, +1 to the receiver, and the next point begins', async () => {
    const env = await launch(['--areas', '4']);
    const [[start0], [start1]] = both(env);
    const serverOf = new Map(courts(start0, start1).map(([row0]) => [start0.agentId[row0], start0.observation(0, row0)[TURN] === 1 ? 0 : 1]));
    const ended = new Set<number>();
    const begun = new Set<number>();
    for (let i = 0; i < 14 && begun.size < 4; i++) {
      const [[next0, terminal0], [, terminal1]] = await play(env, runBack);
      for (const [row0, row1] of courts(terminal0, terminal1)) {
        const id = terminal0.agentId[row0];
        const server = serverOf.get(id);
        expect([terminal0.reward[row0], terminal1.reward[row1]]).toEqual(server === 0 ? [-1, 1] : [1, -1]);
        // The last step shows the ball on the server's floor.
        const seen = (server === 0 ? terminal0 : terminal1).observation(0, server === 0 ? row0 : row1);
        expect(seen[BALL_X]).toBeLessThan(0);
        expect(seen[BALL_Y]).toBeLessThan(0.05);
        ended.add(id);
      }
      // The next point, at the agent's next decision under the same id: home again (it has not
      // run since: its actions were cleared), a new serve falling straight down, nothing owed.
      for (let row = 0; row < next0.length; row++) {
        const id = next0.agentId[row];
        if (!ended.has(id) || begun.has(id)) continue;
        const obs = next0.observation(0, row);
        expect([obs[OWN_X], obs[BALL_VX], next0.reward[row]]).toEqual([Math.fround(-HOME_DISTANCE / WALL_DISTANCE), 0, 0]);
        begun.add(id);
      }
    }
    // Every serve (from 3 to 4 m up) has landed within 12 decisions, and the next point has begun.
    expect([ended.size, begun.size]).toEqual([4, 4]);
  });

  it('a serve hit at the steepest angle flies past the far baseline: the server loses the point it hit', async () => {
    const env = await launch(['--areas', '4']);
    // The server runs under the ball and sets its racket at +1; the receiver stays at home.
    const serve = (_team: Team, obs: Float32Array): [number, number] => {
      if (obs[TURN] !== 1) return [0, 0];
      return [Math.max(-1, Math.min(1, (obs[BALL_X] - obs[OWN_X]) * 20)), 1];
    };
    const [[start0], [start1]] = both(env);
    const serverOf = new Map(courts(start0, start1).map(([row0]) => [start0.agentId[row0], start0.observation(0, row0)[TURN] === 1 ? 0 : 1]));
    const hit = new Set<number>();
    const ended = new Map<number, [number, number]>();
    for (let i = 0; i < 60 && ended.size < 4; i++) {
      const [[decision0, terminal0], [decision1, terminal1]] = await play(env, serve);
      for (const [row0, row1] of courts(decision0, decision1)) {
        const id = decision0.agentId[row0];
        const server = serverOf.get(id)!;
        const turnOfServer = (server === 0 ? decision0 : decision1).observation(0, server === 0 ? row0 : row1)[TURN];
        if (!ended.has(id) && turnOfServer === 0) hit.add(id);
      }
      for (const [row0, row1] of courts(terminal0, terminal1)) {
        const id = terminal0.agentId[row0];
        if (!ended.has(id)) ended.set(id, [terminal0.reward[row0], terminal1.reward[row1]]);
      }
    }
    expect(ended.size).toBe(4);
    for (const [id, rewards] of ended) {
      // The server reached its serve and hit it (the ball became the receiver's), and lost the point.
      expect(hit.has(id)).toBe(true);
      expect(rewards).toEqual(serverOf.get(id) === 0 ? [-1, 1] : [1, -1]);
    }
  }, 30000);

  it('calls a point a draw at --max-step: both episodes interrupted, rewards 0', async () => {
    const env = await launch(['--areas', '2', '--max-step', '30']);
    // Every serve starts at least 3 m up: it is still falling after 30 steps (6 decisions).
    for (let i = 0; i < 5; i++) {
      const [[, terminal0], [, terminal1]] = await play(env, runBack);
      expect(terminal0.length + terminal1.length).toBe(0);
    }
    const [[, terminal0], [, terminal1]] = await play(env, runBack);
    expect(courts(terminal0, terminal1)).toHaveLength(2);
    expect([...terminal0.interrupted, ...terminal1.interrupted]).toEqual([1, 1, 1, 1]);
    expect([...terminal0.reward, ...terminal1.reward]).toEqual([0, 0, 0, 0]);
  });

  it('replays the same points for a seed and others for another seed', async () => {
    async function trace(seed: number): Promise<string[]> {
      const env = await launch(['--areas', '2'], { seed });
      const random = new SeededRandom(4);
      const digests: string[] = [];
      for (let i = 0; i < 60; i++) {
        const steps = await play(env, () => [random.range(-1, 1), random.range(-1, 1)]);
        const digest = createHash('sha256');
        for (const [decision, terminal] of steps) {
          for (const array of [decision.agentId, decision.reward, ...decision.obs, terminal.agentId, terminal.reward]) digest.update(Buffer.from(Float64Array.from(array).buffer));
        }
        digests.push(digest.digest('hex'));
      }
      await env.close();
      return digests;
    }
    const first = await trace(5);
    expect(await trace(5)).toEqual(first);
    expect((await trace(6))[0]).not.toBe(first[0]);
  }, 60000);

  it('honors the time scale the trainer sets: at 1, a decision (5 steps) lasts 5 fixed steps of real time', async () => {
    const engineConfiguration = new EngineConfigurationChannel();
    engineConfiguration.setConfigurationParameters({ timeScale: 1 });
    const env = await launch(['--areas', '1'], { sideChannels: [engineConfiguration] });
    const started = Date.now();
    for (let i = 0; i < 5; i++) await play(env, runBack);
    // 25 steps of Unity's fixed 0.02 s at time scale 1 take at least half a second (a lower bound).
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
  });

  it('with --opponent random, team 1 plays inside the environment: the trainer sees team 0 alone', async () => {
    const env = await launch(['--areas', '3', '--opponent', 'random']);
    expect([...env.behaviorSpecs.keys()]).toEqual([BEHAVIORS[0]]);
    expect(env.getSteps(BEHAVIORS[0])[0].length).toBe(3);
    // The other side moves on its own.
    let otherMoved = false;
    for (let i = 0; i < 10 && !otherMoved; i++) {
      env.setActions(BEHAVIORS[0], { continuous: [[0, 0], [0, 0], [0, 0]] });
      await env.step();
      const [decision] = env.getSteps(BEHAVIORS[0]);
      otherMoved = Array.from({ length: decision.length }, (_, row) => decision.observation(0, row)[OTHER_X]).some((x) => Math.abs(x - HOME_DISTANCE / WALL_DISTANCE) > 1e-6);
    }
    expect(otherMoved).toBe(true);
  });

  it('refuses an unknown opponent or a MaxStep under 1, naming the option', () => {
    for (const [args, message] of [
      [['--opponent', 'expert'], '--opponent must be none, heuristic or random, got "expert"'],
      [['--max-step', '0'], '--max-step needs an integer of at least 1'],
    ] as const) {
      expect(() => TENNIS.create(new Academy(), parseSimArgs(TENNIS, [...args]).values, 1)).toThrow(message);
    }
  });
});

/** A court in process with neither agents nor scripts (its players keep the actions they are given), its points' winners recorded. */
function bareCourt(): { court: Court; winners: Array<Team | null> } {
  const court = new Court(new Academy(), 1000, [null, null]);
  court.resetPoint();
  const winners: Array<Team | null> = [];
  court.onPoint.push((winner) => winners.push(winner));
  return { court, winners };
}

/** Team 0 has just hit the ball, which is now at (x, y) with velocity (vx, vy); team 1 stands at `receiverX`, out of its way. */
function afterShot(x: number, y: number, vx: number, vy: number, receiverX: number): ReturnType<typeof bareCourt> {
  const state = bareCourt();
  Object.assign(state.court.ball, { x, y, vx, vy });
  state.court.lastHitter = 0;
  state.court.players[0].x = -WALL_DISTANCE;
  state.court.players[1].x = receiverX;
  return state;
}

function stepUntilPoint(state: ReturnType<typeof bareCourt>, limit = 500): number {
  for (let i = 1; i <= limit; i++) {
    state.court.step();
    if (state.winners.length > 0) return i;
  }
  throw new Error('no point within the limit');
}

describe('Tennis: the rules of a point, on a court in process', () => {
  it('a shot into the net loses the point for its hitter', () => {
    const state = afterShot(-0.05, NET_HEIGHT - 0.2, 6, 0, WALL_DISTANCE);
    stepUntilPoint(state);
    expect(state.winners).toEqual([1]);
  });

  it('a shot that lands in the other half and bounces there again wins the point for its hitter', () => {
    // Low and slow: it lands near the net and bounces twice before the far wall; the receiver stands at its wall.
    const state = afterShot(0.5, 0.3, 1.5, 0, WALL_DISTANCE);
    stepUntilPoint(state);
    expect(state.winners).toEqual([0]);
    expect(state.court.landed).toBe(true);
    expect(state.court.ball.x).toBeLessThan(COURT_LENGTH);
  });

  it('a shot that lands in and reaches the far wall wins; one that reaches the wall before landing, or lands past the baseline, loses', () => {
    const winner = afterShot(COURT_LENGTH - 1, 0.05, 9, -3, NET_GAP);
    stepUntilPoint(winner);
    expect(winner.winners).toEqual([0]);
    expect(winner.court.ball.x).toBeGreaterThanOrEqual(WALL_DISTANCE);

    const intoTheWall = afterShot(COURT_LENGTH + 1, 3, 9, 0, NET_GAP);
    stepUntilPoint(intoTheWall);
    expect(intoTheWall.winners).toEqual([1]);

    const long = afterShot(COURT_LENGTH + 0.5, 0.05, 1, -1, NET_GAP);
    stepUntilPoint(long);
    expect(long.winners).toEqual([1]);
    expect(long.court.ball.x).toBeGreaterThan(COURT_LENGTH);
  });

  it('a shot that lands on its own side loses', () => {
    const state = afterShot(-3, 0.05, 0.5, -1, WALL_DISTANCE);
    stepUntilPoint(state);
    expect(state.winners).toEqual([1]);
    expect(state.court.ball.x).toBeLessThan(0);
  });

  it('the receiver reaches the ball: it leaves toward the other side at the racket\'s angle, and its hitter cannot touch it again', () => {
    const state = afterShot(3, 1, 2, 0, 3.3);
    state.court.players[1].act(0, -0.5);
    state.court.step();
    expect(state.court.lastHitter).toBe(1);
    const expected = shotVelocity(-1, -0.5);
    expect(state.court.ball.vx).toBeCloseTo(expected.vx, 12);
    expect(state.court.ball.vy).toBeCloseTo(expected.vy, 12);
    expect(Math.atan2(state.court.ball.vy, -state.court.ball.vx)).toBeCloseTo(SHOT_ANGLE - 0.5 * SHOT_ANGLE_SPAN, 12);
    // Still within its reach at the next step: no second hit.
    expect(Math.abs(state.court.ball.x - state.court.players[1].x)).toBeLessThanOrEqual(REACH);
    state.court.step();
    expect(state.court.lastHitter).toBe(1);
    expect(state.court.ball.vx).toBeLessThan(0);
  });

  it('the serve must be hit before it lands: the server loses when it falls on its floor', () => {
    const state = bareCourt();
    state.court.players[state.court.server].x = state.court.players[state.court.server].facing * -WALL_DISTANCE;
    stepUntilPoint(state);
    expect(state.winners).toEqual([1 - state.court.server]);
  });
});

describe('Tennis: the scripted players', () => {
  it('the heuristic beats the random player in a clear majority of 400 points, on either side', () => {
    const tally = { heuristic: 0, random: 0, draw: 0 };
    for (const heuristicTeam of [0, 1] as const) {
      const academy = new Academy();
      academy.seed(11 + heuristicTeam);
      const scripts = heuristicTeam === 0 ? ([playHeuristic, playRandom] as const) : ([playRandom, playHeuristic] as const);
      const [court] = createCourts(academy, 1, 1000, scripts);
      let points = 0;
      court.onPoint.push((winner) => {
        points += 1;
        tally[winner === null ? 'draw' : winner === heuristicTeam ? 'heuristic' : 'random'] += 1;
        court.resetPoint();
      });
      court.resetPoint();
      while (points < 200) court.step();
    }
    expect(tally.heuristic + tally.random + tally.draw).toBe(400);
    expect(tally.heuristic).toBeGreaterThan(0.85 * 400);
  });
});
