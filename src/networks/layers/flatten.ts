/**
 * Images to feature vectors, in channel-first order (channel, then row, then column) as torch
 * flattens its NCHW tensors: a dense layer after it keeps upstream's weight layout, and the
 * exported graph, whose images are channel first, flattens with a plain Flatten as upstream's
 * does. Here images run channel last, so the forward pass transposes first (a small tensor: the
 * last convolution's output).
 */
import * as tf from '@tensorflow/tfjs';
import { transposeMerged } from '../transpose';
import { GraphWriter, Layer, ParameterBlock, TracedPass, sizeOf } from './layer';

export class Flatten implements Layer {
  readonly blocks: readonly ParameterBlock[] = [];
  readonly outputShape: readonly number[];
  private readonly image: boolean;

  constructor(readonly input: readonly number[]) {
    this.outputShape = [sizeOf(input)];
    this.image = input.length === 3;
  }

  initialize(): void {}

  forward(input: tf.Tensor): tf.Tensor {
    const channelFirst = this.image ? transposeMerged(input, [0, 3, 1, 2]) : input;
    return channelFirst.reshape([input.shape[0], this.outputShape[0]]);
  }

  backward(outputGradient: tf.Tensor, _source: unknown, needInput: boolean): tf.Tensor | null {
    if (!needInput) return null;
    const batch = outputGradient.shape[0];
    if (!this.image) return outputGradient.reshape([batch, ...this.input]);
    const [height, width, channels] = this.input;
    return transposeMerged(outputGradient.reshape([batch, channels, height, width]), [0, 2, 3, 1]);
  }

  /** Its forward and backward are reshapes and transposes, which tfjs differentiates. */
  tracedPass(input: tf.Tensor): TracedPass {
    return { output: this.forward(input), inputGradient: (dy) => this.backward(dy, null, true)! };
  }

  exportOnnx(graph: GraphWriter, input: string, name: string): string {
    return graph.node('Flatten', [input], `${name}.output`, { axis: { int: 1 } });
  }
}
