/**
 * Where each observation goes in a network body's input, as upstream's ObservationEncoder lays
 * it out: the observations in their order, each vector one as given (normalized beforehand) and
 * each image replaced by its visual encoder's encoding; then, when there are variable-length
 * observations, the 128 values of their attention (entity-attention.ts), which takes the columns
 * before it as x_self. The network bodies (network-body.ts) and the actor-critic's normalization
 * read their columns from here.
 */
import { BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType, observationSize } from '../../env/behavior-spec';
import { ATTENTION_EMBEDDING_SIZE, EntityObservation } from './entity-attention';

/** Images are the rank-3 observations (channels, height, width, in either order). */
export function isVisual(shape: readonly number[]): boolean {
  return shape.length === 3;
}

/**
 * Variable-length observations are [max entities, entity size] described as upstream's only
 * valid ones are: (VARIABLE_SIZE, NONE), as Unity's BufferSensor sends them.
 */
export function isVariableLength(spec: ObservationSpec): boolean {
  const [first, second] = spec.dimensionProperty;
  return spec.shape.length === 2 && spec.dimensionProperty.length === 2 && first === DimensionProperty.VARIABLE_SIZE && second === DimensionProperty.NONE;
}

/** "Observation 1 (camera)", as the errors name an observation. */
export function observationLabel(spec: BehaviorSpec, k: number): string {
  const name = spec.observationSpecs[k].name;
  return name ? `Observation ${k} (${name})` : `Observation ${k}`;
}

export class BodyInputLayout {
  readonly observationSizes: readonly number[];
  /** The observations that are images, in order. */
  readonly visualObservations: readonly number[];
  /** The input column where each image's encoding starts. */
  readonly encodingColumns: readonly number[];
  /** The input column where each observation's values or encoding start, in observation order. */
  readonly columns: readonly number[];
  /** Values in the input: vector values and encodings. */
  readonly width: number;
  /** Values in the vector observations side by side (what a normalizer sees). */
  readonly vectorWidth: number;
  /** The observations that are goal signals (ObservationType.GOAL_SIGNAL), in order. */
  readonly goalObservations: readonly number[];
  /** The input columns of the goal signals' values or encodings, in order (upstream's goal encoding). */
  readonly goalColumns: readonly number[];
  /** The variable-length observations, in order; their attention's output ends the input. */
  readonly entityObservations: readonly EntityObservation[];
  /** Values before the attention's output (its x_self): the other observations' values and encodings. */
  readonly selfWidth: number;

  constructor(
    readonly spec: BehaviorSpec,
    /** Each image's encoding width (upstream's h_size: hidden_units). */
    readonly encodingSize: number,
  ) {
    this.observationSizes = spec.observationSpecs.map(observationSize);
    const visual: number[] = [];
    const columns: number[] = [];
    const goals: number[] = [];
    const goalColumns: number[] = [];
    const starts: number[] = [];
    let column = 0;
    const entities: EntityObservation[] = [];
    spec.observationSpecs.forEach((obs, k) => {
      starts.push(column);
      if (isVariableLength(obs)) {
        // Upstream gives it an encoding size of 0: it adds no columns of its own, not even as a goal.
        entities.push({ observation: k, maxEntities: obs.shape[0], entitySize: obs.shape[1] });
        return;
      }
      const width = isVisual(obs.shape) ? encodingSize : this.observationSizes[k];
      if (isVisual(obs.shape)) {
        visual.push(k);
        columns.push(column);
      }
      if (obs.observationType === ObservationType.GOAL_SIGNAL) {
        goals.push(k);
        for (let c = column; c < column + width; c++) goalColumns.push(c);
      }
      column += width;
    });
    this.goalObservations = goals;
    this.goalColumns = goalColumns;
    this.visualObservations = visual;
    this.encodingColumns = columns;
    this.columns = starts;
    this.entityObservations = entities;
    this.selfWidth = column;
    this.width = column + (entities.length > 0 ? ATTENTION_EMBEDDING_SIZE : 0);
    this.vectorWidth = column - encodingSize * visual.length;
  }

  /** Whether a body encodes observations with tfjs before its MLP: images or variable-length observations. */
  get hasEncoders(): boolean {
    return this.visualObservations.length > 0 || this.entityObservations.length > 0;
  }

  /** Whether observation k goes into the input as given (a vector observation, normalized). */
  isVector(k: number): boolean {
    return !this.visualObservations.includes(k) && !this.entityObservations.some((e) => e.observation === k);
  }

  /**
   * The vector observations of `count` agents side by side, row-major (count x vectorWidth),
   * written into `target` (a new array when not given); images and variable-length observations
   * are left out.
   */
  vectorRows(observations: readonly Float32Array[], count: number, target = new Float32Array(count * this.vectorWidth)): Float32Array {
    const sizes = this.observationSizes;
    if (observations.length !== sizes.length) {
      throw new Error(`The model takes ${sizes.length} observations per agent but got ${observations.length}.`);
    }
    const width = this.vectorWidth;
    let column = 0;
    observations.forEach((obs, k) => {
      const size = sizes[k];
      if (obs.length !== count * size) {
        throw new Error(`Observation ${k} holds ${obs.length} values, not ${count} agents x ${size}.`);
      }
      if (!this.isVector(k)) return;
      for (let i = 0; i < count; i++) {
        for (let f = 0; f < size; f++) target[i * width + column + f] = obs[i * size + f];
      }
      column += size;
    });
    return target;
  }
}
