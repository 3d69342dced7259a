#!/usr/bin/env node
/**
 * Pyramids, as Unity's Pyramids example (Examples/Pyramids: PyramidAgent.cs, PyramidArea.cs,
 * PyramidSwitch.cs and the AreaPB prefab), rebuilt on the floor plane seen from above: a game of
 * sparse reward, where the only reward comes after a chain of actions far from the start.
 *
 * Each training area is a square room 99 by 99 (x and z from -49.5 to 49.5) split into 3 by 3
 * cells by partial walls: on the lines x = +-16.56 and z = +-16.56 a cross of arms 15 long stands
 * at each crossing, and a stub 14.5 long juts in from the outer wall, leaving doorways between
 * the cells. The 9 cells, 25 wide, centered 30 apart, are the spawn spots. Every episode the spots
 * are shuffled: the agent takes the first (facing a whole number of degrees drawn in [0, 360)),
 * the switch the second, the third is kept for the gold pyramid, and stone pyramids take the six
 * others; each object stands at a uniform point of its spot (upstream's PlaceObject: within
 * +-spot/2.1 on each axis, here also kept wholly inside its spot).
 *
 * Touching the switch while it is off turns it on and makes the gold pyramid appear on its spot;
 * touching the gold pyramid sets the reward to +2 and ends the episode. Every step the agent acts
 * costs -1/MaxStep; MaxStep is 5000, a decision every 5 steps (the prefab's DecisionRequester),
 * the action repeated in between, so an episode holds at most 1000 decisions.
 *
 * One discrete branch of 5: 0 nothing, 1 forward, 2 backward, 3 turn right, 4 turn left. A move is
 * a velocity change of 2 m/s along the agent's facing at every step (ForceMode.VelocityChange); a
 * turn is 200 degrees a second, 4 a step. Friction (0.6 under Earth's gravity) and the Rigidbody's
 * drag of 2 slow it down; walls, the switch and the pyramids stop it.
 *
 * Observations, as the prefab's sensors send them, sorted by name as Unity sorts sensors:
 * - three ray perception sensors, RayPerceptionSensor, RayPerceptionSensor1 and RayPerceptionSensor2:
 *   7 sphere casts each (3 rays a side; radius 0.5, length 35) spread over +-70, +-65 and +-75
 *   degrees, each ray a one-hot of the tag it hit among block, wall, goal, switchOff, switchOn and
 *   stone, then 1 if it hit nothing, then the distance it travelled over its length:
 *   7 x (6 + 2) = 56 floats a sensor;
 * - the agent's vector observation (4): the switch's state (1 on, 0 off), then the agent's
 *   velocity in its own frame (right, up, forward).
 * 168 + 4 floats in all.
 *
 * What is simpler than Unity's, to keep the world deterministic and cheap:
 * - Pyramids are solid 3 by 3 blocks. Unity's are stacks of loose bricks the agent can topple, the
 *   gold one with its gold brick on top; here touching the gold pyramid is reaching its brick, so
 *   no ray ever reports "block" (upstream's tag of the gold pyramid's plain bricks).
 * - Rays stay level: the prefab raises the ends of its second and third sensors by 5 and 10 to look
 *   over low things; seen from above all three differ only in their spread.
 * - The switch is a 4 by 4 block (its collider), fixed in place as the prefab's constraints hold it.
 *
 * Scaling, for training budgets far below upstream's 10 million steps (config/ppo/Pyramids.yaml):
 * `--area-scale F` multiplies every length of the room (walls, their thickness, spots and their
 * spacing) by F, leaving the bodies (agent, switch, pyramids), their speeds and the rays as they
 * are; `--max-step N` replaces MaxStep 5000, and so the time penalty. The defaults are upstream's.
 * `npm run bench:train -- --pyramids ...` trains at `--area-scale 0.6 --max-step 800` (a room 59.4
 * wide, episodes of 160 decisions), where uniformly random actions reached the brick in none of
 * 800 episodes; at 0.5 and 1000 steps they did in 2 of 320, enough for plain PPO to learn from.
 */
