#!/usr/bin/env node
/**
 * Sorter, as Unity's Sorter example (Examples/Sorter: SorterAgent.cs, NumberTile.cs and the Area
 * prefab), rebuilt on the floor plane seen from above: an agent that observes a variable number
 * of entities (Unity's BufferSensor) and must visit them in order.
 *
 * Each training area is a round room. Twenty numbered tiles (1 to 20) can stand at its rim, one
 * per slot of 18 degrees: a tile is a block 3.5 wide and 1.52 deep whose center lies 20.5 from the
 * room's center. Every episode draws, in upstream's order, how many tiles show (uniform in
 * 1..num_tiles, num_tiles being the environment parameter the curriculum sets, 8 when the trainer
 * sets none, as the prefab's DefaultMaxNumTiles), which numbers (distinct, uniform), and for each
 * of them in ascending order a free slot. The agent starts at the center, at rest; its facing is
 * kept from the episode before, as upstream resets only position and velocity (the prefab starts it
 * facing -z).
 *
 * Rewards, as upstream: -1/MaxStep at every step it acts (MaxStep 5000, a decision every 5 steps,
 * the action repeated in between); touching the lowest tile not yet visited gives +1 and marks it
 * visited (the last one also ends the episode); touching any other unvisited tile gives -1 and ends
 * the episode. A visited tile stays solid and counts for nothing.
 *
 * Three discrete branches of 3, as SorterAgent.MoveAgent: forward axis (1 forward, 2 backward),
 * right axis (1 right, 2 left; when set it replaces the forward axis), rotation (1 left, 2 right,
 * 4 degrees a step). A move is a velocity change of 2 m/s at every step along the facing the agent
 * had before it turned (ForceMode.VelocityChange); friction (0.6 under Earth's gravity) and the
 * Rigidbody's drag of 4 slow it down; the tiles and the room's wall stop it.
 *
 * Observations, as the prefab's sensors send them, sorted by name as Unity sorts sensors:
 * - BufferSensor [20, 23], described (VARIABLE_SIZE, NONE): one entity per tile showing, in
 *   ascending order, the rest zeros. An entity is upstream's array of 23: 1 at the index of the
 *   tile's number, then at index 20 and 21 the tile's offset from the agent (x, z) over 20, at 22
 *   whether it is visited. Numbers run from 1 to 20, so index 0 is never set and the 20's mark is
 *   overwritten by its x offset, as in upstream's code.
 * - RBSensor (10): the prefab's RigidBodySensorComponent with the agent as its own virtual root:
 *   the body's translation (3) and rotation (4, x y z w) relative to that root, always 0 0 0 and
 *   0 0 0 1, then its velocity in its own frame (right, up, forward).
 * - StackingSensor_size2_VectorSensor_size4 (8): the agent's position over 20 (x, z) and its facing
 *   (x, z), the last 2 decisions oldest first, zeros before an episode's first.
 *
 * What is simpler than Unity's, to keep the world deterministic and cheap:
 * - The agent (a unit cube) is round, of radius 0.5, and the room's wall is the circle the tiles'
 *   outer faces touch (radius 21.26): the prefab's wall is a mesh we do not model.
 * - Touching is contact after the step's motion, resolved in slices so that no tile is tunnelled;
 *   Unity's OnCollisionEnter comes from its physics engine's contacts.
 */
import { Academy, FIXED_DELTA_TIME } from '../sdk/academy';
import { ActionBuffers, Agent, BehaviorParameters, ObservationWriter } from '../sdk/agent';
import { EnvironmentParametersReceiver } from '../sdk/engine-channels';
import { SimDefinition, SimOptionValues, intOption, runEnvironmentMain } from '../sdk/run-environment';
import { FrameStack } from './hallway';
import { Box, Gait, Walker, pushOut, slowDown } from './top-down';

export const MAX_STEP = 5000;
export const DECISION_PERIOD = 5;
/** Upstream's k_HighestTileValue: tiles are numbered 1 to 20, and as many slots ring the room. */
export const HIGHEST_TILE_VALUE = 20;
export const ENTITY_SIZE = HIGHEST_TILE_VALUE + 3;
export const DEFAULT_MAX_NUM_TILES = 8;
export const NUM_TILES_PARAMETER = 'num_tiles';
/** The scene holds one Area. */
const DEFAULT_AREAS = 1;
export const VISIT_REWARD = 1;
export const WRONG_TILE_REWARD = -1;

