/**
 * Visual3DBall: 3DBall's game seen through a camera. Over the protocol, the built executable runs
 * as a child process and talks real gRPC through UnityEnvironment, as a Unity build would; in
 * process, the camera alone (what it shows as the cube tilts and the ball moves) and the game
 * beside 3DBall's (the same episodes for the same seed and actions).
 */
import { execFile } from 'child_process';
import { createHash } from 'crypto';
import * as path from 'path';
import { SeededRandom } from '../../src/common/random';
import { readDemoFile } from '../../src/communicator/demo-file';
import { DimensionProperty, ObservationType } from '../../src/env/behavior-spec';
import { UnityEnvironment, UnityEnvironmentOptions } from '../../src/env/unity-environment';
import { Academy, Brain, Decision, InfoBatch } from '../../src/sims/sdk/academy';
import { HeuristicBrain } from '../../src/sims/sdk/brains';
import { createBall3D } from '../../src/sims/envs/ball3d';
import { Ball3DCamera } from '../../src/sims/envs/ball3d-camera';
import { Ball3DWorld, PLATFORM_HALF_SIZE } from '../../src/sims/envs/ball3d-physics';
import { createVisual3DBall, visual3DBallVariant } from '../../src/sims/envs/visual3dball';
import { closeOpenedEnvironments, openBuiltEnvironment } from '../helpers/environments';
import { ROOT, tempDir } from '../helpers/paths';

const VISUAL3DBALL_ENV = path.join(ROOT, 'dist', 'sims', 'envs', 'visual3dball.js');
const BEHAVIOR = 'Visual3DBall';
const AGENTS = 8;
const SIZE = 84;
const PLANE = SIZE * SIZE;
const IMAGE = 3 * PLANE;
/** The prefab's ObservationStacks: each observation holds the last 4 frames, oldest first. */
const STACKS = 4;

/** Frame `k` (0: oldest) of a stacked observation. */
function frame(stacked: Float32Array, k: number): Float32Array {
  return stacked.subarray(k * IMAGE, (k + 1) * IMAGE);
}
const STAY = Math.fround(0.1);

async function launch(args: string[] = [], options: Partial<UnityEnvironmentOptions> = {}): Promise<UnityEnvironment> {
  const env = await openBuiltEnvironment(VISUAL3DBALL_ENV, args, { timeoutWait: 20, ...options });
  await env.reset();
  return env;
}

afterEach(closeOpenedEnvironments);

function runExecutable(args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [VISUAL3DBALL_ENV, ...args], (error, _stdout, stderr) =>
      resolve({ code: error ? (error.code as number) : 0, stderr }),
    );
  });
}

// ---------------------------------------------------------------------------------------------
// Reading images, by color alone: black background, a blue cube with a paler top, an orange ball

type Kind = 'background' | 'side' | 'top' | 'ball';

function kindAt(image: Float32Array, row: number, col: number): Kind {
  const pixel = row * SIZE + col;
  const r = image[pixel];
  const g = image[PLANE + pixel];
  const b = image[2 * PLANE + pixel];
  if (r + g + b < 0.02) return 'background';
  if (r > b) return 'ball';
  return r > 0.2 ? 'top' : 'side';
}

function pixelsOf(image: Float32Array, kind: Kind): Array<{ row: number; col: number }> {
  const found: Array<{ row: number; col: number }> = [];
  for (let row = 0; row < SIZE; row++) for (let col = 0; col < SIZE; col++) if (kindAt(image, row, col) === kind) found.push({ row, col });
  return found;
}

function centroid(pixels: Array<{ row: number; col: number }>): { row: number; col: number } {
  expect(pixels.length).toBeGreaterThan(0);
  return {
    row: pixels.reduce((sum, p) => sum + p.row, 0) / pixels.length,
    col: pixels.reduce((sum, p) => sum + p.col, 0) / pixels.length,
  };
}

/** The first row, from the top, where column `col` shows anything. */
function firstShownRow(image: Float32Array, col: number): number {
  for (let row = 0; row < SIZE; row++) if (kindAt(image, row, col) !== 'background') return row;
  return SIZE;
}

function differingPixels(a: Float32Array, b: Float32Array): number {
  let count = 0;
  for (let p = 0; p < PLANE; p++) {
    if (a[p] !== b[p] || a[PLANE + p] !== b[PLANE + p] || a[2 * PLANE + p] !== b[2 * PLANE + p]) count += 1;
  }
  return count;
}

