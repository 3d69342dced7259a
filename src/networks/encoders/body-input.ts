/**
 * Where each observation goes in a network body's input, as upstream's ObservationEncoder lays
 * it out: the observations in their order, each vector one as given (normalized beforehand) and
 * each image replaced by its visual encoder's encoding. The network bodies (network-body.ts) and
 * the actor-critic's normalization read their columns from here.
 */
import { BehaviorSpec, observationSize } from '../../env/behavior-spec';

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
  /** Values in the input: vector values and encodings. */
  readonly width: number;
  /** Values in the vector observations side by side (what a normalizer sees). */
  readonly vectorWidth: number;

  constructor(
    readonly spec: BehaviorSpec,
    /** Each image's encoding width (upstream's h_size: hidden_units). */
    readonly encodingSize: number,
  ) {
    this.observationSizes = spec.observationSpecs.map(observationSize);
    const visual: number[] = [];
    const columns: number[] = [];
    let column = 0;
    spec.observationSpecs.forEach((obs, k) => {
      if (isVisual(obs.shape)) {
        visual.push(k);
        columns.push(column);
        column += encodingSize;
      } else {
        column += this.observationSizes[k];
      }
    });
    this.visualObservations = visual;
    this.encodingColumns = columns;
    this.width = column;
    this.vectorWidth = column - encodingSize * visual.length;
  }
}
