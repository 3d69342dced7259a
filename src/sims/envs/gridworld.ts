#!/usr/bin/env node
/**
 * GridWorld, as Unity's GridWorld example (GridAgent.cs, GridArea.cs, Prefabs/Area.prefab):
 * each training area is a square grid (the `gridSize` environment parameter, 5 by default) with
 * one agent, a green "+" goal and a red "x" goal placed on distinct random cells at every episode.
 * A goal signal (a one-hot of 2, observation type GOAL_SIGNAL) says which of the two the agent
 * must reach; the agent sees the grid through a top-down camera (RGB, 84 wide by 64 high,
 * PNG-compressed). One discrete branch: 0 stay, 1 up (+z), 2 down (-z), 3 left (-x), 4 right (+x);
 * moves into the border walls are masked (maskActions, on by default) or, unmasked, do nothing.
 * Rewards: -0.01 a step; reaching the wanted goal sets the step's reward to +1 and the other goal
 * to -1, and either ends the episode. Episodes are cut at 100 steps; a decision every step.
 *
 * The camera is our own small renderer, framed as upstream's agentCam: an orthographic view from
 * above, centered on the grid, whose height spans exactly the grid's rows (orthographic size
 * gridSize / 2); with upstream's 84x64 image the east and west walls show at the sides. The top
 * of the image is +z (up), its right side +x (right). As the agentCam renders without
 * anti-aliasing, each pixel takes the color of the surface under its center.
 */
import { Academy } from '../sdk/academy';
import { ActionBuffers, ActionMask, Agent, BehaviorParameters, ObservationWriter } from '../sdk/agent';
import { EnvironmentParametersReceiver } from '../sdk/engine-channels';
import { SeededRandom } from '../../common/random';
import { SimDefinition, SimOptionValues, intOption, runEnvironmentMain } from '../sdk/run-environment';

// Actions, in upstream's numbering.
export const NO_ACTION = 0;
export const UP = 1;
export const DOWN = 2;
export const LEFT = 3;
export const RIGHT = 4;
const ACTION_COUNT = 5;

/** The two kinds of goal, in the order of the goal signal's one-hot (upstream's GridGoal). */
export enum GridGoal {
  GreenPlus = 0,
  RedEx = 1,
}
const GOAL_KINDS = 2;

export const DEFAULT_GRID_SIZE = 5;
/** Upstream's CameraSensor on the agent (and its agentRenderTexture): 84 wide, 64 high, RGB. */
export const DEFAULT_IMAGE_WIDTH = 84;
export const DEFAULT_IMAGE_HEIGHT = 64;
/** The scene holds nine areas of one agent each. */
const DEFAULT_AREAS = 9;
const MAX_STEP = 100;
const STEP_PENALTY = -0.01;
const WANTED_GOAL_REWARD = 1;
const OTHER_GOAL_REWARD = -1;
/** Below this many pixels a side, the goals' shapes no longer show. */
const MIN_IMAGE_SIDE = 8;

export const CAMERA_SENSOR_NAME = 'CameraSensor';
export const GOAL_SENSOR_NAME = 'VectorSensor';
const GOAL_SIGNAL = 1;

/**
 * The scene's light, as GridWorld.unity has it and as its top faces (all the camera sees) receive
 * it: Unity's Standard shader in the project's gamma color space, a flat ambient of 0.8, the
 * shared Directional_Light (intensity 0.7, color (1, 0.9957, 0.984)) 40 degrees above the
 * horizon, specular highlights and glossy reflections off.
 */
const AMBIENT = 0.8;
const LIGHT = [1, 0.9957, 0.984] as const;
const LIGHT_ELEVATION = (40 * Math.PI) / 180;
const LIGHT_ON_TOP_FACES = 0.7 * Math.sin(LIGHT_ELEVATION);
/** The light's shadows hold back this much of its direct light. */
const SHADOW_STRENGTH = 0.8;
/** Goals and the agent rise this high above the floor (their tops 0.25, the floor -0.5). */
const CASTER_HEIGHT = 0.75;
/**
 * The light shines from +x, -z (its yaw -45 degrees), so shadows fall toward -x, +z: a floor point
 * is in shadow when something stands over the segment from it toward the light, up to this far
 * along each axis (the casters' height over the tangent of the elevation, split over x and z).
 */
