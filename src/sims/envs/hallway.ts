#!/usr/bin/env node
/**
 * Hallway, as Unity's Hallway example (Examples/Hallway: HallwayAgent.cs, the SymbolFinderArea
 * prefab, the Hallway scene and its HallwaySettings), rebuilt on the floor plane seen from above.
 *
 * Each training area is a walled corridor 19 wide and 49.5 long (x across, z along). Near the
 * middle stands a block showing a symbol, O or X, drawn anew every episode; at the far end lie two
 * goals, an O and an X, whose sides (x = -7 or +7) are drawn anew too. The agent starts in the near
 * half facing any way; it must look at the symbol, then touch the goal that bears the same symbol.
 *
 * Rewards, as upstream: -1/MaxStep at every step it acts; touching the matching goal sets the
 * reward to +1, the other goal to -0.1, and either ends the episode. MaxStep is 3000 and the agent
 * asks for a decision every 6 steps, repeating its action in between (the prefab's
 * DecisionRequester), so an episode holds at most 500 decisions.
 *
 * One discrete branch of 5: 0 nothing, 1 forward, 2 backward, 3 turn right, 4 turn left. A move is
 * a velocity change of 1.5 m/s along the agent's facing at every step (agentRunSpeed with
 * ForceMode.VelocityChange); a turn is 150 degrees a second, 3 degrees a step. Friction (0.6
 * under twice Earth's gravity, as the scene sets) and drag 2 slow the agent down, so that it
 * slides to a stop when it stops pushing, and walls and the symbol block stop it.
 *
 * Observations, as the prefab's sensors send them, sorted by name as Unity sorts sensors:
 * - a ray perception sensor stacked 3 deep: 5 sphere casts (radius 0.5, length 12) at 90, 55,
 *   125, 20 and 160 degrees (forward, then alternately right and left up to 70 degrees), each
 *   written as a one-hot of the tag it hit among symbol_O_Goal, symbol_X_Goal, symbol_O, symbol_X
 *   and wall, then 1 if it hit nothing, then the distance it travelled over its length:
 *   5 x (5 + 2) = 35 floats a frame, 105 with the stack;
 * - the agent's own vector observation, StepCount / MaxStep, stacked 3 deep: 3 floats.
 * 108 floats in all. Stacks hold the latest frames oldest first, zeros before an episode's first.
 */
import { Academy, FIXED_DELTA_TIME } from '../sdk/academy';
import { ActionBuffers, Agent, BehaviorParameters, ObservationWriter } from '../sdk/agent';
import { SimDefinition, SimOptionValues, intOption, runEnvironmentMain } from '../sdk/run-environment';
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

export const MAX_STEP = 3000;
export const DECISION_PERIOD = 6;
/** The scene holds 16 SymbolFinderAreas of one agent each. */
const DEFAULT_AREAS = 16;
export const CORRECT_GOAL_REWARD = 1;
export const WRONG_GOAL_REWARD = -0.1;

/** The two symbols, in the order of the sensor's tags (symbol_O before symbol_X). */
export enum HallwaySymbol {
  O = 0,
  X = 1,
}

/** What a ray can hit, in the order of the prefab's detectable tags; NONE hits nothing. */
export enum RayTag {
  SymbolOGoal = 0,
  SymbolXGoal = 1,
  SymbolO = 2,
  SymbolX = 3,
  Wall = 4,
}
export const DETECTABLE_TAGS = ['symbol_O_Goal', 'symbol_X_Goal', 'symbol_O', 'symbol_X', 'wall'] as const;

// The ray perception sensor of the prefab.
export const RAYS_PER_DIRECTION = 2;
export const MAX_RAY_DEGREES = 70;
export const RAY_LENGTH = 12;
export const CAST_RADIUS = 0.5;
export const OBSERVATION_STACKS = 3;
export const RAY_ANGLES: readonly number[] = rayPerceptionAngles(RAYS_PER_DIRECTION, MAX_RAY_DEGREES);
export const RAY_FRAME = RAY_ANGLES.length * (DETECTABLE_TAGS.length + 2);
export const VECTOR_FRAME = 1;

export const RAY_SENSOR_NAME = `StackingSensor_size${OBSERVATION_STACKS}_RayPerceptionSensor`;
export const VECTOR_SENSOR_NAME = `StackingSensor_size${OBSERVATION_STACKS}_VectorSensor_size${VECTOR_FRAME}`;

// The area, from the prefab: walls 0.5 thick around a 20 by 50 floor.
export const HALF_WIDTH = 9.5;
export const HALF_LENGTH = 24.75;
const WALL_THICKNESS = 0.5;
/** The agent is a unit cube; seen from above we take it round. */
export const AGENT_RADIUS = 0.5;
/** The symbol block: 4 wide, 1 deep. */
const SYMBOL_WIDTH = 4;
const SYMBOL_DEPTH = 1;
/** The goals: a 4 by 4 pad at z = 22.29 whose symbol board stands against the end wall. */
export const GOAL_X = 7;
const GOAL_Z = 22.29;
const GOAL_SIZE = 4;

