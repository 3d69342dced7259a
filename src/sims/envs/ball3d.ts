#!/usr/bin/env node
/**
 * 3DBall, as Unity's 3DBall example (Ball3DAgent.cs, the 3DBall prefab and scene): each agent is
 * a cube that tilts itself to keep a ball on its head. 8 observations: the cube's rotation
 * (quaternion z and x), the ball's position from the cube's centre (x, y, z) and its velocity
 * (x, y, z). 2 continuous actions, clamped to [-1, 1]: up to 2 degrees a step about the cube's
 * z and x axes, and only while the rotation's z (x) stays under 0.25 in that direction. Every
 * step the ball stays up sets the reward to 0.1 (SetReward, not AddReward: the trainer sees 0.1
 * a decision, so a full episode of 5000 steps is worth 100); a ball that falls sets -1 and ends
 * the episode. A decision every 5 steps, actions repeated in between; episodes stop at 5000.
 * The physics is in ball3d-physics.ts. Visual3DBall (visual3dball.ts) plays this same agent
 * through a camera instead of the 8 observations (a Ball3DVariant).
 */
import { Academy, Brain, Decision, InfoBatch } from '../sdk/academy';
import { ActionBuffers, Agent, BehaviorParameters, ObservationWriter } from '../sdk/agent';
import { EnvironmentParametersReceiver } from '../sdk/engine-channels';
import { SimDefinition, SimOptionSpecs, SimOptionValues, intOption, runEnvironmentMain } from '../sdk/run-environment';
import { BALL_RADIUS, Ball3DWorld, DEFAULT_GRAVITY } from './ball3d-physics';

export const DECISION_PERIOD = 5;
export const DEFAULT_MAX_STEP = 5000;
/** The 3DBall scene holds 12 copies of the 3DBall prefab. */
export const DEFAULT_AGENTS_PER_AREA = 12;
/** Reward set at every step the ball stays up. */
export const STAY_REWARD = 0.1;
export const FALL_REWARD = -1;
/** Degrees the cube turns in one step at action 1. */
export const DEGREES_PER_STEP = 2;
/** The cube turns further in one direction only while its rotation's component stays under this. */
export const ROTATION_LIMIT = 0.25;
/** A new episode tilts the cube by up to this many degrees about x, then about z. */
const START_TILT_DEGREES = 10;
/** A new episode drops the ball from this height above the cube's centre... */
const START_HEIGHT = 4;
/** ...at up to this far from the centre along x and z. */
const START_SPREAD = 1.5;
/** The ball is lost once it is this far below the cube's centre... */
const FALL_DEPTH = 2;
/** ...or this far from it along x or z. */
const FALL_DISTANCE = 3;

export const BALL3D_BEHAVIOR: BehaviorParameters = {
  behaviorName: '3DBall',
  observations: [{ kind: 'vector', shape: [8], name: 'VectorSensor' }],
  continuousActions: 2,
  discreteBranches: [],
  maxStep: DEFAULT_MAX_STEP,
  decisionPeriod: DECISION_PERIOD,
  takeActionsBetweenDecisions: true,
};

// The scripted balancer: it asks for the tilt (radians) that rolls the ball back to the centre,
// PD on the ball's position and velocity. The ball runs down at about 5/7 g tilt = 7 tilt m/s²,
// so 0.5 rad/m and 0.5 rad per m/s give a loop of 1.9 rad/s, damped at 0.94 of critical, slow
// enough for decisions every 0.1 s.
const BALANCE_POSITION_GAIN = 0.5;
const BALANCE_VELOCITY_GAIN = 0.5;
/** The balancer never asks for more tilt than this (radians, about 14 degrees). */
const BALANCE_MAX_TILT = 0.25;
/**
 * Nor turns faster than half the full rate: the top face is 2.5 above the cube's pivot, so a
 * fast turn lifts it under the ball at metres per second and throws the ball off.
 */
const BALANCE_MAX_ACTION = 0.5;

/** `value` clamped to [-1, 1], as Mathf.Clamp(value, -1f, 1f). */
function clampUnit(value: number): number {
  return value < -1 ? -1 : value > 1 ? 1 : value;
}

