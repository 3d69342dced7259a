#!/usr/bin/env node
/**
 * Tennis, a small side-view version of Unity's Tennis example (Examples/Tennis: TennisAgent.cs,
 * HitWall.cs, TennisArea.cs): two players, one per team, hit a ball over a net; a player wins the
 * point when the other cannot make a valid return. Each court is one game of two agents of the
 * same behavior on teams 0 and 1, announced as `Tennis?team=0` and `Tennis?team=1` as Unity
 * announces a symmetric game's behavior, for self-play.
 *
 * The court, seen from the side (units are metres, a step is Unity's fixed 0.02 s): the net at
 * x = 0, NET_HEIGHT high; team 0 plays on x < 0, team 1 on x > 0; each half is COURT_LENGTH long
 * to its baseline, and an end wall stands WALL_DISTANCE from the net. The ball flies under
 * GRAVITY and bounces on the floor (BOUNCE of its vertical speed kept); the players run along the
 * floor of their own half. A player hits the ball the moment it comes within its reach (REACH
 * either side of the player, below REACH_HEIGHT) on its own side, unless it hit it last: the ball
 * leaves at HIT_SPEED toward the other side, at the angle its racket is set to.
 *
 * A point (an episode) begins with the ball at rest above the server's half (the server drawn at
 * random), falling. It ends, +1 to the winner and -1 to the loser (SetReward, as HitWall's
 * AgentAWins/AgentBWins; the two rewards always sum to 0), when:
 *   - the server lets the ball fall on its own floor: the receiver wins;
 *   - a shot hits the net, lands on its hitter's own side, or lands past the other baseline or
 *     reaches the other end wall before landing: the hitter loses;
 *   - a shot lands in the other half and then lands again there, or reaches the end wall behind
 *     it, before the other player hits it: the hitter wins.
 * After --max-step steps (DEFAULT_MAX_STEP) without a point both episodes are interrupted, rewards 0: a draw.
 *
 * What it keeps of Unity's Tennis: two agents of one behavior on two teams, observations mirrored
 * so that each sees the game from its own side (Tennis's m_InvertMult: both see themselves at
 * negative x, the other side at positive x), continuous actions for moving toward or away from
 * the net and for the racket's angle, each point served by dropping the ball at rest over a side
 * drawn at random (TennisArea.MatchReset), HitWall's rules of a point (a serve that must be hit
 * before it lands, the net, a shot landing long, a double bounce, a winner into the far wall),
 * +1/-1 at the end of a point and both episodes ending with it, a decision every 5 steps with
 * the actions repeated in between, and several courts per environment. The shaping rewards of older Tennis
 * versions (+0.1 a hit) are not kept, as today's Tennis has none: the game stays zero-sum.
 * What it changes: a plane instead of 3D physics; players run along the floor and reach up to
 * REACH_HEIGHT instead of jumping (no jump action: 2 actions instead of 3); a hit sends the ball
 * at a fixed speed at the racket's angle instead of a physical bounce off the racket; a player
 * cannot hit the ball twice in a row (the second touch is ignored, where Unity calls it a fault);
 * 9 observations once instead of 9 stacked 3 deep, the velocities given, the other player's
 * position and whose turn it is added in place of the player's height and vertical speed; a
 * MaxStep (Unity's Tennis prefab sets none) so that a rally between two good players ends.
 *
 * Observations (9 floats, each player's own frame: x' = x for team 0, -x for team 1, so the
 * player's half is x' < 0 and the other's x' > 0):
 *   own x' / WALL_DISTANCE, own velocity along x' / RUN_SPEED, the racket's angle (the last
 *   action, -1 to 1); the ball's x' / WALL_DISTANCE, its height / WALL_DISTANCE, its velocity
 *   along x' and up / HIT_SPEED; the other player's x' / WALL_DISTANCE; 1 when the ball is this
 *   player's to hit (its serve, or the other hit last), else 0.
 * Actions (2 continuous, clamped to [-1, 1]): run toward the net (+) or away from it (-) at up to
 * RUN_SPEED; the racket's angle: the shot leaves SHOT_ANGLE + action x SHOT_ANGLE_SPAN above
 * the floor.
 *
 * `--opponent heuristic|random` plays team 1 inside the environment (Unity's Behavior Type
 * Heuristic Only on one agent): the trainer then sees team 0 alone, for training without
 * self-play. Points won are also counted per court (Court.onPoint), for evaluations that play
 * policies against each other in process (bench/duel-eval.ts).
 */