/** Motion, from HallwayAgent.MoveAgent, the agent's Rigidbody and the scene's settings (gravity twice Earth's). */
const GAIT: Gait = { turnDegreesPerSecond: 150, runSpeed: 1.5, frictionDeceleration: 0.6 * 9.81 * 2, drag: 2 };

const WALLS: readonly Box[] = [
  { minX: -HALF_WIDTH - WALL_THICKNESS, maxX: -HALF_WIDTH, minZ: -HALF_LENGTH - WALL_THICKNESS, maxZ: HALF_LENGTH + WALL_THICKNESS },
  { minX: HALF_WIDTH, maxX: HALF_WIDTH + WALL_THICKNESS, minZ: -HALF_LENGTH - WALL_THICKNESS, maxZ: HALF_LENGTH + WALL_THICKNESS },
  { minX: -HALF_WIDTH, maxX: HALF_WIDTH, minZ: -HALF_LENGTH - WALL_THICKNESS, maxZ: -HALF_LENGTH },
  { minX: -HALF_WIDTH, maxX: HALF_WIDTH, minZ: HALF_LENGTH, maxZ: HALF_LENGTH + WALL_THICKNESS },
];

export function hallwayBehavior(): BehaviorParameters {
  return {
    behaviorName: 'Hallway',
    observations: [
      { kind: 'vector', shape: [RAY_FRAME * OBSERVATION_STACKS], name: RAY_SENSOR_NAME },
      { kind: 'vector', shape: [VECTOR_FRAME * OBSERVATION_STACKS], name: VECTOR_SENSOR_NAME },
    ],
    continuousActions: 0,
    discreteBranches: [WALK_ACTIONS],
    maxStep: MAX_STEP,
    decisionPeriod: DECISION_PERIOD,
    takeActionsBetweenDecisions: true,
  };
}

/** The last `stacks` frames of a sensor, oldest first (Unity's StackingSensor). */
export class FrameStack {
  readonly values: Float32Array;

  constructor(
    readonly frameSize: number,
    stacks: number,
  ) {
    this.values = new Float32Array(frameSize * stacks);
  }

  push(frame: ArrayLike<number>): void {
    this.values.copyWithin(0, this.frameSize);
    this.values.set(frame, this.values.length - this.frameSize);
  }

  clear(): void {
    this.values.fill(0);
  }
}

export interface Goal {
  readonly symbol: HallwaySymbol;
  readonly box: Box;
}

// ------------------------------------------------------------------------------------------
// The agent

export class HallwayAgent extends Agent {
  /** The symbol shown this episode: the goal to touch (upstream's m_Selection). */
  selection = HallwaySymbol.O;
  /** Center of the symbol block that shows. */
  symbolX = 0;
  symbolZ = 0;
  goals: Goal[] = [];
  x = 0;
  z = 0;
  /** Facing, in degrees clockwise from +z seen from above (Unity's yaw). */
  yaw = 0;
  vx = 0;
  vz = 0;
  /** The goal touched at the last step, if any. */
  touched: HallwaySymbol | null = null;

  private readonly rays = new FrameStack(RAY_FRAME, OBSERVATION_STACKS);
  private readonly stepFractions = new FrameStack(VECTOR_FRAME, OBSERVATION_STACKS);
  private readonly rayFrame = new Float32Array(RAY_FRAME);

  constructor() {
    super(hallwayBehavior());
  }

  /** Draws the episode in upstream's order: the symbol, the agent's pose, then the goals' sides. */
  override onEpisodeBegin(): void {
    this.selection = this.random.int(2) as HallwaySymbol;
    if (this.selection === HallwaySymbol.O) {
      // Upstream moves the O block sideways too, and the X block not: kept as it is.
      this.symbolX = this.random.range(-3, 3);
      this.symbolZ = this.random.range(-5, 5);
      this.random.range(-5, 5); // where the hidden X block would go
    } else {
      this.random.range(-5, 5); // where the hidden O block would go
      this.symbolX = 0;
      this.symbolZ = this.random.range(-5, 5);
    }
    this.x = this.random.range(-3, 3);
    this.z = -15 + this.random.range(-5, 5);
    this.yaw = this.random.range(0, 360);
    this.vx = 0;
    this.vz = 0;
    this.touched = null;
    const oOnRight = this.random.int(2) === 0;
    this.goals = [
      { symbol: HallwaySymbol.O, box: goalBox(oOnRight ? GOAL_X : -GOAL_X) },
      { symbol: HallwaySymbol.X, box: goalBox(oOnRight ? -GOAL_X : GOAL_X) },
    ];
    this.rays.clear();
    this.stepFractions.clear();
  }