const SHADOW_REACH = CASTER_HEIGHT / Math.tan(LIGHT_ELEVATION) / Math.SQRT2;
/** Points tested along that segment: spacing well under a pixel at any image size we accept. */
const SHADOW_SAMPLES = 64;
/** The Standard shader's dielectric reflectance in gamma space; diffuse light gets the rest. */
const DIELECTRIC_SPECULAR = 0.220916301;
/** The scene's indirect specular color, scaled by the shader's surface reduction at smoothness 0.5. */
const INDIRECT_SPECULAR = [0.4497, 0.4998, 0.5756].map((c) => c * (1 - 0.28 * 0.25 * 0.5));

type Rgb = readonly [number, number, number];

const FLOOR_ALBEDO: Rgb = [0.85, 0.85, 0.85];

/**
 * An opaque material's color seen from straight above, in 0..255 (so that it survives the PNG's 8
 * bits exactly): lit albedo, the dielectric's reflection of the surroundings, emission, clamped.
 * `directLight` is the share of the light's direct light that reaches the surface (less in shadow).
 */
function litColor(albedo: Rgb, emission: Rgb = [0, 0, 0], directLight = 1): Rgb {
  const channel = (c: number) => {
    const diffuse = albedo[c] * (1 - DIELECTRIC_SPECULAR) * (AMBIENT + directLight * LIGHT[c] * LIGHT_ON_TOP_FACES);
    const lit = diffuse + DIELECTRIC_SPECULAR * INDIRECT_SPECULAR[c] + emission[c];
    return Math.round(255 * Math.min(1, lit));
  };
  return [channel(0), channel(1), channel(2)];
}

/**
 * The palette. Agent, "+" and "x" are the scene's materials lit as above: AgentBlue (albedo
 * 0.129, 0.588, 0.953), Green (albedo 0.509 gray, emission 0.375, 0.830, 0: a pale lime) and Red
 * (albedo 0.745, 0.227, 0.153); the walls are GrayMiddle (albedo 0.392 gray). The floor's
 * material (guid acba6bf2...) is not among the published ones we could read: a light gray of our
 * choosing, lit the same way, and darker where goals and the agent shade it. The outside, never
 * in view at upstream's sizes, is the agentCam's background color.
 */
export const PALETTE = {
  outside: [49, 77, 121],
  wall: litColor([0.39215687, 0.39215687, 0.39215687]),
  floor: litColor(FLOOR_ALBEDO),
  floorInShadow: litColor(FLOOR_ALBEDO, [0, 0, 0], 1 - SHADOW_STRENGTH),
  agent: litColor([0.12941177, 0.5882353, 0.9529412]),
  greenPlus: litColor([0.509434, 0.509434, 0.509434], [0.3752265, 0.8301887, 0]),
  redEx: litColor([0.74509805, 0.22745098, 0.15294118]),
} as const satisfies Record<string, Rgb>;

export function gridWorldBehavior(imageWidth = DEFAULT_IMAGE_WIDTH, imageHeight = DEFAULT_IMAGE_HEIGHT): BehaviorParameters {
  return {
    behaviorName: 'GridWorld',
    // Unity sorts an agent's sensors by name: CameraSensor, then VectorSensor.
    observations: [
      { kind: 'visual', channels: 3, height: imageHeight, width: imageWidth, compressed: true, name: CAMERA_SENSOR_NAME },
      { kind: 'vector', shape: [GOAL_KINDS], name: GOAL_SENSOR_NAME, observationType: GOAL_SIGNAL },
    ],
    continuousActions: 0,
    discreteBranches: [ACTION_COUNT],
    maxStep: MAX_STEP,
    // GridAgent requests a decision at every fixed update while a trainer is connected.
    decisionPeriod: 1,
  };
}

// ------------------------------------------------------------------------------------------
// The area

export interface GoalOnGrid {
  readonly kind: GridGoal;
  readonly x: number;
  readonly z: number;
}

/** One training area: the grid, its goals and where its agent stands (upstream's GridArea). */
export class GridArea {
  gridSize = DEFAULT_GRID_SIZE;
  goals: GoalOnGrid[] = [];
  agentX = 0;
  agentZ = 0;