import { Academy, FIXED_DELTA_TIME } from '../sdk/academy';
import { ActionBuffers, Agent, BehaviorParameters, ObservationWriter } from '../sdk/agent';
import { SimDefinition, SimOptionValues, intOption, numberOption, runEnvironmentMain } from '../sdk/run-environment';
import {
  Box,
  Gait,
  TaggedBox,
  WALK_ACTIONS,
  boxAround,
  castRay,
  distanceToBox,
  pushOut,
  rayDirection,
  rayPerceptionAngles,
  steer,
  walk,
  writeRay,
} from './top-down';

export { BACKWARD, FORWARD, NOTHING, TURN_LEFT, TURN_RIGHT } from './top-down';

export const MAX_STEP = 5000;
export const DECISION_PERIOD = 5;
/** The scene holds 16 AreaPB prefabs of one agent each. */
const DEFAULT_AREAS = 16;
export const GOAL_REWARD = 2;

/** What a ray can hit, in the order of the prefab's detectable tags. */
export enum RayTag {
  Block = 0,
  Wall = 1,
  Goal = 2,
  SwitchOff = 3,
  SwitchOn = 4,
  Stone = 5,
}
export const DETECTABLE_TAGS = ['block', 'wall', 'goal', 'switchOff', 'switchOn', 'stone'] as const;

// The three ray perception sensors of the prefab, in Unity's order (by name).
export const RAY_SENSORS = [
  { name: 'RayPerceptionSensor', maxRayDegrees: 70 },
  { name: 'RayPerceptionSensor1', maxRayDegrees: 65 },
  { name: 'RayPerceptionSensor2', maxRayDegrees: 75 },
] as const;
export const RAYS_PER_DIRECTION = 3;
export const RAY_LENGTH = 35;
export const CAST_RADIUS = 0.5;
const SENSOR_ANGLES = RAY_SENSORS.map((sensor) => rayPerceptionAngles(RAYS_PER_DIRECTION, sensor.maxRayDegrees));
export const RAY_FRAME = (2 * RAYS_PER_DIRECTION + 1) * (DETECTABLE_TAGS.length + 2);
export const VECTOR_SIZE = 4;
export const VECTOR_SENSOR_NAME = `VectorSensor_size${VECTOR_SIZE}`;

// The room at scale 1, from the prefab.
const ROOM_HALF = 49.5;
const WALL_THICKNESS = 1;
/** The lines of the partial walls, x or z = +-16.56. */
const PARTITION = 16.56;
/** Each arm of a cross reaches this far from its crossing. */
const CROSS_ARM = 7.5;
const STUB_LENGTH = 14.5;
const SPOT_SPACING = 30;
const SPOT_SIZE = 25;

// The bodies, whatever the scale.
/** The agent is a unit cube; seen from above we take it round. */
export const AGENT_RADIUS = 0.5;
export const SWITCH_SIZE = 4;
export const PYRAMID_SIZE = 3;
const STONE_PYRAMIDS = 6;

/** Motion, from PyramidAgent.MoveAgent, the agent's Rigidbody and Unity's default physics. */
const GAIT: Gait = { turnDegreesPerSecond: 200, runSpeed: 2, frictionDeceleration: 0.6 * 9.81, drag: 2 };
/** Motion is resolved in slices no longer than this, so that no wall, however thin, is tunnelled. */
const MAX_SLICE = AGENT_RADIUS / 2;
/** The side of the squares the heuristic maps the room in. */
const ROUTE_CELL = 0.5;

/** The world's lengths for one `--area-scale`. */
export class PyramidRoom {
  readonly walls: readonly Box[];
  /** The 9 spawn spots' centers, in upstream's order (SpawnA to SpawnI: z rows from -30, x from -30). */
  readonly spots: ReadonlyArray<{ x: number; z: number }>;
  readonly spotSize: number;
  readonly half: number;

  constructor(readonly scale: number) {
    const half = (this.half = ROOM_HALF * scale);
    const thick = WALL_THICKNESS * scale;
    const line = PARTITION * scale;
    const arm = CROSS_ARM * scale;
    const stub = STUB_LENGTH * scale;
    const walls: Box[] = [
      boxAround(-half - thick / 2, 0, thick, 2 * half + 2 * thick),
      boxAround(half + thick / 2, 0, thick, 2 * half + 2 * thick),
      boxAround(0, -half - thick / 2, 2 * half, thick),
      boxAround(0, half + thick / 2, 2 * half, thick),
    ];
    for (const a of [-line, line]) {
      for (const b of [-line, line]) walls.push(boxAround(a, b, 2 * arm, thick), boxAround(a, b, thick, 2 * arm));
      for (const end of [-1, 1]) {
        const middle = end * (half - stub / 2);
        walls.push(boxAround(a, middle, thick, stub), boxAround(middle, a, stub, thick));
      }
    }
    this.walls = walls;
    this.spotSize = SPOT_SIZE * scale;
    const spots: Array<{ x: number; z: number }> = [];
    for (const z of [-1, 0, 1]) for (const x of [-1, 0, 1]) spots.push({ x: x * SPOT_SPACING * scale, z: z * SPOT_SPACING * scale });
    this.spots = spots;
  }

