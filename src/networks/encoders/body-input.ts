/**
 * A network body's input, as upstream's ObservationEncoder builds it: the observations in their
 * order, each vector one as given (normalized beforehand) and each image replaced by its visual
 * encoder's encoding. The actor-critic's bodies and SAC's Q networks lay out and fill their
 * inputs with this one piece.
 */
import type { EncoderType } from '../../config/settings';
import { BehaviorSpec, observationSize } from '../../env/behavior-spec';
import type { ParameterAllocator, ParameterSource } from '../layers/layer';
import { copyColumns, copyTensorInto } from '../tensor-io';
import { VisualEncoder } from './visual-encoder';

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

  /** One visual encoder per image, named `<prefix>.<observation index>`, its blocks from `allocate`. */
  createEncoders(allocate: ParameterAllocator, prefix: string, encoderType: EncoderType): VisualEncoder[] {
    return this.visualObservations.map(
      (k) => new VisualEncoder(allocate, `${prefix}.${k}`, this.spec.observationSpecs[k], encoderType, this.encodingSize, observationLabel(this.spec, k)),
    );
  }

  /**
   * The input rows (count x width): `vectorRows` (count x vectorWidth) with each image's encoding
   * by `encoders` in its place; `vectorRows` itself when there are no images. With `keep`, the
   * encoders keep what their backward pass needs (in the caller's tf.tidy scope).
   */
  inputRows(
    encoders: readonly VisualEncoder[],
    observations: readonly Float32Array[],
    vectorRows: Float32Array,
    count: number,
    source: ParameterSource,
    keep: boolean,
  ): Float32Array {
    if (encoders.length === 0) return vectorRows;
    const width = this.width;
    const rows = new Float32Array(count * width);
    const encoding = new Float32Array(count * this.encodingSize);
    let column = 0;
    let vectorColumn = 0;
    let e = 0;
    this.observationSizes.forEach((size, k) => {
      if (this.visualObservations[e] === k) {
        copyTensorInto(encoders[e].forward(observations[k], count, source, keep), encoding);
        copyColumns(encoding, this.encodingSize, 0, rows, width, column, this.encodingSize, count);
        column += this.encodingSize;
        e++;
      } else {
        copyColumns(vectorRows, this.vectorWidth, vectorColumn, rows, width, column, size, count);
        vectorColumn += size;
        column += size;
      }
    });
    return rows;
  }
}
