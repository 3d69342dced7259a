/** Layers run one after another, as torch.nn.Sequential; the backward runs them in reverse. */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { GraphWriter, Layer, ParameterBlock, ParameterSource, TracedParameters, TracedPass } from './layer';

export class Sequential implements Layer {
  readonly blocks: readonly ParameterBlock[];
  readonly outputShape: readonly number[];

  constructor(
    readonly layers: readonly Layer[],
    /** The input's shape per sample, when there are no layers. */
    inputShape: readonly number[] = [],
  ) {
    this.blocks = layers.flatMap((layer) => layer.blocks);
    this.outputShape = layers.length > 0 ? layers[layers.length - 1].outputShape : inputShape;
  }

  initialize(parameters: Float32Array, random: SeededRandom): void {
    for (const layer of this.layers) layer.initialize(parameters, random);
  }

  forward(input: tf.Tensor, source: ParameterSource, keep: boolean): tf.Tensor {
    return this.layers.reduce((x, layer) => layer.forward(x, source, keep), input);
  }

  backward(outputGradient: tf.Tensor, source: ParameterSource, needInput: boolean): tf.Tensor | null {
    let gradient: tf.Tensor | null = outputGradient;
    for (let i = this.layers.length - 1; i >= 0 && gradient !== null; i--) {
      gradient = this.layers[i].backward(gradient, source, i > 0 || needInput);
    }
    return gradient;
  }

  tracedPass(input: tf.Tensor, parameters: TracedParameters): TracedPass {
    const passes: TracedPass[] = [];
    let output = input;
    for (const layer of this.layers) {
      const pass = layer.tracedPass(output, parameters);
      passes.push(pass);
      output = pass.output;
    }
    return { output, inputGradient: (dy) => passes.reduceRight((gradient, pass) => pass.inputGradient(gradient), dy) };
  }

  exportOnnx(graph: GraphWriter, input: string, name: string, parameters: Float32Array): string {
    return this.layers.reduce((x, layer, i) => layer.exportOnnx(graph, x, `${name}.${i}`, parameters), input);
  }
}

/** x + f(x), as a residual block adds its input to its layers' output. */
export class Residual implements Layer {
  readonly blocks: readonly ParameterBlock[];
  readonly outputShape: readonly number[];

  constructor(readonly inner: Layer) {
    this.blocks = inner.blocks;
    this.outputShape = inner.outputShape;
  }

  initialize(parameters: Float32Array, random: SeededRandom): void {
    this.inner.initialize(parameters, random);
  }

  forward(input: tf.Tensor, source: ParameterSource, keep: boolean): tf.Tensor {
    return tf.add(input, this.inner.forward(input, source, keep));
  }

  backward(outputGradient: tf.Tensor, source: ParameterSource, needInput: boolean): tf.Tensor | null {
    const inner = this.inner.backward(outputGradient, source, needInput);
    return inner === null ? null : tf.add(outputGradient, inner);
  }

  tracedPass(input: tf.Tensor, parameters: TracedParameters): TracedPass {
    const inner = this.inner.tracedPass(input, parameters);
    return { output: tf.add(input, inner.output), inputGradient: (dy) => tf.add(dy, inner.inputGradient(dy)) };
  }

  exportOnnx(graph: GraphWriter, input: string, name: string, parameters: Float32Array): string {
    const inner = this.inner.exportOnnx(graph, input, `${name}.layers`, parameters);
    return graph.node('Add', [input, inner], `${name}.output`);
  }
}