  /**
   * A uniform point of spot `index` for a body `size` wide: within +-spot/2.1 of its center on each
   * axis, as upstream's PlaceObject, and close enough that the body stays inside the spot.
   */
  place(random: { range(min: number, max: number): number }, index: number, size: number): { x: number; z: number } {
    const reach = Math.max(0, Math.min(this.spotSize / 2.1, (this.spotSize - size) / 2));
    const spot = this.spots[index];
    const x = spot.x + random.range(-reach, reach);
    return { x, z: spot.z + random.range(-reach, reach) };
  }
}

export function pyramidsBehavior(maxStep: number): BehaviorParameters {
  return {
    behaviorName: 'Pyramids',
    observations: [
      ...RAY_SENSORS.map((sensor) => ({ kind: 'vector' as const, shape: [RAY_FRAME], name: sensor.name })),
      { kind: 'vector', shape: [VECTOR_SIZE], name: VECTOR_SENSOR_NAME },
    ],
    continuousActions: 0,
    discreteBranches: [WALK_ACTIONS],
    maxStep,
    decisionPeriod: DECISION_PERIOD,
    takeActionsBetweenDecisions: true,
  };
}

// ------------------------------------------------------------------------------------------
// The agent

export class PyramidAgent extends Agent {
  x = 0;
  z = 0;
  /** Facing, in degrees clockwise from +z seen from above (Unity's yaw). */
  yaw = 0;
  vx = 0;
  vz = 0;
  switchBox: Box = boxAround(0, 0, 0, 0);
  switchOn = false;
  /** The spot the gold pyramid appears on once the switch is on. */
  goldSpot = 0;
  /** The gold pyramid; null until the switch is on. */
  gold: Box | null = null;
  stones: Box[] = [];

  constructor(
    readonly room: PyramidRoom,
    readonly maxStepCount: number,
  ) {
    super(pyramidsBehavior(maxStepCount));
  }

  /** Draws the episode in upstream's order: the shuffle, the agent's place and facing, the switch, the stones. */
  override onEpisodeBegin(): void {
    const spots = [0, 1, 2, 3, 4, 5, 6, 7, 8];
    for (let i = spots.length - 1; i > 0; i--) {
      const j = this.random.int(i + 1);
      [spots[i], spots[j]] = [spots[j], spots[i]];
    }
    this.vx = 0;
    this.vz = 0;
    ({ x: this.x, z: this.z } = this.room.place(this.random, spots[0], 2 * AGENT_RADIUS));
    this.yaw = this.random.int(360);
    const at = this.room.place(this.random, spots[1], SWITCH_SIZE);
    this.switchBox = boxAround(at.x, at.z, SWITCH_SIZE, SWITCH_SIZE);
    this.switchOn = false;
    this.goldSpot = spots[2];
    this.gold = null;
    this.stones = [];
    for (let i = 0; i < STONE_PYRAMIDS; i++) {
      const stone = this.room.place(this.random, spots[3 + i], PYRAMID_SIZE);
      this.stones.push(boxAround(stone.x, stone.z, PYRAMID_SIZE, PYRAMID_SIZE));
    }
  }

  /** Everything solid, with the tag the rays report it by. */
  things(): TaggedBox[] {
    const things: TaggedBox[] = this.room.walls.map((box) => ({ box, tag: RayTag.Wall }));
    for (const box of this.stones) things.push({ box, tag: RayTag.Stone });
    things.push({ box: this.switchBox, tag: this.switchOn ? RayTag.SwitchOn : RayTag.SwitchOff });
    if (this.gold !== null) things.push({ box: this.gold, tag: RayTag.Goal });
    return things;
  }