  get symbolBox(): Box {
    return boxAround(this.symbolX, this.symbolZ, SYMBOL_WIDTH, SYMBOL_DEPTH);
  }

  goalOf(symbol: HallwaySymbol): Goal {
    return this.goals.find((g) => g.symbol === symbol)!;
  }

  override collectObservations(index: number, writer: ObservationWriter): void {
    if (index === 0) {
      this.perceive(this.rayFrame);
      this.rays.push(this.rayFrame);
      writer.values.set(this.rays.values);
    } else {
      this.stepFractions.push([this.stepCount / MAX_STEP]);
      writer.values.set(this.stepFractions.values);
    }
  }

  /** One frame of the ray sensor, as RayPerceptionSensor writes it. */
  perceive(out: Float32Array): void {
    const seen: TaggedBox[] = [
      ...this.solids(),
      ...this.goals.map((goal) => ({ box: goal.box, tag: goal.symbol === HallwaySymbol.O ? RayTag.SymbolOGoal : RayTag.SymbolXGoal })),
    ];
    RAY_ANGLES.forEach((angle, ray) => {
      const hit = castRay(this.x, this.z, rayDirection(this.yaw, angle), CAST_RADIUS, RAY_LENGTH, seen);
      writeRay(out, ray, DETECTABLE_TAGS.length, hit);
    });
  }

  /** What blocks the agent: the walls and the symbol block that shows. */
  private solids(): TaggedBox[] {
    const symbolTag = this.selection === HallwaySymbol.O ? RayTag.SymbolO : RayTag.SymbolX;
    return [...WALLS.map((box) => ({ box, tag: RayTag.Wall })), { box: this.symbolBox, tag: symbolTag }];
  }

  override onActionReceived(actions: ActionBuffers): void {
    this.addReward(-1 / MAX_STEP);
    this.move(actions.discrete[0]);
    if (this.touched === null) return;
    // SetReward, as upstream: the goal's reward replaces what this decision gathered so far.
    this.setReward(this.touched === this.selection ? CORRECT_GOAL_REWARD : WRONG_GOAL_REWARD);
    this.endEpisode();
  }

  /** One fixed step of motion: turn or push, slow down, slide, stop at what is solid, touch goals. */
  move(action: number): void {
    const dt = FIXED_DELTA_TIME;
    walk(this, action, GAIT, dt);
    this.x += this.vx * dt;
    this.z += this.vz * dt;
    for (const { box } of this.solids()) pushOut(this, AGENT_RADIUS, box);
    for (const goal of this.goals) {
      if (distanceToBox(goal.box, this.x, this.z) <= AGENT_RADIUS + 1e-9) this.touched = goal.symbol;
    }
  }

  /** Walks to the goal that matches the symbol. */
  override heuristic(actionsOut: ActionBuffers): void {
    actionsOut.discrete[0] = this.walkTo(this.selection);
  }

  /**
   * A decision of a walker that knows where everything is: first to the goal's lane beside the
   * symbol block (x = +-7, level with the block), then straight along the lane to the goal.
   */
  walkTo(symbol: HallwaySymbol): number {
    const goal = this.goalOf(symbol).box;
    const laneX = (goal.minX + goal.maxX) / 2;
    const beside = this.z < this.symbolZ - 1 && Math.abs(this.x - laneX) > 1;
    const target = beside ? { x: laneX, z: this.symbolZ } : { x: laneX, z: goal.minZ + 1 };
    return steer(this, target, GAIT, FIXED_DELTA_TIME * DECISION_PERIOD);
  }
}

/** A goal seen from above: its pad, and behind it its symbol board up to the end wall. */
export function goalBox(centerX: number): Box {
  return { minX: centerX - GOAL_SIZE / 2, maxX: centerX + GOAL_SIZE / 2, minZ: GOAL_Z - GOAL_SIZE / 2, maxZ: HALF_LENGTH };
}

// ------------------------------------------------------------------------------------------
// The environment

export const HALLWAY: SimDefinition = {
  name: 'Hallway',
  description: 'see the symbol, then touch the goal that bears it, with rays in a corridor (Unity\'s Hallway example)',
  options: {
    agents: { type: 'string', default: String(DEFAULT_AREAS), description: 'training areas of one agent each (the scene has 16)' },
  },
  create(academy: Academy, options: SimOptionValues, numAreas: number): void {
    const count = intOption(options, 'agents') * numAreas;
    for (let i = 0; i < count; i++) academy.addAgent(new HallwayAgent());
  },
};

if (require.main === module) {
  runEnvironmentMain(HALLWAY, process.argv.slice(2)).then((code) => process.exit(code));
}
