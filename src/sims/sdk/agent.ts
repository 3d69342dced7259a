/**
 * The engine-side Agent, as Unity ML-Agents users know it (Agent.cs, BehaviorParameters,
 * DecisionRequester): an environment subclasses Agent and fills in observations, actions,
 * rewards and episode ends; the Academy (academy.ts) steps every agent and talks to the trainer.
 *
 *   class Ball extends Agent {
 *     override onEpisodeBegin() { ... }
 *     override collectObservations(sensor: VectorSensor) { sensor.add(x); sensor.add(y); }
 *     override onActionReceived(actions: ActionBuffers) { ...; this.addReward(0.1); }
 *     override heuristic(out: ActionBuffers) { out.continuous[0] = ...; }
 *   }
 */
import { SeededRandom } from '../../common/random';
import { CHANNEL_FIRST_IMAGE_DIMENSIONS, DimensionPropertyProto } from '../../communicator/messages';

/** An uncompressed float observation of any rank (a vector sensor: [size]). */
export interface VectorObservationSpec {
  readonly kind: 'vector';
  readonly shape: readonly number[];
  readonly name?: string;
  /** 1 for a goal signal (upstream's ObservationType.GOAL_SIGNAL), 0 by default. */
  readonly observationType?: number;
  /**
   * A BufferSensor's observation: shape [max entities, entity size], described as
   * (VARIABLE_SIZE, NONE); the agent writes its entities first, the rest stay zero (padding).
   */
  readonly variableLength?: boolean;
}

/**
 * An image, channel-first [channels, height, width] as com.unity.ml-agents 3 describes camera
 * sensors; sent PNG-compressed as Unity does by default (1 or 3 channels), or as raw floats
 * (any number of channels).
 */
export interface VisualObservationSpec {
  readonly kind: 'visual';
  readonly channels: number;
  readonly height: number;
  readonly width: number;
  readonly compressed: boolean;
  readonly name?: string;
  /** 1 for a goal signal (upstream's ObservationType.GOAL_SIGNAL), 0 by default. */
  readonly observationType?: number;
  /**
   * Frames sent together, oldest first, along the channels (Unity's ObservationStacks, a
   * StackingSensor around the camera): the observation is [stacks x channels, height, width],
   * zeros before an episode's first frames. 1 by default.
   */
  readonly stacks?: number;
}

export type ObservationSpecDef = VectorObservationSpec | VisualObservationSpec;

/** What Unity's BehaviorParameters and DecisionRequester components say about an agent. */
export interface BehaviorParameters {
  readonly behaviorName: string;
  readonly observations: readonly ObservationSpecDef[];
  readonly continuousActions: number;
  readonly discreteBranches: readonly number[];
  /** Steps after which the episode is interrupted (max_step_reached); 0: never. */
  readonly maxStep?: number;
  /** A decision every this many academy steps (DecisionRequester.DecisionPeriod); 1 by default. */
  readonly decisionPeriod?: number;
  /** Repeat the last action at the steps between decisions (DecisionRequester's default: true). */
  readonly takeActionsBetweenDecisions?: boolean;
}

/** A decision period that academy steps never reach: a paused agent asks for nothing. */
const NEVER = Number.MAX_SAFE_INTEGER;

/**
 * Behavior parameters with a decision requester that can pause, for an agent that waits out of
 * the world while its group plays on (upstream's MultiAgentEnvironment skips a finished agent;
 * Unity's DungeonEscape disables an eaten one). It asks for a decision every step unless
 * paused, never repeats actions in between, and leaves episode lengths to its environment.
 */
export class PausableBehavior implements BehaviorParameters {
  readonly maxStep = 0;
  readonly takeActionsBetweenDecisions = false;
  paused = false;

  constructor(
    readonly behaviorName: string,
    readonly observations: readonly ObservationSpecDef[],
    readonly continuousActions: number,
    readonly discreteBranches: readonly number[],
  ) {}

  get decisionPeriod(): number {
    return this.paused ? NEVER : 1;
  }
}

/** How an observation describes its dimensions on the wire (ObservationProto.dimension_properties). */
export function dimensionProperties(spec: ObservationSpecDef): readonly DimensionPropertyProto[] {
  if (spec.kind === 'visual') return CHANNEL_FIRST_IMAGE_DIMENSIONS;
  if (spec.variableLength) return [DimensionPropertyProto.VARIABLE_SIZE, DimensionPropertyProto.NONE];
  // A Unity vector sensor describes each of its dimensions as DimensionProperty.None.
  return spec.shape.map(() => DimensionPropertyProto.NONE);
}

/** The floats an agent writes for one observation (one frame of a stacked camera). */
export function frameLength(spec: ObservationSpecDef): number {
  return spec.kind === 'vector' ? spec.shape.reduce((a, b) => a * b, 1) : spec.channels * spec.height * spec.width;
}

/** The floats an observation sends: its frame, times its stacked frames. */
export function observationLength(spec: ObservationSpecDef): number {
  return frameLength(spec) * (spec.kind === 'visual' ? (spec.stacks ?? 1) : 1);
}

/** The shape a camera observation is sent with, channel first: its stacked frames along the channels. */
export function visualShape(spec: VisualObservationSpec): number[] {
  return [(spec.stacks ?? 1) * spec.channels, spec.height, spec.width];
}

/** The actions of one agent: continuous values and one choice per discrete branch. */
export class ActionBuffers {
  readonly continuous: Float32Array;
  readonly discrete: Int32Array;

  constructor(continuousSize: number, discreteSize: number) {
    this.continuous = new Float32Array(continuousSize);
    this.discrete = new Int32Array(discreteSize);
  }