  /**
   * Places `plusGoals` "+" goals, `exGoals` "x" goals and the agent on distinct random cells,
   * drawn in that order as upstream's AreaReset draws them; cell n is at x = n / size, z = n % size.
   */
  reset(random: SeededRandom, gridSize: number, plusGoals: number, exGoals: number): void {
    checkLayout(gridSize, plusGoals, exGoals);
    this.gridSize = gridSize;
    const kinds: GridGoal[] = [...Array<GridGoal>(plusGoals).fill(GridGoal.GreenPlus), ...Array<GridGoal>(exGoals).fill(GridGoal.RedEx)];
    const cells: number[] = [];
    const taken = new Set<number>();
    while (cells.length < kinds.length + 1) {
      const cell = random.int(gridSize * gridSize);
      if (taken.has(cell)) continue;
      taken.add(cell);
      cells.push(cell);
    }
    this.goals = kinds.map((kind, i) => ({ kind, x: Math.floor(cells[i] / gridSize), z: cells[i] % gridSize }));
    const agentCell = cells[kinds.length];
    this.agentX = Math.floor(agentCell / gridSize);
    this.agentZ = agentCell % gridSize;
  }

  isInside(x: number, z: number): boolean {
    return x >= 0 && z >= 0 && x < this.gridSize && z < this.gridSize;
  }

  goalAt(x: number, z: number): GridGoal | undefined {
    for (const goal of this.goals) if (goal.x === x && goal.z === z) return goal.kind;
    return undefined;
  }
}

function checkLayout(gridSize: number, plusGoals: number, exGoals: number): void {
  if (!Number.isInteger(gridSize) || gridSize < 1) {
    throw new Error(`GridWorld: the grid size must be a whole number of at least 1, got ${gridSize}.`);
  }
  if (plusGoals < 0 || exGoals < 0 || plusGoals + exGoals + 1 > gridSize * gridSize) {
    throw new Error(
      `GridWorld: ${plusGoals} "+" goals, ${exGoals} "x" goals and the agent do not fit on distinct cells ` +
        `of a ${gridSize}x${gridSize} grid.`,
    );
  }
}

/** Where an action takes the agent from (x, z), walls ignored. */
export function moveTarget(action: number, x: number, z: number): { x: number; z: number } {
  switch (action) {
    case NO_ACTION:
      return { x, z };
    case UP:
      return { x, z: z + 1 };
    case DOWN:
      return { x, z: z - 1 };
    case LEFT:
      return { x: x - 1, z };
    case RIGHT:
      return { x: x + 1, z };
    default:
      throw new Error(`GridWorld: discrete action ${action} does not exist (0 stay, 1 up, 2 down, 3 left, 4 right).`);
  }
}

const MOVES = [UP, DOWN, LEFT, RIGHT];

/**
 * The first move of a shortest walk to a goal of kind `wanted` that never steps on a goal of
 * another kind nor into a wall; NO_ACTION when no such walk exists. Distances come from a
 * breadth-first search outward from the wanted goals.
 */
export function shortestPathAction(area: GridArea, wanted: GridGoal): number {
  const size = area.gridSize;
  const distance = new Int32Array(size * size).fill(-1);
  const queue: number[] = [];
  for (const goal of area.goals) {
    if (goal.kind !== wanted) continue;
    distance[goal.x * size + goal.z] = 0;
    queue.push(goal.x * size + goal.z);
  }
  for (let head = 0; head < queue.length; head++) {
    const cell = queue[head];
    const x = Math.floor(cell / size);
    const z = cell % size;
    for (const move of MOVES) {
      const next = moveTarget(move, x, z);
      if (!area.isInside(next.x, next.z)) continue;
      const index = next.x * size + next.z;
      if (distance[index] !== -1) continue;
      const blocker = area.goalAt(next.x, next.z);
      if (blocker !== undefined && blocker !== wanted) continue;
      distance[index] = distance[cell] + 1;
      queue.push(index);
    }
  }
  const here = distance[area.agentX * size + area.agentZ];
  if (here <= 0) return NO_ACTION;
  for (const move of MOVES) {
    const next = moveTarget(move, area.agentX, area.agentZ);
    if (area.isInside(next.x, next.z) && distance[next.x * size + next.z] === here - 1) return move;
  }
  return NO_ACTION;
}

// ------------------------------------------------------------------------------------------
// The camera

/** Pixels per grid cell, and the world point at the image's center, for a grid and image size. */
export interface CameraFrame {
  readonly pixelsPerCell: number;
  readonly centerX: number;
  readonly centerZ: number;
}

/**
 * Upstream's agentCam: centered over the grid, its orthographic size (half the view's height)
 * gridSize / 2, so the image's height covers the grid's rows exactly. An image taller than wide
 * would cut the grid's sides in Unity; there the width is fitted instead.
 */