export const BUFFER_SENSOR_NAME = 'BufferSensor';
export const BODY_SENSOR_NAME = 'RBSensor';
export const BODY_SENSOR_SIZE = 10;
export const VECTOR_FRAME = 4;
export const VECTOR_STACKS = 2;
export const VECTOR_SENSOR_NAME = `StackingSensor_size${VECTOR_STACKS}_VectorSensor_size${VECTOR_FRAME}`;
/** Positions and offsets are observed over this length. */
export const OBSERVATION_SCALE = 20;

// Branches, in the numbering of SorterAgent.MoveAgent.
export const BRANCH_SIZE = 3;
export const FORWARD = 1;
export const BACKWARD = 2;
export const RIGHT = 1;
export const LEFT = 2;
export const TURN_LEFT = 1;
export const TURN_RIGHT = 2;

// The Area prefab.
export const TILE_RADIUS = 20.5;
export const TILE_WIDTH = 3.5;
export const TILE_DEPTH = 1.5204146;
export const WALL_RADIUS = TILE_RADIUS + TILE_DEPTH / 2;
export const SLOT_DEGREES = 360 / HIGHEST_TILE_VALUE;
export const AGENT_RADIUS = 0.5;
export const START_YAW = 180;
/** Motion, from SorterAgent.MoveAgent, the agent's Rigidbody and Unity's default physics. */
const GAIT: Gait = { turnDegreesPerSecond: 200, runSpeed: 2, frictionDeceleration: 0.6 * 9.81, drag: 4 };
/** Motion is resolved in slices no longer than this, so that no tile is tunnelled. */
const MAX_SLICE = AGENT_RADIUS / 2;
/** The heuristic pushes only below this speed, so as to arrive where it aims. */
const HEURISTIC_SPEED = 8;
/** The heuristic's approach point lies this far from the room's center, in front of its tile. */
const APPROACH_RADIUS = 12;
const APPROACH_REACHED = 2;

export function sorterBehavior(): BehaviorParameters {
  return {
    behaviorName: 'Sorter',
    observations: [
      { kind: 'vector', shape: [HIGHEST_TILE_VALUE, ENTITY_SIZE], variableLength: true, name: BUFFER_SENSOR_NAME },
      { kind: 'vector', shape: [BODY_SENSOR_SIZE], name: BODY_SENSOR_NAME },
      { kind: 'vector', shape: [VECTOR_FRAME * VECTOR_STACKS], name: VECTOR_SENSOR_NAME },
    ],
    continuousActions: 0,
    discreteBranches: [BRANCH_SIZE, BRANCH_SIZE, BRANCH_SIZE],
    maxStep: MAX_STEP,
    decisionPeriod: DECISION_PERIOD,
    takeActionsBetweenDecisions: true,
  };
}

/** A tile showing this episode: its number, its slot on the rim, and whether it was visited. */
export interface Tile {
  readonly value: number;
  readonly slot: number;
  visited: boolean;
}

/** Where a slot's tile stands: its center, and its yaw (the direction from the room's center). */
export function slotCenter(slot: number): { x: number; z: number; yaw: number } {
  const yaw = slot * SLOT_DEGREES;
  const a = (yaw * Math.PI) / 180;
  return { x: TILE_RADIUS * Math.sin(a), z: TILE_RADIUS * Math.cos(a), yaw };
}

/** A tile in its own frame: x along the rim, z outward from the room's center. */
const TILE_BOX: Box = {
  minX: -TILE_WIDTH / 2,
  maxX: TILE_WIDTH / 2,
  minZ: TILE_RADIUS - TILE_DEPTH / 2,
  maxZ: TILE_RADIUS + TILE_DEPTH / 2,
};

/**
 * Pushes a round body out of the tile at `slot` (see pushOut), working in the tile's frame.
 * Returns whether they are in contact.
 */
function pushOutOfTile(body: Walker, slot: number): boolean {
  const a = (slot * SLOT_DEGREES * Math.PI) / 180;
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  const local = {
    x: body.x * cos - body.z * sin,
    z: body.x * sin + body.z * cos,
    vx: body.vx * cos - body.vz * sin,
    vz: body.vx * sin + body.vz * cos,
  };
  const touching = pushOut(local, AGENT_RADIUS + 1e-9, TILE_BOX);
  body.x = local.x * cos + local.z * sin;
  body.z = -local.x * sin + local.z * cos;
  body.vx = local.vx * cos + local.vz * sin;
  body.vz = -local.vx * sin + local.vz * cos;
  return touching;
}

