/**
 * A fully connected layer, y = x W^T + b, batch first. W is out x in, row-major, as torch stores
 * it. No product runs with a transpose flag (5 to 10 times slower on the wasm backend): the
 * forward pass multiplies by W^T kept as its own tensor, and the backward transposes the
 * output gradient explicitly before dW = dy^T x.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { copyTensorInto, transposeInto } from '../tensor-io';
import { Layer, ParameterAllocator, ParameterBlock, ParameterSource, GraphWriter, blockValues } from './layer';

/** Upstream's initializations of a linear layer's weights (layers.py, with nonlinearity "linear"). */
export type DenseInit =
  /** normal with std gain / sqrt(fan_in) */
  | { readonly kind: 'kaimingNormal'; readonly gain: number }
  /** uniform in +-gain sqrt(6 / (fan_in + fan_out)) */
  | { readonly kind: 'xavierUniform'; readonly gain: number };

export class Dense implements Layer {
  readonly outputShape: readonly number[];
  readonly blocks: readonly ParameterBlock[];
  readonly weight: ParameterBlock;
  readonly bias: ParameterBlock;
  private tensors: { version: number; transposed: tf.Tensor2D; weight: tf.Tensor2D; bias: tf.Tensor1D } | null = null;
  private readonly transposedScratch: Float32Array;
  private input: tf.Tensor2D | null = null;

  constructor(
    allocate: ParameterAllocator,
    name: string,
    readonly inputs: number,
    readonly outputs: number,
    readonly init: DenseInit,
  ) {
    this.weight = allocate(`${name}.weight`, [outputs, inputs]);
    this.bias = allocate(`${name}.bias`, [outputs]);
    this.blocks = [this.weight, this.bias];
    this.outputShape = [outputs];
    this.transposedScratch = new Float32Array(inputs * outputs);
  }

  /** Weights as upstream's linear_layer draws them; biases 0. */
  initialize(parameters: Float32Array, random: SeededRandom): void {
    initializeLinearWeights(blockValues(parameters, this.weight), this.inputs, this.outputs, this.init, random);
    blockValues(parameters, this.bias).fill(0);
  }

  forward(input: tf.Tensor, source: ParameterSource, keep: boolean): tf.Tensor {
    const x = input.reshape([-1, this.inputs]) as tf.Tensor2D;
    if (keep) this.input = x;
    const { transposed, bias } = this.weightTensors(source);
    return tf.fused.matMul({ a: x, b: transposed, bias });
  }

  backward(outputGradient: tf.Tensor, source: ParameterSource, needInput: boolean): tf.Tensor | null {
    const x = this.input;
    if (x === null) throw new Error('Dense.backward() needs a kept forward pass first.');
    const dy = outputGradient as tf.Tensor2D;
    copyTensorInto(tf.matMul(tf.transpose(dy), x), source.gradient, this.weight.offset);
    copyTensorInto(tf.sum(dy, 0), source.gradient, this.bias.offset);
    return needInput ? tf.matMul(dy, this.weightTensors(source).weight) : null;
  }

  exportOnnx(graph: GraphWriter, input: string, name: string, parameters: Float32Array): string {
    const weight = graph.floats(`${name}.weight`, [this.outputs, this.inputs], blockValues(parameters, this.weight));
    const bias = graph.floats(`${name}.bias`, [this.outputs], blockValues(parameters, this.bias));
    return graph.node('Gemm', [input, weight, bias], `${name}.output`, { transB: { int: 1 } });
  }

  /** W^T, W and b as tensors, uploaded again only when the parameters changed. */
  private weightTensors(source: ParameterSource) {
    if (this.tensors !== null && this.tensors.version === source.version) return this.tensors;
    this.disposeTensors();
    const weights = blockValues(source.parameters, this.weight);
    transposeInto(weights, this.outputs, this.inputs, this.transposedScratch);
    this.tensors = tf.tidy(() => ({
      version: source.version,
      transposed: tf.keep(tf.tensor2d(this.transposedScratch, [this.inputs, this.outputs])),
      weight: tf.keep(tf.tensor2d(weights, [this.outputs, this.inputs])),
      bias: tf.keep(tf.tensor1d(blockValues(source.parameters, this.bias))),
    }));
    return this.tensors;
  }

  private disposeTensors(): void {
    if (this.tensors === null) return;
    tf.dispose([this.tensors.transposed, this.tensors.weight, this.tensors.bias]);
    this.tensors = null;
  }
}

/** Draws a linear layer's weights (outputs x inputs) as upstream's linear_layer does, in place. */
export function initializeLinearWeights(weights: Float32Array, inputs: number, outputs: number, init: DenseInit, random: SeededRandom): void {
  if (init.kind === 'kaimingNormal') {
    const std = init.gain / Math.sqrt(inputs);
    for (let i = 0; i < weights.length; i++) weights[i] = std * random.gaussian();
  } else {
    const bound = init.gain * Math.sqrt(6 / (inputs + outputs));
    for (let i = 0; i < weights.length; i++) weights[i] = random.range(-bound, bound);
  }
}