export function cameraFrame(gridSize: number, width: number, height: number): CameraFrame {
  return { pixelsPerCell: Math.min(width, height) / gridSize, centerX: (gridSize - 1) / 2, centerZ: (gridSize - 1) / 2 };
}

type Sprite = 'agent' | 'greenPlus' | 'redEx';
const SPRITES: readonly Sprite[] = ['agent', 'greenPlus', 'redEx'];

/**
 * Whether the point (u, v) of a cell, both in [-0.5, 0.5) from its center, is inside a sprite, as
 * the prefabs build them from unit cubes: the agent's visible top is a square ring of four bars
 * 0.2 wide along the cell's edges (the floor shows through its middle; the goal-colored parts
 * below it are hidden from above); the "+" is two bars 1 long and 0.2 wide, edge to edge; the
 * "x" is two such bars turned 45 degrees, so its arms stop short of the cell's corners.
 */
function spriteCovers(sprite: Sprite, u: number, v: number): boolean {
  const au = Math.abs(u);
  const av = Math.abs(v);
  switch (sprite) {
    case 'agent':
      return Math.max(au, av) >= 0.3;
    case 'greenPlus':
      return au <= 0.1 || av <= 0.1;
    case 'redEx': {
      // Along and across each diagonal bar.
      const first = Math.abs(u + v) / Math.SQRT2;
      const second = Math.abs(u - v) / Math.SQRT2;
      return (second <= 0.1 && first <= 0.5) || (first <= 0.1 && second <= 0.5);
    }
  }
}

/**
 * Renders an area as the camera sees it, channel-first [3, height, width] in [0, 1]. The static
 * part (floor, walls, outside) is drawn once; each frame copies it and paints the shadows, then
 * the goals and the agent, from per-cell lists of the pixels each sprite shades and covers.
 * Shadows fall on the floor only: the tops of goals, agent and walls are as high as anything
 * that could shade them. One renderer per grid size.
 */
export class GridRenderer {
  private readonly background: Float32Array;
  /** spritePixels.get(sprite)[x * gridSize + z]: the pixels (row * width + col) the sprite covers there. */
  private readonly spritePixels = new Map<Sprite, Int32Array[]>();
  /** shadowPixels.get(sprite)[x * gridSize + z]: the floor's pixels the sprite there shades. */
  private readonly shadowPixels = new Map<Sprite, Int32Array[]>();
  private readonly plane: number;

  constructor(
    readonly gridSize: number,
    readonly width: number,
    readonly height: number,
  ) {
    this.plane = width * height;
    this.background = new Float32Array(3 * this.plane);
    const frame = cameraFrame(gridSize, width, height);
    const perCell = (): Map<Sprite, number[][]> => new Map(SPRITES.map((s) => [s, Array.from({ length: gridSize * gridSize }, () => [])]));
    const covered = perCell();
    const shaded = perCell();
    for (let row = 0; row < height; row++) {
      // Pixel centers in world units: +z toward the top of the image, +x toward its right.
      const worldZ = frame.centerZ + (height / 2 - (row + 0.5)) / frame.pixelsPerCell;
      const cellZ = Math.floor(worldZ + 0.5);
      for (let col = 0; col < width; col++) {
        const worldX = frame.centerX + (col + 0.5 - width / 2) / frame.pixelsPerCell;
        const cellX = Math.floor(worldX + 0.5);
        const pixel = row * width + col;
        this.paint(this.background, pixel, PALETTE[this.groundAt(cellX, cellZ)]);
        if (cellX < 0 || cellZ < 0 || cellX >= gridSize || cellZ >= gridSize) continue;
        for (const sprite of SPRITES) {
          if (spriteCovers(sprite, worldX - cellX, worldZ - cellZ)) covered.get(sprite)![cellX * gridSize + cellZ].push(pixel);
        }
        this.findShadeOf(pixel, worldX, worldZ, shaded);
      }
    }
    const packed = (cells: number[][]) => cells.map((pixels) => Int32Array.from(pixels));
    for (const sprite of SPRITES) {
      this.spritePixels.set(sprite, packed(covered.get(sprite)!));
      this.shadowPixels.set(sprite, packed(shaded.get(sprite)!));
    }
  }