import { Academy, FIXED_DELTA_TIME } from '../sdk/academy';
import { ActionBuffers, Agent, BehaviorParameters, ObservationWriter } from '../sdk/agent';
import { SimDefinition, SimOptionValues, intOption, runEnvironmentMain } from '../sdk/run-environment';

export const BEHAVIOR_NAME = 'Tennis';
export const TEAMS = [0, 1] as const;
export type Team = (typeof TEAMS)[number];

/** Distance from the net to each baseline. */
export const COURT_LENGTH = 8;
/** Distance from the net to each end wall: the floor between baseline and wall is out. */
export const WALL_DISTANCE = 10;
export const NET_HEIGHT = 1;
export const GRAVITY = 9.81;
/** The share of its vertical speed the ball keeps when it bounces on the floor. */
export const BOUNCE = 0.8;
/** A player's top speed along the floor, m/s. */
export const RUN_SPEED = 5;
/** How close to the net a player may come. */
export const NET_GAP = 0.5;
/** A player reaches the ball up to this far from it along x... */
export const REACH = 0.5;
/** ...and below this height. */
export const REACH_HEIGHT = 1.5;
/** The speed of every shot, m/s. */
export const HIT_SPEED = 12;
/** A shot leaves at SHOT_ANGLE + angle action x SHOT_ANGLE_SPAN above the floor (radians). */
export const SHOT_ANGLE = (27 * Math.PI) / 180;
export const SHOT_ANGLE_SPAN = (22 * Math.PI) / 180;
/** The serve: the ball starts at rest this high... */
export const SERVE_HEIGHT: readonly [number, number] = [3, 4];
/** ...this far from the net, over the server's half. */
export const SERVE_DISTANCE: readonly [number, number] = [3.5, 7.5];
/** Where players stand when a point begins, from the net. */
export const HOME_DISTANCE = 6;
export const DECISION_PERIOD = 5;
export const DEFAULT_MAX_STEP = 1000;
const DEFAULT_AREAS = 8;
export const WIN_REWARD = 1;
export const LOSE_REWARD = -1;
export const OBSERVATION_SIZE = 9;
/** Run, racket angle. */
const ACTIONS = 2;
/** The court moves by Unity's fixed step at every academy step. */
const DT = FIXED_DELTA_TIME;

export function teamBehaviorName(team: Team): string {
  return `${BEHAVIOR_NAME}?team=${team}`;
}

export function tennisBehavior(team: Team): BehaviorParameters {
  return {
    behaviorName: teamBehaviorName(team),
    observations: [{ kind: 'vector', shape: [OBSERVATION_SIZE], name: `VectorSensor_size${OBSERVATION_SIZE}` }],
    continuousActions: ACTIONS,
    discreteBranches: [],
    decisionPeriod: DECISION_PERIOD,
    takeActionsBetweenDecisions: true,
  };
}

const clamp = (v: number, low: number, high: number) => Math.min(high, Math.max(low, v));

export interface Ball {
  x: number;
  y: number;
  vx: number;
  vy: number;
}

/** One side of the court. `facing` is +1 for team 0 (it hits toward +x), -1 for team 1. */
export class Player {
  readonly facing: 1 | -1;
  x = 0;
  vx = 0;
  /** The run action, -1 (away from the net) to 1 (toward it). */
  run = 0;
  /** The racket's angle action, -1 to 1. */
  angle = 0;

  constructor(readonly team: Team) {
    this.facing = team === 0 ? 1 : -1;
  }

  /** A position or velocity along x in the player's own frame (its half negative), and back. */
  own(x: number): number {
    // + 0 turns -0 into 0: a ball at rest looks the same from both sides.
    return this.facing * x + 0;
  }

  act(run: number, angle: number): void {
    this.run = clamp(run, -1, 1);
    this.angle = clamp(angle, -1, 1);
  }
}

/** Who plays a side that the trainer does not: a scripted player choosing its actions at each decision. */
export type ScriptedPlayer = (court: Court, player: Player, actions: Float32Array) => void;

/** The velocity of a shot hit toward the other side with an angle action of `angle`. */
export function shotVelocity(facing: number, angle: number): { vx: number; vy: number } {
  const radians = SHOT_ANGLE + clamp(angle, -1, 1) * SHOT_ANGLE_SPAN;
  return { vx: facing * HIT_SPEED * Math.cos(radians), vy: HIT_SPEED * Math.sin(radians) };
}

/** Moves a ball one step under gravity (semi-implicit Euler), bouncing on the floor; returns whether it bounced. */
export function flyBall(ball: Ball): boolean {
  ball.vy -= GRAVITY * DT;
  ball.x += ball.vx * DT;
  ball.y += ball.vy * DT;
  if (ball.y > 0) return false;
  ball.y = -ball.y * BOUNCE;
  ball.vy = -ball.vy * BOUNCE;
  return true;
}

