/**
 * What a behavior looks like: its observations and its actions, as in upstream's base_env.py.
 * Batched actions live in typed arrays, one row per agent.
 */

// The API names of upstream's DimensionProperty and ObservationType: the values are the wire's.
import {
  DimensionPropertyProto as DimensionProperty,
  ObservationTypeProto as ObservationType,
} from '../communicator/messages';

export { DimensionProperty, ObservationType };

export interface ObservationSpec {
  readonly shape: readonly number[];
  readonly dimensionProperty: readonly DimensionProperty[];
  readonly observationType: ObservationType;
  readonly name: string;
}

/** The number of floats one agent's observation holds. */
export function observationSize(spec: ObservationSpec): number {
  return spec.shape.reduce((product, dim) => product * dim, 1);
}

/** Actions of a batch of agents: row i is agent i. */
export interface ActionTuple {
  /** n x continuousSize */
  readonly continuous: Float32Array;
  /** n x number of discrete branches */
  readonly discrete: Int32Array;
}

/** A request from the user that does not fit the behavior's actions. */
export class UnityActionError extends Error {
  override name = 'UnityActionError';
}

/** Accepted forms of a batch of actions: typed arrays, or plain number arrays (flat or one row per agent). */
export interface ActionInput {
  continuous?: Float32Array | Float64Array | ArrayLike<number> | ArrayLike<ArrayLike<number>>;
  discrete?: Int32Array | ArrayLike<number> | ArrayLike<ArrayLike<number>>;
}

export class ActionSpec {
  readonly discreteBranches: readonly number[];

  constructor(
    readonly continuousSize: number,
    discreteBranches: readonly number[],
  ) {
    this.discreteBranches = Object.freeze([...discreteBranches]);
  }

  static createContinuous(size: number): ActionSpec {
    return new ActionSpec(size, []);
  }

  static createDiscrete(branches: readonly number[]): ActionSpec {
    return new ActionSpec(0, branches);
  }

  /** The number of discrete branches. */
  get discreteSize(): number {
    return this.discreteBranches.length;
  }

  isContinuous(): boolean {
    return this.continuousSize > 0 && this.discreteSize === 0;
  }

  isDiscrete(): boolean {
    return this.discreteSize > 0 && this.continuousSize === 0;
  }

  /** Zero actions for n agents (what upstream sends for agents given no action). */
  emptyAction(nAgents: number): ActionTuple {
    return {
      continuous: new Float32Array(nAgents * this.continuousSize),
      discrete: new Int32Array(nAgents * this.discreteSize),
    };
  }

  /** Uniform random actions: continuous in [-1, 1), each branch uniform over its choices. */
  randomAction(nAgents: number, random: () => number = Math.random): ActionTuple {
    const action = this.emptyAction(nAgents);
    for (let i = 0; i < action.continuous.length; i++) {
      action.continuous[i] = random() * 2 - 1;
    }
    for (let agent = 0; agent < nAgents; agent++) {
      for (let b = 0; b < this.discreteSize; b++) {
        action.discrete[agent * this.discreteSize + b] = Math.floor(random() * this.discreteBranches[b]);
      }
    }
    return action;
  }

  /**
   * Checks a batch of actions for `nAgents` agents and returns it as typed arrays.
   * Throws UnityActionError naming the behavior, what was expected and what came.
   */
  validateAction(action: ActionInput, nAgents: number, behaviorName: string): ActionTuple {
    const continuous = flatten(action.continuous, Float32Array, 'continuous', behaviorName);
    const discrete = flatten(action.discrete, Int32Array, 'discrete', behaviorName);
    const expectContinuous = nAgents * this.continuousSize;
    const expectDiscrete = nAgents * this.discreteSize;
    if (this.continuousSize > 0 || continuous !== undefined) {
      const got = continuous?.length ?? 0;
      if (got !== expectContinuous) {
        throw new UnityActionError(
          `The behavior ${behaviorName} needs a continuous input of ${expectContinuous} floats ` +
            `(${nAgents} agents x ${this.continuousSize} actions) but received ${got}.`,
        );
      }
    }
    if (this.discreteSize > 0 || discrete !== undefined) {
      const got = discrete?.length ?? 0;
      if (got !== expectDiscrete) {
        throw new UnityActionError(
          `The behavior ${behaviorName} needs a discrete input of ${expectDiscrete} integers ` +
            `(${nAgents} agents x ${this.discreteSize} branches) but received ${got}.`,
        );
      }
    }
    if (discrete !== undefined && action.discrete !== undefined && !(action.discrete instanceof Int32Array)) {
      checkIntegers(action.discrete, behaviorName);
    }
    if (discrete !== undefined) {
      this.checkBranchRanges(discrete, behaviorName);
    }
    return {
      continuous: continuous ?? new Float32Array(0),
      discrete: discrete ?? new Int32Array(0),
    };
  }