export class Ball3DAgent extends Agent {
  constructor(
    readonly world: Ball3DWorld,
    /** This agent's entry in the world's columns. */
    readonly index: number,
    private readonly parameters: EnvironmentParametersReceiver,
    behavior: BehaviorParameters = BALL3D_BEHAVIOR,
  ) {
    super(behavior);
  }

  override initialize(): void {
    this.applyEnvironmentParameters();
  }

  override onEpisodeBegin(): void {
    const i = this.index;
    // The draws in Ball3DAgent.OnEpisodeBegin's order: tilt about x, about z, then the drop point.
    const aboutX = this.random.range(-START_TILT_DEGREES, START_TILT_DEGREES);
    const aboutZ = this.random.range(-START_TILT_DEGREES, START_TILT_DEGREES);
    this.world.setTilt(i, aboutX, aboutZ);
    const x = this.random.range(-START_SPREAD, START_SPREAD);
    const z = this.random.range(-START_SPREAD, START_SPREAD);
    this.world.placeBall(i, x, START_HEIGHT, z);
    this.applyEnvironmentParameters();
  }

  /**
   * Ball3DAgent.SetResetParameters: the ball's mass and scale, read anew at every episode (a
   * sampler draws a new value each time). Gravity is the older Ball3DAcademy's "gravity"
   * parameter (Physics.gravity = -gravity along y), shared by the whole world.
   */
  private applyEnvironmentParameters(): void {
    const i = this.index;
    this.world.mass[i] = this.parameters.getWithDefault('mass', 1);
    this.world.radius[i] = BALL_RADIUS * this.parameters.getWithDefault('scale', 1);
    this.world.gravity = this.parameters.getWithDefault('gravity', DEFAULT_GRAVITY);
  }

  override collectObservations(_index: number, writer: ObservationWriter): void {
    const w = this.world;
    const i = this.index;
    const out = writer.values;
    out[0] = w.rotZ[i];
    out[1] = w.rotX[i];
    out[2] = w.posX[i];
    out[3] = w.posY[i];
    out[4] = w.posZ[i];
    out[5] = w.velX[i];
    out[6] = w.velY[i];
    out[7] = w.velZ[i];
  }

  override onActionReceived(actions: ActionBuffers): void {
    const w = this.world;
    const i = this.index;
    const turnZ = DEGREES_PER_STEP * clampUnit(actions.continuous[0]);
    const turnX = DEGREES_PER_STEP * clampUnit(actions.continuous[1]);
    if ((w.rotZ[i] < ROTATION_LIMIT && turnZ > 0) || (w.rotZ[i] > -ROTATION_LIMIT && turnZ < 0)) {
      w.rotateAboutLocalZ(i, turnZ);
    }
    if ((w.rotX[i] < ROTATION_LIMIT && turnX > 0) || (w.rotX[i] > -ROTATION_LIMIT && turnX < 0)) {
      w.rotateAboutLocalX(i, turnX);
    }
    if (w.posY[i] < -FALL_DEPTH || Math.abs(w.posX[i]) > FALL_DISTANCE || Math.abs(w.posZ[i]) > FALL_DISTANCE) {
      this.setReward(FALL_REWARD);
      this.endEpisode();
    } else {
      this.setReward(STAY_REWARD);
    }
  }

  /**
   * Upstream reads the keyboard here; this one balances the ball. It picks the tilt that rolls
   * the ball back to the centre (a positive turn about z sends the ball towards -x, a positive
   * turn about x towards +z), and asks for the turn that reaches it by the next decision, at
   * half speed at most.
   */
  override heuristic(actionsOut: ActionBuffers): void {
    const w = this.world;
    const i = this.index;
    const wantedAboutZ = clampTilt(BALANCE_POSITION_GAIN * w.posX[i] + BALANCE_VELOCITY_GAIN * w.velX[i]);
    const wantedAboutX = clampTilt(-(BALANCE_POSITION_GAIN * w.posZ[i] + BALANCE_VELOCITY_GAIN * w.velZ[i]));
    const perDecision = DECISION_PERIOD * DEGREES_PER_STEP * (Math.PI / 180);
    actionsOut.continuous[0] = clampAction((wantedAboutZ - tiltAngle(w.rotZ[i])) / perDecision);
    actionsOut.continuous[1] = clampAction((wantedAboutX - tiltAngle(w.rotX[i])) / perDecision);
  }
}