/** One court: its two players, its ball, and the rules of a point (Unity's TennisArea with HitWall). */
export class Court {
  readonly players: readonly [Player, Player] = [new Player(0), new Player(1)];
  /** The agent of each side; null for a side played by a script. */
  readonly agents: [TennisAgent | null, TennisAgent | null] = [null, null];
  readonly ball: Ball = { x: 0, y: 0, vx: 0, vy: 0 };
  server: Team = 0;
  /** Who touched the ball last in this point; null during the serve. */
  lastHitter: Team | null = null;
  /** Whether the last shot has landed in the other half. */
  landed = false;
  /** Steps since the point began. */
  steps = 0;
  /** Listeners told of every point's end: the winning team, or null for a draw at MaxStep. */
  readonly onPoint: Array<(winner: Team | null) => void> = [];
  private over = false;
  /** The agents whose episode the point's end closed and who have not begun their next one yet. */
  private readonly ending = new Set<TennisAgent>();
  private readonly scriptedActions = new Float32Array(ACTIONS);

  constructor(
    private readonly academy: Academy,
    readonly maxStep: number,
    /** The script playing each side the trainer does not; null for an agent's side. */
    readonly scripts: readonly [ScriptedPlayer | null, ScriptedPlayer | null],
  ) {}

  get random() {
    return this.academy.random;
  }

  /** A new point: the players at home, the ball at rest above the half of a server drawn at random. */
  resetPoint(): void {
    const random = this.academy.random;
    this.server = random.int(2) as Team;
    for (const player of this.players) {
      player.x = -player.facing * HOME_DISTANCE;
      player.vx = 0;
      player.act(0, 0);
    }
    const serving = this.players[this.server];
    this.ball.x = -serving.facing * random.range(SERVE_DISTANCE[0], SERVE_DISTANCE[1]);
    this.ball.y = random.range(SERVE_HEIGHT[0], SERVE_HEIGHT[1]);
    this.ball.vx = 0;
    this.ball.vy = 0;
    this.lastHitter = null;
    this.landed = false;
    this.steps = 0;
    this.over = false;
    this.ending.clear();
  }

  /** Whether the ball is `team`'s to hit: its serve, or the other hit last. */
  isTurnOf(team: Team): boolean {
    return this.lastHitter === null ? this.server === team : this.lastHitter !== team;
  }

  /** The 9 observations of `player`, in its own frame. */
  observe(player: Player, writer: ObservationWriter): void {
    const other = this.players[1 - player.team];
    writer.add(player.own(player.x) / WALL_DISTANCE);
    writer.add(player.own(player.vx) / RUN_SPEED);
    writer.add(player.angle);
    writer.add(player.own(this.ball.x) / WALL_DISTANCE);
    writer.add(this.ball.y / WALL_DISTANCE);
    writer.add(player.own(this.ball.vx) / HIT_SPEED);
    writer.add(this.ball.vy / HIT_SPEED);
    writer.add(player.own(other.x) / WALL_DISTANCE);
    writer.add(this.isTurnOf(player.team) ? 1 : 0);
  }

  /**
   * One world step after the agents acted: the scripted sides decide (every DECISION_PERIOD
   * steps), the players run, the ball flies, then the rules judge where it went and whether a
   * player reaches it; then the step limit.
   */
  step(): void {
    if (this.over) return;
    this.players.forEach((player, side) => {
      const script = this.scripts[side];
      if (script === null || this.steps % DECISION_PERIOD !== 0) return;
      this.scriptedActions.fill(0);
      script(this, player, this.scriptedActions);
      player.act(this.scriptedActions[0], this.scriptedActions[1]);
    });
    for (const player of this.players) {
      const before = player.x;
      // In its own frame a player runs between its end wall and the net; own() is its own inverse.
      player.x = player.own(clamp(player.own(player.x) + player.run * RUN_SPEED * DT, -WALL_DISTANCE, -NET_GAP));
      player.vx = (player.x - before) / DT;
    }
    this.steps += 1;
    const winner = this.moveBall();
    if (winner !== undefined) this.endPoint(winner);
    else if (this.steps >= this.maxStep) this.endPoint(null);
  }