/** Keeps a round body inside the room's wall, taking away the velocity that points out of it. */
function keepInside(body: Walker): void {
  const r = Math.hypot(body.x, body.z);
  const limit = WALL_RADIUS - AGENT_RADIUS;
  if (r <= limit) return;
  const nx = body.x / r;
  const nz = body.z / r;
  body.x = nx * limit;
  body.z = nz * limit;
  const outward = body.vx * nx + body.vz * nz;
  if (outward > 0) {
    body.vx -= outward * nx;
    body.vz -= outward * nz;
  }
}

/** The curriculum's num_tiles: the most tiles an episode may show, a whole number from 1 to 20. */
function maxTiles(parameters: EnvironmentParametersReceiver): number {
  const value = Math.trunc(parameters.getWithDefault(NUM_TILES_PARAMETER, DEFAULT_MAX_NUM_TILES));
  if (!(value >= 1 && value <= HIGHEST_TILE_VALUE)) {
    throw new Error(
      `The environment parameter ${NUM_TILES_PARAMETER} is ${value}: Sorter shows from 1 to ${HIGHEST_TILE_VALUE} tiles. ` +
        `Set environment_parameters.${NUM_TILES_PARAMETER} (each lesson's value) within that range.`,
    );
  }
  return value;
}

// ------------------------------------------------------------------------------------------
// The agent

export class SorterAgent extends Agent implements Walker {
  x = 0;
  z = 0;
  /** Facing, in degrees clockwise from +z seen from above (Unity's yaw). */
  yaw = START_YAW;
  vx = 0;
  vz = 0;
  /** The tiles showing, in ascending order of their numbers. */
  tiles: Tile[] = [];
  /** Index in `tiles` of the one to visit next (upstream's m_NextExpectedTileIndex). */
  next = 0;

  private readonly vectorStack = new FrameStack(VECTOR_FRAME, VECTOR_STACKS);
  /** The index of the tile whose approach point the heuristic has reached (-1: none yet). */
  private approached = -1;

  constructor(private readonly parameters: EnvironmentParametersReceiver) {
    super(sorterBehavior());
  }

  /** Draws the episode in upstream's order: how many tiles, which numbers, then their slots. */
  override onEpisodeBegin(): void {
    const count = 1 + this.random.int(maxTiles(this.parameters));
    const values: number[] = [];
    while (values.length < count) {
      const value = 1 + this.random.int(HIGHEST_TILE_VALUE);
      if (!values.includes(value)) values.push(value);
    }
    values.sort((a, b) => a - b);
    const used: number[] = [];
    this.tiles = values.map((value) => {
      let slot: number;
      do slot = this.random.int(HIGHEST_TILE_VALUE);
      while (used.includes(slot));
      used.push(slot);
      return { value, slot, visited: false };
    });
    this.next = 0;
    this.approached = -1;
    this.x = 0;
    this.z = 0;
    this.vx = 0;
    this.vz = 0;
    this.vectorStack.clear();
  }

  override collectObservations(index: number, writer: ObservationWriter): void {
    if (index === 0) this.writeTiles(writer.values);
    else if (index === 1) this.writeBody(writer);
    else {
      const a = (this.yaw * Math.PI) / 180;
      this.vectorStack.push([this.x / OBSERVATION_SCALE, this.z / OBSERVATION_SCALE, Math.sin(a), Math.cos(a)]);
      writer.values.set(this.vectorStack.values);
    }
  }

  /** The BufferSensor's entities, one row of ENTITY_SIZE per tile; the writer's buffer starts zeroed. */
  private writeTiles(out: Float32Array): void {
    this.tiles.forEach((tile, row) => {
      const start = row * ENTITY_SIZE;
      const center = slotCenter(tile.slot);
      out[start + tile.value] = 1;
      out[start + HIGHEST_TILE_VALUE] = (center.x - this.x) / OBSERVATION_SCALE;
      out[start + HIGHEST_TILE_VALUE + 1] = (center.z - this.z) / OBSERVATION_SCALE;
      out[start + HIGHEST_TILE_VALUE + 2] = tile.visited ? 1 : 0;
    });
  }

  /** The RBSensor: the body relative to itself as virtual root, then its velocity in its own frame. */
  private writeBody(writer: ObservationWriter): void {
    for (const v of [0, 0, 0, 0, 0, 0, 1]) writer.add(v);
    const a = (this.yaw * Math.PI) / 180;
    writer.add(this.vx * Math.cos(a) - this.vz * Math.sin(a));
    writer.add(0);
    writer.add(this.vx * Math.sin(a) + this.vz * Math.cos(a));
  }

