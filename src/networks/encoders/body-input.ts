/**
 * Where each observation goes in a network body's input, as upstream's ObservationEncoder lays
 * it out: the observations in their order, each vector one as given (normalized beforehand) and
 * each image replaced by its visual encoder's encoding. The network bodies (network-body.ts) and
 * the actor-critic's normalization read their columns from here.
 */
import { BehaviorSpec, ObservationType, observationSize } from '../../env/behavior-spec';

/** Images are the rank-3 observations (channels, height, width, in either order). */
export function isVisual(shape: readonly number[]): boolean {
  return shape.length === 3;
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
    spec.observationSpecs.forEach((obs, k) => {
      starts.push(column);
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
    this.width = column;
    this.vectorWidth = column - encodingSize * visual.length;
  }

  /**
   * The vector observations of `count` agents side by side, row-major (count x vectorWidth),
   * written into `target` (a new array when not given); images are left out.
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
      if (this.visualObservations.includes(k)) return;
      for (let i = 0; i < count; i++) {
        for (let f = 0; f < size; f++) target[i * width + column + f] = obs[i * size + f];
      }
      column += size;
    });
    return target;
  }
}