  /** Draws the area into `out` (3 x height x width floats). */
  render(area: GridArea, out: Float32Array): void {
    out.set(this.background);
    const goalSprite = (goal: GoalOnGrid): Sprite => (goal.kind === GridGoal.GreenPlus ? 'greenPlus' : 'redEx');
    for (const goal of area.goals) this.paintPixels(out, this.shadowPixels, goalSprite(goal), goal.x, goal.z, PALETTE.floorInShadow);
    this.paintPixels(out, this.shadowPixels, 'agent', area.agentX, area.agentZ, PALETTE.floorInShadow);
    for (const goal of area.goals) this.paintPixels(out, this.spritePixels, goalSprite(goal), goal.x, goal.z, PALETTE[goalSprite(goal)]);
    // The agent last: standing on a goal at its episode's end, its ring covers the goal's ends.
    this.paintPixels(out, this.spritePixels, 'agent', area.agentX, area.agentZ, PALETTE.agent);
  }

  /**
   * Records, for the floor pixel over (worldX, worldZ), which sprite in which cell would stand
   * between it and the light (the segment toward the light, in SHADOW_SAMPLES steps).
   */
  private findShadeOf(pixel: number, worldX: number, worldZ: number, shaded: Map<Sprite, number[][]>): void {
    const size = this.gridSize;
    const ownX = Math.floor(worldX + 0.5);
    const ownZ = Math.floor(worldZ + 0.5);
    if (ownX < 0 || ownZ < 0 || ownX >= size || ownZ >= size) return;
    for (let k = 0; k <= SHADOW_SAMPLES; k++) {
      const along = (k / SHADOW_SAMPLES) * SHADOW_REACH;
      const x = worldX + along;
      const z = worldZ - along;
      const cellX = Math.floor(x + 0.5);
      const cellZ = Math.floor(z + 0.5);
      if (cellX < 0 || cellZ < 0 || cellX >= size || cellZ >= size) continue;
      for (const sprite of SPRITES) {
        if (!spriteCovers(sprite, x - cellX, z - cellZ)) continue;
        const pixels = shaded.get(sprite)![cellX * size + cellZ];
        if (pixels[pixels.length - 1] !== pixel) pixels.push(pixel);
      }
    }
  }

  private groundAt(cellX: number, cellZ: number): 'floor' | 'wall' | 'outside' {
    const size = this.gridSize;
    const inRange = (v: number) => v >= -1 && v <= size;
    if (cellX >= 0 && cellZ >= 0 && cellX < size && cellZ < size) return 'floor';
    if (inRange(cellX) && inRange(cellZ)) return 'wall';
    return 'outside';
  }

  private paintPixels(out: Float32Array, lists: Map<Sprite, Int32Array[]>, sprite: Sprite, x: number, z: number, color: Rgb): void {
    const pixels = lists.get(sprite)![x * this.gridSize + z];
    for (let i = 0; i < pixels.length; i++) this.paint(out, pixels[i], color);
  }

  private paint(out: Float32Array, pixel: number, color: Rgb): void {
    out[pixel] = color[0] / 255;
    out[this.plane + pixel] = color[1] / 255;
    out[2 * this.plane + pixel] = color[2] / 255;
  }
}

// ------------------------------------------------------------------------------------------
// The agent

/** What every agent of one environment shares: options, parameters and the renderers. */
export interface GridWorldSettings {
  readonly defaultGridSize: number;
  readonly imageWidth: number;
  readonly imageHeight: number;
  readonly maskActions: boolean;
  readonly parameters: EnvironmentParametersReceiver;
}

export class GridAgent extends Agent {
  readonly area = new GridArea();
  currentGoal = GridGoal.GreenPlus;
  private readonly renderers: Map<number, GridRenderer>;

  constructor(
    private readonly settings: GridWorldSettings,
    renderers: Map<number, GridRenderer> = new Map(),
  ) {
    super(gridWorldBehavior(settings.imageWidth, settings.imageHeight));
    this.renderers = renderers;
  }

  /** As upstream: the area first (gridSize, numPlusGoals, numExGoals read anew), then the goal. */
  override onEpisodeBegin(): void {
    const parameters = this.settings.parameters;
    const gridSize = Math.trunc(parameters.getWithDefault('gridSize', this.settings.defaultGridSize));
    const plusGoals = Math.trunc(parameters.getWithDefault('numPlusGoals', 1));
    const exGoals = Math.trunc(parameters.getWithDefault('numExGoals', 1));
    this.area.reset(this.random, gridSize, plusGoals, exGoals);
    this.currentGoal = this.random.int(GOAL_KINDS) as GridGoal;
  }