/** One world of one agent, posed, and its picture. */
function picture(pose: { aboutX?: number; aboutZ?: number; ball: [number, number, number] }, camera = new Ball3DCamera()): Float32Array {
  const world = new Ball3DWorld(1);
  world.setTilt(0, pose.aboutX ?? 0, pose.aboutZ ?? 0);
  world.placeBall(0, ...pose.ball);
  const image = new Float32Array(IMAGE);
  camera.render(world, 0, image);
  return image;
}

/** Where the ball hides: at the cube's centre, inside it. */
const HIDDEN: [number, number, number] = [0, 0, 0];
const ON_TOP = PLATFORM_HALF_SIZE + 0.5;

describe('Visual3DBall: the session a trainer sees', () => {
  it('shows an 84x84 RGB camera with its last 4 frames stacked (channel-first, PNG), 2 continuous actions, 8 agents, a decision every 5 steps', async () => {
    const env = await launch([], { seed: 3 });
    expect(env.name).toBe('Visual3DBall');
    expect([...env.behaviorSpecs.keys()]).toEqual([BEHAVIOR]);
    const spec = env.behaviorSpecs.get(BEHAVIOR)!;
    expect(spec.observationSpecs).toEqual([
      {
        shape: [STACKS * 3, SIZE, SIZE],
        dimensionProperty: [DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE],
        observationType: ObservationType.DEFAULT,
        name: 'CameraSensor',
      },
    ]);
    expect(spec.actionSpec.continuousSize).toBe(2);
    expect(spec.actionSpec.discreteBranches).toEqual([]);

    const [first, noneEnded] = env.getSteps(BEHAVIOR);
    expect(first.length).toBe(AGENTS);
    expect(noneEnded.length).toBe(0);
    for (let row = 0; row < AGENTS; row++) {
      const stacked = first.observation(0, row);
      expect(stacked.length).toBe(STACKS * IMAGE);
      // The episode's first frame is the newest; the older ones are empty.
      expect(stacked.subarray(0, (STACKS - 1) * IMAGE).every((v) => v === 0)).toBe(true);
      const image = frame(stacked, STACKS - 1);
      // Came through 8-bit PNG: every value is a whole number of 255ths in [0, 1].
      expect(image.every((v) => v >= 0 && v <= 1 && Math.abs(v * 255 - Math.round(v * 255)) < 1e-3)).toBe(true);
      // The cube's top and near faces, the ball dropped above it, the black background around.
      for (const kind of ['background', 'side', 'top', 'ball'] as const) expect(pixelsOf(image, kind).length).toBeGreaterThan(10);
    }

    // One exchange later, five fixed steps have passed: the balls fell (each image's ball lower) and
    // each step set the reward to 0.1.
    env.setActions(BEHAVIOR, { continuous: new Float32Array(2 * AGENTS) });
    await env.step();
    const [second] = env.getSteps(BEHAVIOR);
    expect(Array.from(second.agentId)).toEqual(Array.from(first.agentId));
    expect(Array.from(second.reward)).toEqual(new Array(AGENTS).fill(STAY));
    for (let row = 0; row < AGENTS; row++) {
      // The stack moved one frame on: the last decision's newest frame is now the one before.
      expect(Array.from(frame(second.observation(0, row), STACKS - 2))).toEqual(Array.from(frame(first.observation(0, row), STACKS - 1)));
      expect(second.observation(0, row).subarray(0, (STACKS - 2) * IMAGE).every((v) => v === 0)).toBe(true);
      const before = centroid(pixelsOf(frame(first.observation(0, row), STACKS - 1), 'ball'));
      const after = centroid(pixelsOf(frame(second.observation(0, row), STACKS - 1), 'ball'));
      expect(after.row).toBeGreaterThan(before.row);
    }
  });

  it('has --agents per area, times the areas the trainer asks for, and refuses a bad count', async () => {
    const env = await launch(['--agents', '3'], { numAreas: 2 });
    expect(env.getSteps(BEHAVIOR)[0].length).toBe(6);
    const bad = await runExecutable(['--heuristic', '--agents', '0']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--agents needs 1 or more, got 0');
  });

  it('sends what the world renders in process for the same seed, to the 8 bits of the PNG', async () => {
    const seed = 17;
    const env = await launch([], { seed });
    const academy = new Academy();
    academy.seed(seed);
    createVisual3DBall(academy, AGENTS);
    let seen: Float32Array | undefined;
    academy.addBatchListener((batches) => {
      seen ??= batches.get(BEHAVIOR)!.observations[0].slice();
    });
    academy.reset();
    await academy.step(new HeuristicBrain());
    const [decision] = env.getSteps(BEHAVIOR);
    const sent = decision.obs[0];
    expect(sent.length).toBe(AGENTS * STACKS * IMAGE);
    let mismatches = 0;
    for (let i = 0; i < sent.length; i++) if (Math.round(sent[i] * 255) !== Math.round(seen![i] * 255)) mismatches += 1;
    expect(mismatches).toBe(0);
  });

  it('replays the same images for the same seed and actions, and others for another seed', async () => {
    const play = async (seed: number): Promise<string[]> => {
      const env = await launch(['--agents', '2'], { seed });
      const choose = new SeededRandom(5);
      const trace: string[] = [];
      for (let decision = 0; decision < 40; decision++) {
        const [decisionSteps, terminal] = env.getSteps(BEHAVIOR);
        const digest = createHash('sha256');
        for (const array of [decisionSteps.agentId, decisionSteps.reward, decisionSteps.obs[0], terminal.agentId, terminal.reward, terminal.obs[0]]) {
          digest.update(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
        }
        trace.push(digest.digest('hex'));
        env.setActions(BEHAVIOR, { continuous: Float32Array.from({ length: 2 * decisionSteps.length }, () => choose.range(-1, 1)) });
        await env.step();
      }
      await env.close();
      return trace;
    };
    const first = await play(8);
    const again = await play(8);
    const other = await play(9);
    expect(again).toEqual(first);
    expect(other[0]).not.toEqual(first[0]);
  });

  it('plays alone under 3DBall\'s balancer with --heuristic, and records PNG images with --record', async () => {
    const demoPath = path.join(tempDir('visual3dball-demo'), 'heuristic.demo');
    const result = await runExecutable(['--heuristic', '--steps', '51', '--seed', '2', '--record', demoPath]);
    expect(result.code).toBe(0);
    const demo = readDemoFile(demoPath);
    // The first agent's decisions at steps 1, 6, ..., 51.
    expect(demo.records).toHaveLength(11);
    expect(demo.records.slice(1).map((r) => r.agent_info?.reward)).toEqual(new Array(10).fill(STAY));
    const observation = demo.records[0].agent_info!.observations![0];
    expect(observation.shape).toEqual([STACKS * 3, SIZE, SIZE]);
    expect(observation.compression_type).toBe(1);
    // One PNG per frame, back to back, and the channel each of their channels feeds.
    const bytes = Buffer.from(observation.compressed_data!);
    const signatures = [...bytes.toString('latin1').matchAll(/\x89PNG\r\n\x1a\n/g)].map((m) => m.index);
    expect(signatures).toHaveLength(STACKS);
    expect(signatures[0]).toBe(0);
    expect(observation.compressed_channel_mapping).toEqual(Array.from({ length: STACKS * 3 }, (_, k) => k));
  });
});

describe('Visual3DBall: the camera', () => {
  it('draws the same image for the same pose, every time', () => {
    const pose = { aboutX: 4, aboutZ: -7, ball: [0.7, ON_TOP, -0.4] as [number, number, number] };
    const camera = new Ball3DCamera();
    expect(differingPixels(picture(pose, camera), picture(pose, camera))).toBe(0);
    expect(differingPixels(picture(pose, camera), picture(pose))).toBe(0);
  });

  it('shows a turn about z as a slanted top face: the side that goes down shows lower', () => {
    const flat = picture({ ball: HIDDEN });
    const left = 30;
    const right = SIZE - 1 - left;
    expect(firstShownRow(flat, left)).toBe(firstShownRow(flat, right));
    // A positive turn about z lowers the -x side (the ball rolls towards -x): the far edge of the
    // top face runs down to the left of the image (the camera looks along +z, +x to the right).
    const turned = picture({ aboutZ: 10, ball: HIDDEN });
    expect(firstShownRow(turned, left)).toBeGreaterThan(firstShownRow(turned, right) + 2);
    const back = picture({ aboutZ: -10, ball: HIDDEN });
    expect(firstShownRow(back, right)).toBeGreaterThan(firstShownRow(back, left) + 2);
    expect(differingPixels(flat, turned)).toBeGreaterThan(0.05 * PLANE);
  });

  it('shows a turn about x as a top face seen flatter or fuller', () => {
    const flat = pixelsOf(picture({ ball: HIDDEN }), 'top').length;
    // A positive turn about x lowers the +z side, away from the camera: the top face turns
    // away and shows smaller; the other way it turns towards the camera and shows larger.
    const away = pixelsOf(picture({ aboutX: 10, ball: HIDDEN }), 'top').length;
    const towards = pixelsOf(picture({ aboutX: -10, ball: HIDDEN }), 'top').length;
    expect(away).toBeLessThan(0.8 * flat);
    expect(towards).toBeGreaterThan(1.1 * flat);
  });

  it('follows the ball: right for +x, up the image for +z (farther) and for +y (higher)', () => {
    const at = (x: number, y: number, z: number) => centroid(pixelsOf(picture({ ball: [x, y, z] }), 'ball'));
    const centre = at(0, ON_TOP, 0);
    expect(at(1.5, ON_TOP, 0).col).toBeGreaterThan(centre.col + 5);
    expect(at(-1.5, ON_TOP, 0).col).toBeLessThan(centre.col - 5);
    expect(at(0, ON_TOP, 1.5).row).toBeLessThan(centre.row - 2);
    expect(at(0, ON_TOP + 1.5, 0).row).toBeLessThan(centre.row - 5);
    // A ball that fell below the top, behind the cube's near face, is out of sight.
    expect(pixelsOf(picture({ ball: [0, -1.5, 0.5] }), 'ball')).toHaveLength(0);
  });

  it('refuses a camera without pixels', () => {
    expect(() => new Ball3DCamera(0, 84)).toThrow('whole number of pixels');
  });
});

describe('Visual3DBall: the game is 3DBall\'s', () => {
  /** Random actions from its own seeded stream, and a record of what every batch reported. */
  class RecordingBrain implements Brain {
    private readonly random = new SeededRandom(31);
    readonly reports: string[] = [];

    async decide(batches: ReadonlyMap<string, InfoBatch>): Promise<Decision> {
      const actions = new Map<string, { continuous: Float32Array; discrete: Int32Array }>();
      for (const [name, batch] of batches) {
        for (let row = 0; row < batch.count; row++) {
          this.reports.push(`${batch.id[row]} ${batch.reward[row]} ${batch.done[row]} ${batch.maxStepReached[row]}`);
        }
        const deciding = batch.decidingAgents().length;
        const continuous = Float32Array.from({ length: 2 * deciding }, () => this.random.range(-1, 1));
        actions.set(name, { continuous, discrete: new Int32Array(0) });
      }
      return { kind: 'actions', actions };
    }
  }

  it('plays the same episodes as 3DBall for the same seed and actions: falls, interruptions, rewards, states', async () => {
    const play = async (visual: boolean) => {
      const academy = new Academy();
      academy.seed(12);
      const world = visual ? createVisual3DBall(academy, AGENTS, 60) : createBall3D(academy, AGENTS, 60);
      const brain = new RecordingBrain();
      academy.reset();
      for (let step = 0; step < 400; step++) await academy.step(brain);
      return { reports: brain.reports, world };
    };
    const ball3d = await play(false);
    const visual = await play(true);
    expect(visual.reports).toEqual(ball3d.reports);
    const ends = ball3d.reports.filter((r) => r.endsWith(' 1 0')).length;
    const interruptions = ball3d.reports.filter((r) => r.endsWith(' 1 1')).length;
    expect(ends).toBeGreaterThan(0); // balls fell under random actions
    expect(interruptions).toBeGreaterThan(0); // and some reached the step limit, 60
    for (const column of ['rotW', 'rotX', 'rotY', 'rotZ', 'posX', 'posY', 'posZ', 'velX', 'velY', 'velZ'] as const) {
      expect(Array.from(visual.world[column])).toEqual(Array.from(ball3d.world[column]));
    }
  });

  it('draws only when an agent reports (decisions and episode ends), always into the same buffer', async () => {
    const camera = new Ball3DCamera();
    const render = jest.spyOn(camera, 'render');
    const academy = new Academy();
    academy.seed(4);
    createBall3D(academy, 3, 5000, visual3DBallVariant(camera));
    let reports = 0;
    academy.addBatchListener((batches) => {
      for (const batch of batches.values()) reports += batch.count;
    });
    academy.reset();
    const brain = new HeuristicBrain();
    for (let step = 0; step < 50; step++) await academy.step(brain);
    // Decisions at steps 1, 6, ..., 46: 10 per agent; the heuristic drops no ball.
    expect(reports).toBe(30);
    expect(render).toHaveBeenCalledTimes(30);
    const buffers = new Set(render.mock.calls.map((call) => call[2]));
    expect(buffers.size).toBe(1);
  });
});