  /** Flies the ball one step and applies the rules; returns the point's winner once it is decided. */
  private moveBall(): Team | undefined {
    const ball = this.ball;
    const before = { x: ball.x, y: ball.y };
    const bounced = flyBall(ball);
    const hitter = this.lastHitter;
    // The side the ball is on now: 0 for x < 0.
    const side: Team = ball.x < 0 ? 0 : 1;
    if (hitter !== null && Math.sign(before.x) !== Math.sign(ball.x)) {
      // Crossing the net: the height where it crossed, between the two positions.
      const across = before.y + ((ball.y - before.y) * before.x) / (before.x - ball.x);
      if (across < NET_HEIGHT) return other(hitter);
    }
    if (hitter === null) {
      // The serve falls straight down: the server must hit it before it lands.
      if (bounced) return other(this.server);
    } else if (Math.abs(ball.x) >= WALL_DISTANCE) {
      // Into an end wall: a winner after a good landing, a shot long before it.
      return this.landed ? hitter : other(hitter);
    } else if (bounced) {
      if (side === hitter) return other(hitter);
      if (this.landed) return hitter; // a second bounce on the receiver's side
      if (Math.abs(ball.x) > COURT_LENGTH) return other(hitter); // long
      this.landed = true;
    }
    const player = this.players[side];
    if (this.lastHitter !== side && Math.abs(ball.x - player.x) <= REACH && ball.y <= REACH_HEIGHT) {
      const shot = shotVelocity(player.facing, player.angle);
      ball.vx = shot.vx;
      ball.vy = shot.vy;
      this.lastHitter = side;
      this.landed = false;
    }
    return undefined;
  }

  /** Ends the point: +1 and -1 (or an interruption for a draw) to the court's agents, whose episodes end with it. */
  private endPoint(winner: Team | null): void {
    this.over = true;
    for (const agent of this.agents) {
      if (agent === null) continue;
      if (winner === null) {
        agent.episodeInterrupted();
      } else {
        agent.setReward(agent.player.team === winner ? WIN_REWARD : LOSE_REWARD);
        agent.endEpisode();
      }
      this.ending.add(agent);
    }
    for (const listener of this.onPoint) listener(winner);
  }

  /**
   * An agent's next episode begins. The Academy reports each ending agent's last step and then
   * begins its next episode, one after the other: the next point starts only once both have, so
   * that both last steps show the court as the point ended.
   */
  begin(agent: TennisAgent): void {
    if (!this.ending.delete(agent) || this.ending.size > 0) return;
    this.resetPoint();
  }
}

function other(team: Team): Team {
  return team === 0 ? 1 : 0;
}

export class TennisAgent extends Agent {
  constructor(
    readonly court: Court,
    readonly player: Player,
  ) {
    super(tennisBehavior(player.team));
    court.agents[player.team] = this;
  }

  override onEpisodeBegin(): void {
    this.court.begin(this);
  }

  override collectObservations(_index: number, writer: ObservationWriter): void {
    this.court.observe(this.player, writer);
  }

  override onActionReceived(actions: ActionBuffers): void {
    this.player.act(actions.continuous[0], actions.continuous[1]);
  }

  override heuristic(actionsOut: ActionBuffers): void {
    playHeuristic(this.court, this.player, actionsOut.continuous);
  }
}

/** How far ahead (steps) the heuristic follows the ball. */
const LOOKAHEAD_STEPS = 250;
/** The angle actions the heuristic tries for its shot. */
const CANDIDATE_ANGLES = Array.from({ length: 21 }, (_, i) => -1 + i / 10);
/** A shot the heuristic plays lands at least this far inside the lines. */
const SAFETY = 0.75;

/**
 * The first place on `player`'s side where the ball, following its flight and bounces, comes
 * within reach height at a step when the player can already be under it; null when there is none
 * within the lookahead.
 */
function contactPoint(court: Court, player: Player): Ball | null {
  const ball = { ...court.ball };
  for (let step = 1; step <= LOOKAHEAD_STEPS; step++) {
    flyBall(ball);
    if (Math.abs(ball.x) >= WALL_DISTANCE) return null;
    const reachable = Math.abs(ball.x - player.x) - REACH <= RUN_SPEED * DT * step;
    if (player.own(ball.x) < 0 && ball.y <= REACH_HEIGHT && reachable) return ball;
  }
  return null;
}

/**
 * Where a shot from `from` at angle action `angle` first lands, in the hitter's frame, and the
 * height it crosses the net at; null when it reaches the wall first.
 */