function clampAction(value: number): number {
  return value < -BALANCE_MAX_ACTION ? -BALANCE_MAX_ACTION : value > BALANCE_MAX_ACTION ? BALANCE_MAX_ACTION : value;
}

function clampTilt(radians: number): number {
  return radians < -BALANCE_MAX_TILT ? -BALANCE_MAX_TILT : radians > BALANCE_MAX_TILT ? BALANCE_MAX_TILT : radians;
}

/** The angle (radians) of a turn about one axis whose quaternion has `component` on that axis. */
function tiltAngle(component: number): number {
  return 2 * Math.asin(component < -1 ? -1 : component > 1 ? 1 : component);
}

/** Makes the agent at `index` of the world: Ball3DAgent itself, or a variant that observes otherwise. */
export type Ball3DAgentFactory = (
  world: Ball3DWorld,
  index: number,
  parameters: EnvironmentParametersReceiver,
  behavior: BehaviorParameters,
) => Ball3DAgent;

/** A scene built on 3DBall's world and agent: its behavior (name, observations) and how to make its agents. */
export interface Ball3DVariant {
  readonly behavior: BehaviorParameters;
  readonly makeAgent: Ball3DAgentFactory;
}

export const BALL3D_VARIANT: Ball3DVariant = {
  behavior: BALL3D_BEHAVIOR,
  makeAgent: (world, index, parameters, behavior) => new Ball3DAgent(world, index, parameters, behavior),
};

/**
 * Builds the world and `agentCount` agents of a variant (3DBall's own by default), episodes cut
 * at `maxStep`; exported for in-process harnesses.
 */
export function createBall3D(
  academy: Academy,
  agentCount: number,
  maxStep: number = DEFAULT_MAX_STEP,
  variant: Ball3DVariant = BALL3D_VARIANT,
): Ball3DWorld {
  const world = new Ball3DWorld(agentCount);
  const behavior: BehaviorParameters = { ...variant.behavior, maxStep };
  for (let i = 0; i < agentCount; i++) {
    academy.addAgent(variant.makeAgent(world, i, academy.environmentParameters, behavior));
  }
  academy.onWorldStep = (deltaTime) => world.step(deltaTime);
  return world;
}

/** The command-line options of a 3DBall scene: agents per training area and the episode length. */
export function ball3DOptions(defaultAgents: number, agentsNote: string): SimOptionSpecs {
  return {
    agents: { type: 'string', default: String(defaultAgents), description: `agents per training area (${agentsNote})` },
    'max-step': { type: 'string', default: String(DEFAULT_MAX_STEP), description: 'steps after which an episode is interrupted (0: never)' },
  };
}

/** Reads and checks ball3DOptions, then builds the world of `variant` for `numAreas` areas. */
export function createBall3DFromOptions(academy: Academy, options: SimOptionValues, numAreas: number, variant: Ball3DVariant): Ball3DWorld {
  const maxStep = intOption(options, 'max-step');
  if (maxStep < 0) throw new Error(`--max-step needs 0 or more, got ${maxStep}.`);
  const agents = intOption(options, 'agents');
  if (agents < 1) throw new Error(`--agents needs 1 or more, got ${agents}.`);
  return createBall3D(academy, agents * numAreas, maxStep, variant);
}

export const BALL3D: SimDefinition = {
  name: '3DBall',
  description: 'balance a ball on a tilting cube (Unity\'s 3DBall example)',
  options: ball3DOptions(DEFAULT_AGENTS_PER_AREA, 'the 3DBall scene has 12'),
  create(academy: Academy, options: SimOptionValues, numAreas: number): void {
    createBall3DFromOptions(academy, options, numAreas, BALL3D_VARIANT);
  },
};

if (require.main === module) {
  runEnvironmentMain(BALL3D, process.argv.slice(2)).then((code) => process.exit(code));
}