  private checkBranchRanges(discrete: Int32Array, behaviorName: string): void {
    const branches = this.discreteBranches;
    for (let i = 0; i < discrete.length; i++) {
      const branch = i % branches.length;
      const value = discrete[i];
      if (value < 0 || value >= branches[branch]) {
        throw new UnityActionError(
          `The behavior ${behaviorName} got discrete action ${value} for agent row ` +
            `${Math.floor(i / branches.length)}, branch ${branch}, which has ${branches[branch]} ` +
            `choices (0 to ${branches[branch] - 1}).`,
        );
      }
    }
  }

  equals(other: ActionSpec): boolean {
    return (
      this.continuousSize === other.continuousSize &&
      this.discreteBranches.length === other.discreteBranches.length &&
      this.discreteBranches.every((size, i) => size === other.discreteBranches[i])
    );
  }

  toString(): string {
    return `ActionSpec(continuous: ${this.continuousSize}, discrete branches: [${this.discreteBranches.join(', ')}])`;
  }
}

export interface BehaviorSpec {
  readonly observationSpecs: readonly ObservationSpec[];
  readonly actionSpec: ActionSpec;
}

/** The environment re-sent a behavior's brain parameters with other observations or actions. */
export class BehaviorSpecChangedError extends Error {
  override name = 'BehaviorSpecChangedError';
}

/**
 * Throws BehaviorSpecChangedError, naming both specifications, unless `now` has the observations
 * (shape, dimension properties, type) and the actions `before` had: a trainer's networks are built
 * for the specification it first saw. Observation names do not count: nothing is built on them.
 */
export function assertSameBehaviorSpec(behaviorName: string, before: BehaviorSpec, now: BehaviorSpec): void {
  const sameObservations =
    before.observationSpecs.length === now.observationSpecs.length &&
    before.observationSpecs.every((spec, i) => describeObservation(spec) === describeObservation(now.observationSpecs[i]));
  if (sameObservations && before.actionSpec.equals(now.actionSpec)) return;
  throw new BehaviorSpecChangedError(
    `The specification of behavior ${behaviorName} changed mid-run: it was ${describeBehaviorSpec(before)}, ` +
      `it is now ${describeBehaviorSpec(now)}. A behavior keeps its observations and actions for the whole run: ` +
      'give the changed agents another Behavior Name, or start a new run.',
  );
}

export function describeBehaviorSpec(spec: BehaviorSpec): string {
  return `observations [${spec.observationSpecs.map(describeObservation).join(', ')}], ${spec.actionSpec}`;
}

/** Its shape, then its dimension properties and its type where they are not the defaults. */
function describeObservation(spec: ObservationSpec): string {
  const described = spec.dimensionProperty.some((p) => p !== DimensionProperty.UNSPECIFIED);
  const properties = described ? ` [${spec.dimensionProperty.map((p) => DimensionProperty[p] ?? p).join(', ')}]` : '';
  const type = spec.observationType === ObservationType.GOAL_SIGNAL ? ' goal signal' : '';
  return `(${spec.shape.join(', ')})${properties}${type}`;
}

type TypedArrayConstructor<T> = { new (length: number): T; from(values: ArrayLike<number>): T };

function flatten<T extends Float32Array | Int32Array>(
  values: ArrayLike<number> | ArrayLike<ArrayLike<number>> | undefined,
  kind: TypedArrayConstructor<T>,
  label: string,
  behaviorName: string,
): T | undefined {
  if (values === undefined) {
    return undefined;
  }
  if (values instanceof kind) {
    return values as T;
  }
  if (values.length > 0 && typeof values[0] === 'object') {
    const rows = values as ArrayLike<ArrayLike<number>>;
    const width = rows[0].length;
    const flat = new kind(rows.length * width);
    for (let r = 0; r < rows.length; r++) {
      if (rows[r].length !== width) {
        throw new UnityActionError(
          `The ${label} actions given to behavior ${behaviorName} are ragged: row 0 has ${width} ` +
            `values and row ${r} has ${rows[r].length}.`,
        );
      }
      for (let c = 0; c < width; c++) {
        flat[r * width + c] = rows[r][c];
      }
    }
    return flat;
  }
  return kind.from(values as ArrayLike<number>);
}

function checkIntegers(values: ArrayLike<number> | ArrayLike<ArrayLike<number>>, behaviorName: string): void {
  const rows = values.length > 0 && typeof values[0] === 'object' ? (values as ArrayLike<ArrayLike<number>>) : [values as ArrayLike<number>];
  for (let r = 0; r < rows.length; r++) {
    for (let c = 0; c < rows[r].length; c++) {
      const v = rows[r][c];
      if (!Number.isInteger(v)) {
        throw new UnityActionError(
          `The behavior ${behaviorName} got discrete action ${v}, which is not an integer: discrete ` +
            `actions choose one option of each branch.`,
        );
      }
    }
  }
}
