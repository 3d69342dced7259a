/**
 * Images to feature vectors. Here an image is channel last, so the features come in
 * height, width, channel order; the exported graph, whose images are channel first, transposes
 * to that order before flattening, so that the dense layer after it keeps its weights as trained.
 */
import * as tf from '@tensorflow/tfjs';
import { GraphWriter, Layer, ParameterBlock, sizeOf } from './layer';

export class Flatten implements Layer {
  readonly blocks: readonly ParameterBlock[] = [];
  readonly outputShape: readonly number[];
  private inputShape: number[] | null = null;

  constructor(readonly input: readonly number[]) {
    this.outputShape = [sizeOf(input)];
  }

  initialize(): void {}

  forward(input: tf.Tensor, _source: unknown, keep: boolean): tf.Tensor {
    if (keep) this.inputShape = input.shape;
    return input.reshape([input.shape[0], this.outputShape[0]]);
  }

  backward(outputGradient: tf.Tensor, _source: unknown, needInput: boolean): tf.Tensor | null {
    if (!needInput) return null;
    if (this.inputShape === null) throw new Error('Flatten.backward() needs a kept forward pass first.');
    return outputGradient.reshape(this.inputShape);
  }

  exportOnnx(graph: GraphWriter, input: string, name: string): string {
    const channelLast = this.input.length === 3 ? graph.node('Transpose', [input], `${name}.channel_last`, { perm: { ints: [0, 2, 3, 1] } }) : input;
    return graph.node('Flatten', [channelLast], `${name}.output`, { axis: { int: 1 } });
  }
}