  override collectObservations(index: number, writer: ObservationWriter): void {
    if (index < RAY_SENSORS.length) {
      this.perceive(index, writer.values);
      return;
    }
    const yaw = (this.yaw * Math.PI) / 180;
    writer.add(this.switchOn ? 1 : 0);
    writer.add(this.vx * Math.cos(yaw) - this.vz * Math.sin(yaw));
    writer.add(0);
    writer.add(this.vx * Math.sin(yaw) + this.vz * Math.cos(yaw));
  }

  /** One frame of ray sensor `sensor`, as RayPerceptionSensor writes it. */
  perceive(sensor: number, out: Float32Array): void {
    const things = this.things();
    SENSOR_ANGLES[sensor].forEach((angle, ray) => {
      writeRay(out, ray, DETECTABLE_TAGS.length, castRay(this.x, this.z, rayDirection(this.yaw, angle), CAST_RADIUS, RAY_LENGTH, things));
    });
  }

  override onActionReceived(actions: ActionBuffers): void {
    this.addReward(-1 / this.maxStepCount);
    this.move(actions.discrete[0]);
    if (this.gold !== null && this.touches(this.gold)) {
      // SetReward, as upstream: the brick's reward replaces what this decision gathered so far.
      this.setReward(GOAL_REWARD);
      this.endEpisode();
      return;
    }
    if (!this.switchOn && this.touches(this.switchBox)) {
      this.switchOn = true;
      const at = this.room.place(this.random, this.goldSpot, PYRAMID_SIZE);
      this.gold = boxAround(at.x, at.z, PYRAMID_SIZE, PYRAMID_SIZE);
    }
  }

  touches(box: Box): boolean {
    return distanceToBox(box, this.x, this.z) <= AGENT_RADIUS + 1e-9;
  }

  /** One fixed step of motion: turn or push, slow down, then slide in short slices, stopped by what is solid. */
  move(action: number): void {
    const dt = FIXED_DELTA_TIME;
    walk(this, action, GAIT, dt);
    const things = this.things();
    const slices = Math.max(1, Math.ceil((Math.hypot(this.vx, this.vz) * dt) / MAX_SLICE));
    for (let i = 0; i < slices; i++) {
      this.x += (this.vx * dt) / slices;
      this.z += (this.vz * dt) / slices;
      for (const { box } of things) pushOut(this, AGENT_RADIUS, box);
    }
  }

  /** Presses the switch, then goes for the gold pyramid. */
  override heuristic(actionsOut: ActionBuffers): void {
    actionsOut.discrete[0] = this.walkTo(this.gold ?? this.switchBox);
  }

  /**
   * A decision of a walker that knows where everything is: it follows the shortest way to
   * `target` around what is solid (a distance map over the room, kept while the target stays),
   * aiming a few cells ahead along it.
   */
  walkTo(target: Box): number {
    if (this.route?.target !== target) this.route = { target, distances: this.distancesTo(target) };
    return steer(this, this.aheadOnRoute(this.route.distances, 4), GAIT, FIXED_DELTA_TIME * DECISION_PERIOD);
  }

  /** The heuristic's distance map: the target and the grid of the room it was made for. */
  private route: { target: Box; distances: Float32Array } | null = null;

  /** The room as a grid of ROUTE_CELL squares, row after row from (-half, -half). */
  private get routeSide(): number {
    return Math.ceil((2 * this.room.half) / ROUTE_CELL);
  }

  /** The column (of x) or row (of z) of the grid a coordinate falls in, clamped to the room. */
  private cellIndex(v: number): number {
    return Math.min(this.routeSide - 1, Math.max(0, Math.floor((v + this.room.half) / ROUTE_CELL)));
  }

  private cellCenter(cell: number): { x: number; z: number } {
    const side = this.routeSide;
    return { x: -this.room.half + ((cell % side) + 0.5) * ROUTE_CELL, z: -this.room.half + (Math.floor(cell / side) + 0.5) * ROUTE_CELL };
  }

