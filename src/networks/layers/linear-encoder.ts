/**
 * Upstream's LinearEncoder (torch_entities/layers.py): `numLayers` dense layers of `hiddenUnits`,
 * each drawn KaimingHeNormal (gain 1 but in POCA's critic) and followed by Swish. The MLP of
 * every network body.
 *
 * A Sequential of Swish dense layers (its batch-first passes and export are Sequential's) that
 * also chains its layers' other ways of running (columns, JavaScript; see dense.ts).
 */
import * as tf from '@tensorflow/tfjs';
import { Dense, linearLayer } from './dense';
import { Layer, ParameterAllocator, ParameterSource, TracedParameters, TracedPass } from './layer';
import { Sequential } from './sequential';

/**
 * What a network body runs after its observation encoders: the LinearEncoder, or upstream's
 * ConditionalEncoder (conditional-encoder.ts) when a goal signal conditions it. Each runs in
 * the three ways dense.ts describes.
 */
export interface BodyEncoder extends Layer {
  /** Multiply-adds per sample. */
  readonly multiplyAdds: number;
  forwardColumns(input: tf.Tensor2D, source: ParameterSource, keep: boolean): tf.Tensor2D;
  /** forwardColumns()'s backward; `inputRows` (count x in), when the caller has them, may save a transpose. */
  backwardColumns(outputGradient: tf.Tensor2D, source: ParameterSource, needInput: boolean, inputRows?: tf.Tensor2D): tf.Tensor2D | null;
  forwardInJavaScript(input: Float32Array, count: number, parameters: Float32Array, keep: boolean): Float32Array;
  backwardInJavaScript(outputGradient: Float32Array, parameters: Float32Array, gradient: Float32Array, needInput: boolean): Float32Array | null;
  tracedPass(input: tf.Tensor2D, parameters: TracedParameters): TracedPass<tf.Tensor2D>;
  /** Frees the tensors kept between passes. */
  dispose(): void;
}

export class LinearEncoder extends Sequential implements BodyEncoder {
  declare readonly layers: readonly Dense[];

  /** Blocks `<name>.<l>.weight` and `<name>.<l>.bias`, layer after layer. */
  constructor(allocate: ParameterAllocator, name: string, readonly inputs: number, hiddenUnits: number, numLayers: number, gain = 1) {
    super(
      Array.from({ length: numLayers }, (_, l) =>
        linearLayer(allocate, `${name}.${l}`, l === 0 ? inputs : hiddenUnits, hiddenUnits, { kind: 'kaimingNormal', gain }, 'swish'),
      ),
      [inputs],
    );
  }

  get multiplyAdds(): number {
    return this.layers.reduce((total, layer) => total + layer.multiplyAdds, 0);
  }

  forwardColumns(input: tf.Tensor2D, source: ParameterSource, keep: boolean): tf.Tensor2D {
    return this.layers.reduce((x, layer) => layer.forwardColumns(x, source, keep), input);
  }

  /** forwardColumns()'s backward; `inputRows` saves the first layer a transpose. */
  backwardColumns(outputGradient: tf.Tensor2D, source: ParameterSource, needInput: boolean, inputRows?: tf.Tensor2D): tf.Tensor2D | null {
    let gradient: tf.Tensor2D | null = outputGradient;
    for (let l = this.layers.length - 1; l >= 0 && gradient !== null; l--) {
      gradient = this.layers[l].backwardColumns(gradient, source, l > 0 || needInput, l === 0 ? inputRows : undefined);
    }
    return gradient;
  }

  forwardInJavaScript(input: Float32Array, count: number, parameters: Float32Array, keep: boolean): Float32Array {
    return this.layers.reduce((x, layer) => layer.forwardInJavaScript(x, count, parameters, keep), input);
  }

  backwardInJavaScript(outputGradient: Float32Array, parameters: Float32Array, gradient: Float32Array, needInput: boolean): Float32Array | null {
    let below: Float32Array | null = outputGradient;
    for (let l = this.layers.length - 1; l >= 0 && below !== null; l--) {
      below = this.layers[l].backwardInJavaScript(below, parameters, gradient, l > 0 || needInput);
    }
    return below;
  }

  /** The encoding (count x hidden) of `input` (count x in) as a traced pass (layer.ts). */
  override tracedPass(input: tf.Tensor2D, parameters: TracedParameters): TracedPass<tf.Tensor2D> {
    return super.tracedPass(input, parameters) as TracedPass<tf.Tensor2D>;
  }

  dispose(): void {
    for (const layer of this.layers) layer.dispose();
  }
}