function shotLanding(from: Ball, player: Player, angle: number): { landing: number; netHeight: number } | null {
  const ball = { ...from, ...shotVelocity(player.facing, angle) };
  let netHeight = Infinity;
  for (let i = 0; i < LOOKAHEAD_STEPS; i++) {
    const before = player.own(ball.x);
    const bounced = flyBall(ball);
    const now = player.own(ball.x);
    if (before < 0 && now >= 0) netHeight = ball.y;
    if (Math.abs(ball.x) >= WALL_DISTANCE) return null;
    if (bounced) return { landing: now, netHeight };
  }
  return null;
}

/**
 * The scripted player (the agents' heuristic, and `--opponent heuristic`): when the ball is its to
 * hit, it runs to where it can first meet the ball and sets its racket for the shot from there
 * that lands inside the lines, clearing the net, as far as it can from the other player (or,
 * when no shot is safe, the one that misses by the least); otherwise it walks back home.
 */
export const playHeuristic: ScriptedPlayer = (court, player, actions) => {
  const contact = court.isTurnOf(player.team) ? contactPoint(court, player) : null;
  const target = contact === null ? -player.facing * HOME_DISTANCE : contact.x;
  // Cover the distance within the next decision.
  actions[0] = clamp((player.facing * (target - player.x)) / (RUN_SPEED * DT * DECISION_PERIOD), -1, 1);
  if (contact === null) return;
  const opponent = player.own(court.players[1 - player.team].x);
  let best = -Infinity;
  for (const angle of CANDIDATE_ANGLES) {
    const shot = shotLanding(contact, player, angle);
    if (shot === null) continue;
    // How far inside the lines and above the net the shot stays; only safe shots aim away from the other player.
    const margin = Math.min(shot.netHeight - NET_HEIGHT, shot.landing, COURT_LENGTH - shot.landing);
    const score = margin >= SAFETY ? WALL_DISTANCE + Math.abs(shot.landing - opponent) : margin;
    if (score > best) {
      best = score;
      actions[1] = angle;
    }
  }
};

/** A player that runs and sets its racket at random (an untrained policy). */
export const playRandom: ScriptedPlayer = (court, _player, actions) => {
  actions[0] = court.random.range(-1, 1);
  actions[1] = court.random.range(-1, 1);
};

export const SCRIPTED_PLAYERS: Readonly<Record<string, ScriptedPlayer>> = { heuristic: playHeuristic, random: playRandom };

/**
 * Adds `count` courts to the academy: each side an agent, or the script `scripts` names for it;
 * every court steps with the world and starts a new point when the trainer resets.
 */
export function createCourts(
  academy: Academy,
  count: number,
  maxStep: number,
  scripts: readonly [ScriptedPlayer | null, ScriptedPlayer | null] = [null, null],
): Court[] {
  const courts: Court[] = [];
  for (let i = 0; i < count; i++) {
    const court = new Court(academy, maxStep, scripts);
    for (const player of court.players) {
      if (scripts[player.team] === null) academy.addAgent(new TennisAgent(court, player));
    }
    courts.push(court);
  }
  const previousReset = academy.onReset;
  academy.onReset = () => {
    previousReset?.();
    for (const court of courts) court.resetPoint();
  };
  const previousStep = academy.onWorldStep;
  academy.onWorldStep = (deltaTime) => {
    previousStep?.(deltaTime);
    for (const court of courts) court.step();
  };
  return courts;
}

export const TENNIS: SimDefinition = {
  name: 'Tennis',
  description: "two players hit a ball over a net, one per team, for self-play (Unity's Tennis, seen from the side)",
  options: {
    areas: { type: 'string', default: String(DEFAULT_AREAS), description: 'courts, each a game of two agents' },
    'max-step': { type: 'string', default: String(DEFAULT_MAX_STEP), description: 'steps before a point is called a draw' },
    opponent: {
      type: 'string',
      default: 'none',
      description: 'none: both teams are agents; heuristic or random: team 1 is played by that script inside the environment',
    },
  },
  create(academy: Academy, options: SimOptionValues, numAreas: number): void {
    const maxStep = intOption(options, 'max-step');
    if (maxStep < 1) throw new Error(`--max-step needs an integer of at least 1, got ${maxStep}.`);
    const opponent = String(options.opponent ?? 'none');
    if (opponent !== 'none' && !(opponent in SCRIPTED_PLAYERS)) {
      throw new Error(`--opponent must be none, ${Object.keys(SCRIPTED_PLAYERS).join(' or ')}, got "${opponent}".`);
    }
    const script = opponent === 'none' ? null : SCRIPTED_PLAYERS[opponent];
    createCourts(academy, intOption(options, 'areas') * numAreas, maxStep, [null, script]);
  },
};

if (require.main === module) {
  runEnvironmentMain(TENNIS, process.argv.slice(2)).then((code) => process.exit(code));
}