  override collectObservations(index: number, writer: ObservationWriter): void {
    if (index === 0) this.renderer().render(this.area, writer.values);
    else writer.addOneHot(this.currentGoal, GOAL_KINDS);
  }

  override writeDiscreteActionMask(mask: ActionMask): void {
    if (!this.settings.maskActions) return;
    const last = this.area.gridSize - 1;
    if (this.area.agentX === 0) mask.setActionEnabled(0, LEFT, false);
    if (this.area.agentX === last) mask.setActionEnabled(0, RIGHT, false);
    if (this.area.agentZ === 0) mask.setActionEnabled(0, DOWN, false);
    if (this.area.agentZ === last) mask.setActionEnabled(0, UP, false);
  }

  override onActionReceived(actions: ActionBuffers): void {
    this.addReward(STEP_PENALTY);
    const target = moveTarget(actions.discrete[0], this.area.agentX, this.area.agentZ);
    // A wall stops the move; the step still costs its penalty.
    if (!this.area.isInside(target.x, target.z)) return;
    this.area.agentX = target.x;
    this.area.agentZ = target.z;
    const reached = this.area.goalAt(target.x, target.z);
    if (reached === undefined) return;
    // SetReward, as upstream: the goal's reward replaces this step's penalty.
    this.setReward(reached === this.currentGoal ? WANTED_GOAL_REWARD : OTHER_GOAL_REWARD);
    this.endEpisode();
  }

  /** Walks a shortest path to the wanted goal, around the other goal and never into a wall. */
  override heuristic(actionsOut: ActionBuffers): void {
    actionsOut.discrete[0] = shortestPathAction(this.area, this.currentGoal);
  }

  private renderer(): GridRenderer {
    const size = this.area.gridSize;
    let renderer = this.renderers.get(size);
    if (renderer === undefined) {
      renderer = new GridRenderer(size, this.settings.imageWidth, this.settings.imageHeight);
      this.renderers.set(size, renderer);
    }
    return renderer;
  }
}

// ------------------------------------------------------------------------------------------
// The environment

/** `--image-size`: "N" for N x N, or "WxH" (width by height). */
export function parseImageSize(raw: unknown): { width: number; height: number } {
  const match = typeof raw === 'string' ? /^(\d+)(?:x(\d+))?$/i.exec(raw.trim()) : null;
  if (match === null) {
    throw new Error(`--image-size needs N or WIDTHxHEIGHT (upstream's camera is 84x64), got ${JSON.stringify(raw)}.`);
  }
  const width = Number(match[1]);
  const height = match[2] === undefined ? width : Number(match[2]);
  if (width < MIN_IMAGE_SIDE || height < MIN_IMAGE_SIDE) {
    throw new Error(`--image-size: each side needs at least ${MIN_IMAGE_SIDE} pixels, got ${width}x${height}.`);
  }
  return { width, height };
}

export const GRIDWORLD: SimDefinition = {
  name: 'GridWorld',
  description: 'reach the "+" or the "x" the goal signal asks for, seen from above (Unity\'s GridWorld example)',
  options: {
    agents: { type: 'string', default: String(DEFAULT_AREAS), description: 'training areas of one agent each (the scene has 9)' },
    'grid-size': {
      type: 'string',
      default: String(DEFAULT_GRID_SIZE),
      description: 'cells a side when the trainer sets no gridSize environment parameter',
    },
    'image-size': {
      type: 'string',
      default: `${DEFAULT_IMAGE_WIDTH}x${DEFAULT_IMAGE_HEIGHT}`,
      description: 'camera image, N or WIDTHxHEIGHT pixels',
    },
    'no-masks': { type: 'boolean', default: false, description: 'turn action masking off (maskActions)' },
  },
  create(academy: Academy, options: SimOptionValues, numAreas: number): void {
    const { width, height } = parseImageSize(options['image-size']);
    const settings: GridWorldSettings = {
      defaultGridSize: intOption(options, 'grid-size'),
      imageWidth: width,
      imageHeight: height,
      maskActions: options['no-masks'] !== true,
      parameters: academy.environmentParameters,
    };
    checkLayout(settings.defaultGridSize, 1, 1);
    const renderers = new Map<number, GridRenderer>();
    const count = intOption(options, 'agents') * numAreas;
    for (let i = 0; i < count; i++) academy.addAgent(new GridAgent(settings, renderers));
  },
};

if (require.main === module) {
  runEnvironmentMain(GRIDWORLD, process.argv.slice(2)).then((code) => process.exit(code));
}