  override onActionReceived(actions: ActionBuffers): void {
    this.move(actions.discrete);
    this.addReward(-1 / MAX_STEP);
  }

  /** One fixed step: push along the facing, turn, slow down, then slide in slices and touch tiles. */
  move(branches: Int32Array): void {
    const dt = FIXED_DELTA_TIME;
    const a = (this.yaw * Math.PI) / 180;
    let push = { x: 0, z: 0 };
    if (branches[0] === FORWARD) push = { x: Math.sin(a), z: Math.cos(a) };
    else if (branches[0] === BACKWARD) push = { x: -Math.sin(a), z: -Math.cos(a) };
    if (branches[1] === RIGHT) push = { x: Math.cos(a), z: -Math.sin(a) };
    else if (branches[1] === LEFT) push = { x: -Math.cos(a), z: Math.sin(a) };
    if (branches[2] === TURN_LEFT) this.yaw -= GAIT.turnDegreesPerSecond * dt;
    else if (branches[2] === TURN_RIGHT) this.yaw += GAIT.turnDegreesPerSecond * dt;
    this.yaw = ((this.yaw % 360) + 360) % 360;
    this.vx += push.x * GAIT.runSpeed;
    this.vz += push.z * GAIT.runSpeed;
    slowDown(this, GAIT, dt);
    const slices = Math.max(1, Math.ceil((Math.hypot(this.vx, this.vz) * dt) / MAX_SLICE));
    for (let i = 0; i < slices && this.endRequest === null; i++) {
      this.x += (this.vx * dt) / slices;
      this.z += (this.vz * dt) / slices;
      keepInside(this);
      for (const tile of this.tiles) {
        if (pushOutOfTile(this, tile.slot) && !tile.visited) this.touch(tile);
        if (this.endRequest !== null) break;
      }
    }
  }

  /** Upstream's OnCollisionEnter with a tile not visited yet. */
  private touch(tile: Tile): void {
    if (tile !== this.tiles[this.next]) {
      this.addReward(WRONG_TILE_REWARD);
      this.endEpisode();
      return;
    }
    this.addReward(VISIT_REWARD);
    tile.visited = true;
    this.next += 1;
    if (this.next === this.tiles.length) this.endEpisode();
  }

  /**
   * Heads for the next tile: first to a point in front of it, toward the room's center, then
   * straight out to it, so as never to brush another tile on the rim. It turns until facing its aim
   * within a little more than half a decision's turn (so that it never turns back and forth), then
   * pushes while slow.
   */
  override heuristic(actionsOut: ActionBuffers): void {
    actionsOut.clear();
    const target = slotCenter(this.tiles[this.next].slot);
    const inFront = { x: (target.x * APPROACH_RADIUS) / TILE_RADIUS, z: (target.z * APPROACH_RADIUS) / TILE_RADIUS };
    if (Math.hypot(inFront.x - this.x, inFront.z - this.z) < APPROACH_REACHED) this.approached = this.next;
    const aim = this.approached === this.next ? target : inFront;
    const wanted = (Math.atan2(aim.x - this.x, aim.z - this.z) * 180) / Math.PI;
    const error = ((wanted - this.yaw + 540) % 360) - 180;
    const halfTurn = (GAIT.turnDegreesPerSecond * FIXED_DELTA_TIME * DECISION_PERIOD) / 2 + 1;
    if (error > halfTurn) actionsOut.discrete[2] = TURN_RIGHT;
    else if (error < -halfTurn) actionsOut.discrete[2] = TURN_LEFT;
    else if (Math.hypot(this.vx, this.vz) < HEURISTIC_SPEED) actionsOut.discrete[0] = FORWARD;
  }
}

// ------------------------------------------------------------------------------------------
// The environment

export const SORTER: SimDefinition = {
  name: 'Sorter',
  description: "visit numbered tiles in ascending order, seen as a variable number of entities (Unity's Sorter example)",
  options: {
    agents: { type: 'string', default: String(DEFAULT_AREAS), description: 'training areas of one agent each (the scene has 1)' },
  },
  create(academy: Academy, options: SimOptionValues, numAreas: number): void {
    const count = intOption(options, 'agents') * numAreas;
    for (let i = 0; i < count; i++) academy.addAgent(new SorterAgent(academy.environmentParameters));
  },
};

if (require.main === module) {
  runEnvironmentMain(SORTER, process.argv.slice(2)).then((code) => process.exit(code));
}