  clear(): void {
    this.continuous.fill(0);
    this.discrete.fill(0);
  }

  copyFrom(other: ActionBuffers): void {
    this.continuous.set(other.continuous);
    this.discrete.set(other.discrete);
  }
}

/**
 * Where an agent writes one observation, in order: `add` appends floats (a vector sensor's
 * AddObservation); `values` is the whole buffer, for images (channel-first) or bulk writes.
 */
export class ObservationWriter {
  private cursor = 0;

  constructor(readonly values: Float32Array) {}

  add(value: number): void {
    this.values[this.cursor++] = value;
  }

  addOneHot(index: number, size: number): void {
    for (let i = 0; i < size; i++) this.values[this.cursor + i] = i === index ? 1 : 0;
    this.cursor += size;
  }

  /** Starts again at the first value (the Academy calls it before each collection). */
  reset(): void {
    this.values.fill(0);
    this.cursor = 0;
  }
}

/** Which discrete actions an agent may not take at this decision (Unity's IDiscreteActionMask). */
export class ActionMask {
  /** 1 where the action is NOT available, branch after branch. */
  readonly masked: Uint8Array;
  private readonly offsets: number[];

  constructor(readonly branches: readonly number[]) {
    this.masked = new Uint8Array(branches.reduce((a, b) => a + b, 0));
    this.offsets = [];
    let offset = 0;
    for (const size of branches) {
      this.offsets.push(offset);
      offset += size;
    }
  }

  setActionEnabled(branch: number, action: number, enabled: boolean): void {
    if (branch < 0 || branch >= this.branches.length || action < 0 || action >= this.branches[branch]) {
      throw new Error(
        `Action mask: branch ${branch}, action ${action} does not exist (branches: [${this.branches.join(', ')}]).`,
      );
    }
    this.masked[this.offsets[branch] + action] = enabled ? 0 : 1;
  }

  isEnabled(branch: number, action: number): boolean {
    return this.masked[this.offsets[branch] + action] === 0;
  }

  clear(): void {
    this.masked.fill(0);
  }
}

/** How an episode ended, as Unity's Agent.DoneReason. */
export enum DoneReason {
  /** EndEpisode() was called: the agent reached a true end. */
  DoneCalled,
  /** MaxStep was reached, or EpisodeInterrupted() was called. */
  MaxStepReached,
}

export abstract class Agent {
  /** Set by the Academy when the agent is added. */
  id = 0;
  /** The environment's seeded random source, set by the Academy when the agent is added. */
  random: SeededRandom = new SeededRandom(0);
  /** 0 when the agent is in no group (MultiAgentGroup). */
  groupId = 0;

  private reward = 0;
  private groupReward = 0;
  private cumulative = 0;
  private steps = 0;
  private completedEpisodes = 0;

  constructor(readonly behavior: BehaviorParameters) {}

  // ----- what an environment implements -----

  /** Once, when the agent joins the Academy (Unity's Initialize). */
  initialize(): void {}

  /** At the start of every episode, including the first (Unity's OnEpisodeBegin). */
  onEpisodeBegin(): void {}

  /** Writes observation `index` (in the order of behavior.observations). */
  abstract collectObservations(index: number, writer: ObservationWriter): void;

  /** Acts on the actions the policy (or the heuristic) chose. */
  abstract onActionReceived(actions: ActionBuffers): void;

  /** Forbids the discrete actions that make no sense now (Unity's WriteDiscreteActionMask). */
  writeDiscreteActionMask(_mask: ActionMask): void {}

  /** Hand-written control, used when no trainer drives the agent (Unity's Heuristic). */
  heuristic(actionsOut: ActionBuffers): void {
    actionsOut.clear();
  }

  // ----- what an environment calls -----

  addReward(value: number): void {
    this.reward += value;
    this.cumulative += value;
  }

  setReward(value: number): void {
    this.cumulative += value - this.reward;
    this.reward = value;
  }

  /** Group reward, shared by the agents of a group (MultiAgentGroup.AddGroupReward). */
  addGroupReward(value: number): void {
    this.groupReward += value;
  }

  /** Ends the episode at a true end: the trainer does not bootstrap past it. */
  endEpisode(): void {
    this.endRequest = DoneReason.DoneCalled;
  }

  /** Ends the episode without a true end (a time limit): the trainer bootstraps past it. */
  episodeInterrupted(): void {
    this.endRequest = DoneReason.MaxStepReached;
  }

  /** Steps taken in this episode. */
  get stepCount(): number {
    return this.steps;
  }

  /** Reward gathered in this episode so far. */
  get cumulativeReward(): number {
    return this.cumulative;
  }

  get completedEpisodeCount(): number {
    return this.completedEpisodes;
  }

  // ----- for the Academy -----

  /** An end asked for during this step, handled by the Academy after the agent acted. */
  endRequest: DoneReason | null = null;

  /** Reward since the last report, then zero (the Academy reports it with each info). */
  takeReward(): { reward: number; groupReward: number } {
    const taken = { reward: this.reward, groupReward: this.groupReward };
    this.reward = 0;
    this.groupReward = 0;
    return taken;
  }

  /** Starts a new episode: counters to zero, then the environment's onEpisodeBegin. */
  beginEpisode(countCompleted: boolean): void {
    if (countCompleted) this.completedEpisodes += 1;
    this.steps = 0;
    this.reward = 0;
    this.groupReward = 0;
    this.cumulative = 0;
    this.endRequest = null;
    this.onEpisodeBegin();
  }

  incrementStep(): void {
    this.steps += 1;
  }
}