  /** Steps (of one cell) from each cell to the cells touching `target`, around the cells too near anything else; Infinity where none lead. */
  private distancesTo(target: Box): Float32Array {
    const side = this.routeSide;
    const blocked = new Uint8Array(side * side);
    for (const { box } of this.things()) {
      if (box !== target) this.forCellsNear(box, AGENT_RADIUS + ROUTE_CELL / 2, (cell) => (blocked[cell] = 1));
    }
    const distances = new Float32Array(side * side).fill(Infinity);
    const queue: number[] = [];
    this.forCellsNear(target, AGENT_RADIUS + ROUTE_CELL, (cell) => {
      if (blocked[cell]) return;
      distances[cell] = 0;
      queue.push(cell);
    });
    for (let head = 0; head < queue.length; head++) {
      const cell = queue[head];
      for (const next of this.neighbors(cell)) {
        if (distances[next] !== Infinity || blocked[next]) continue;
        distances[next] = distances[cell] + 1;
        queue.push(next);
      }
    }
    return distances;
  }

  /** Calls `visit` with every cell of the room whose center lies within `margin` of `box`. */
  private forCellsNear(box: Box, margin: number, visit: (cell: number) => void): void {
    const side = this.routeSide;
    for (let row = this.cellIndex(box.minZ - margin); row <= this.cellIndex(box.maxZ + margin); row++) {
      for (let col = this.cellIndex(box.minX - margin); col <= this.cellIndex(box.maxX + margin); col++) {
        const { x, z } = this.cellCenter(row * side + col);
        if (distanceToBox(box, x, z) <= margin) visit(row * side + col);
      }
    }
  }

  private neighbors(cell: number): number[] {
    const side = this.routeSide;
    const col = cell % side;
    const row = Math.floor(cell / side);
    const out: number[] = [];
    if (col > 0) out.push(cell - 1);
    if (col < side - 1) out.push(cell + 1);
    if (row > 0) out.push(cell - side);
    if (row < side - 1) out.push(cell + side);
    return out;
  }

  /** The center of the cell `steps` cells down the distance map from the agent (from the nearest mapped cell when its own is not). */
  private aheadOnRoute(distances: Float32Array, steps: number): { x: number; z: number } {
    const side = this.routeSide;
    const col = this.cellIndex(this.x);
    const row = this.cellIndex(this.z);
    let cell = row * side + col;
    for (let ring = 1; distances[cell] === Infinity && ring <= 3; ring++) {
      for (let dr = -ring; dr <= ring; dr++) {
        for (let dc = -ring; dc <= ring; dc++) {
          const r = row + dr;
          const c = col + dc;
          if (r >= 0 && r < side && c >= 0 && c < side && distances[r * side + c] < distances[cell]) cell = r * side + c;
        }
      }
    }
    for (let i = 0; i < steps && distances[cell] > 0; i++) {
      const next = this.neighbors(cell).reduce((best, n) => (distances[n] < distances[best] ? n : best), cell);
      if (next === cell) break;
      cell = next;
    }
    return this.cellCenter(cell);
  }
}

// ------------------------------------------------------------------------------------------
// The environment

export const PYRAMIDS: SimDefinition = {
  name: 'Pyramids',
  description: "press the switch, then reach the gold pyramid it raises, with rays in a walled room (Unity's Pyramids example)",
  options: {
    agents: { type: 'string', default: String(DEFAULT_AREAS), description: 'training areas of one agent each (the scene has 16)' },
    'area-scale': { type: 'string', default: '1', description: "the room's lengths times this, from 0.25 to 1 (1: upstream's 99 by 99)" },
    'max-step': { type: 'string', default: String(MAX_STEP), description: "steps before an episode is interrupted (upstream's MaxStep)" },
  },
  create(academy: Academy, options: SimOptionValues, numAreas: number): void {
    const scale = numberOption(options, 'area-scale');
    if (!(scale >= 0.25 && scale <= 1)) {
      throw new Error(`--area-scale needs a number from 0.25 to 1 (below 0.25 a spot cannot hold the switch), got ${scale}.`);
    }
    const maxStep = intOption(options, 'max-step');
    if (maxStep < DECISION_PERIOD) throw new Error(`--max-step needs an integer of at least ${DECISION_PERIOD} (one decision), got ${maxStep}.`);
    const room = new PyramidRoom(scale);
    const count = intOption(options, 'agents') * numAreas;
    for (let i = 0; i < count; i++) academy.addAgent(new PyramidAgent(room, maxStep));
  },
};

if (require.main === module) {
  runEnvironmentMain(PYRAMIDS, process.argv.slice(2)).then((code) => process.exit(code));
}
