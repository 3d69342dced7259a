#!/usr/bin/env node
/**
 * Visual3DBall, as Unity's Visual3DBall example (Prefabs/Visual3DBall.prefab, Scenes/
 * Visual3DBall.unity): 3DBall's game with 3DBall's agent (Ball3DAgent with useVecObs off), whose
 * only observation is a camera image of its own cube and ball. Behavior "Visual3DBall"; one
 * observation, the CameraSensor, RGB 84 x 84 with its last 4 frames stacked as the prefab's
 * sensor asks (ObservationStacks 4): channel-first [12, 84, 84] as com.unity.ml-agents 2+ sends
 * cameras, PNG-compressed (four PNGs, oldest first, with their channel mapping); 2 continuous
 * actions; a decision every 5 steps; episodes stop at 5000. The scene holds 8 of these areas.
 *
 * The world, the rewards and the episodes are 3DBall's (ball3d.ts, ball3d-physics.ts): with the
 * same seed and actions both play exactly the same game. The camera is ball3d-camera.ts; it draws
 * only when the agent reports (at its decisions and at its episode's end), into the observation
 * buffer the Academy reuses.
 */
import { Academy } from '../sdk/academy';
import { BehaviorParameters, ObservationWriter } from '../sdk/agent';
import { EnvironmentParametersReceiver } from '../sdk/engine-channels';
import { SimDefinition, SimOptionValues, runEnvironmentMain } from '../sdk/run-environment';
import {
  BALL3D_BEHAVIOR,
  Ball3DAgent,
  Ball3DVariant,
  ball3DOptions,
  createBall3D,
  createBall3DFromOptions,
  DEFAULT_MAX_STEP,
} from './ball3d';
import { Ball3DCamera, CAMERA_HEIGHT, CAMERA_WIDTH } from './ball3d-camera';
import { Ball3DWorld } from './ball3d-physics';

/** The Visual3DBall scene holds 8 copies of the Visual3DBall prefab. */
export const DEFAULT_VISUAL_AGENTS_PER_AREA = 8;
export const VISUAL_CAMERA_SENSOR_NAME = 'CameraSensor';
/** The prefab's CameraSensor ObservationStacks. */
export const CAMERA_STACKS = 4;

export const VISUAL3DBALL_BEHAVIOR: BehaviorParameters = {
  ...BALL3D_BEHAVIOR,
  behaviorName: 'Visual3DBall',
  observations: [
    { kind: 'visual', channels: 3, height: CAMERA_HEIGHT, width: CAMERA_WIDTH, compressed: true, name: VISUAL_CAMERA_SENSOR_NAME, stacks: CAMERA_STACKS },
  ],
};

/** 3DBall's agent, seeing through the camera instead of its 8 vector observations. */
export class Visual3DBallAgent extends Ball3DAgent {
  constructor(
    world: Ball3DWorld,
    index: number,
    parameters: EnvironmentParametersReceiver,
    behavior: BehaviorParameters,
    private readonly camera: Ball3DCamera,
  ) {
    super(world, index, parameters, behavior);
  }

  override collectObservations(_index: number, writer: ObservationWriter): void {
    this.camera.render(this.world, this.index, writer.values);
  }
}

/** Visual3DBall's scene on 3DBall's world; its agents share one camera. */
export function visual3DBallVariant(camera: Ball3DCamera = new Ball3DCamera()): Ball3DVariant {
  return {
    behavior: VISUAL3DBALL_BEHAVIOR,
    makeAgent: (world, index, parameters, behavior) => new Visual3DBallAgent(world, index, parameters, behavior, camera),
  };
}

/** Builds the world and its agents; exported for in-process harnesses. */
export function createVisual3DBall(academy: Academy, agentCount: number, maxStep: number = DEFAULT_MAX_STEP): Ball3DWorld {
  return createBall3D(academy, agentCount, maxStep, visual3DBallVariant());
}

export const VISUAL3DBALL: SimDefinition = {
  name: 'Visual3DBall',
  description: 'balance a ball on a tilting cube, seen through a camera (Unity\'s Visual3DBall example)',
  options: ball3DOptions(DEFAULT_VISUAL_AGENTS_PER_AREA, 'the Visual3DBall scene has 8'),
  create(academy: Academy, options: SimOptionValues, numAreas: number): void {
    createBall3DFromOptions(academy, options, numAreas, visual3DBallVariant());
  },
};

if (require.main === module) {
  runEnvironmentMain(VISUAL3DBALL, process.argv.slice(2)).then((code) => process.exit(code));
}
