/**
 * Max pooling over square windows without padding, as torch.nn.MaxPool2d(kernel, stride). The
 * gradient goes to the first maximum of each window (tfjs's MaxPoolGrad, which the wasm backend has).
 */
import * as tf from '@tensorflow/tfjs';
import { GraphWriter, Layer, ParameterBlock } from './layer';

/** Output height or width of a pooling window, as upstream's pool_out_shape (stride 2) generalizes. */
export function poolOutputSize(size: number, kernel: number, stride: number): number {
  return Math.floor((size - kernel) / stride) + 1;
}

export class MaxPool2d implements Layer {
  readonly blocks: readonly ParameterBlock[] = [];
  readonly outputShape: readonly [number, number, number];
  private pass: { input: tf.Tensor4D; output: tf.Tensor4D } | null = null;

  constructor(
    input: readonly [number, number, number],
    readonly kernel: number,
    readonly stride: number,
  ) {
    const [height, width, channels] = input;
    this.outputShape = [poolOutputSize(height, kernel, stride), poolOutputSize(width, kernel, stride), channels];
    if (this.outputShape[0] < 1 || this.outputShape[1] < 1) {
      throw new Error(`A ${kernel}x${kernel} max pooling cannot take a ${height}x${width} image.`);
    }
  }

  initialize(): void {}

  forward(input: tf.Tensor, _source: unknown, keep: boolean): tf.Tensor {
    const output = tf.maxPool(input as tf.Tensor4D, this.kernel, this.stride, 'valid');
    if (keep) this.pass = { input: input as tf.Tensor4D, output };
    return output;
  }

  backward(outputGradient: tf.Tensor, _source: unknown, needInput: boolean): tf.Tensor | null {
    if (!needInput) return null;
    if (this.pass === null) throw new Error('MaxPool2d.backward() needs a kept forward pass first.');
    const { input, output } = this.pass;
    return tf.engine().runKernel(
      'MaxPoolGrad',
      { dy: outputGradient, input, output },
      { filterSize: this.kernel, strides: this.stride, pad: 'valid' },
    ) as tf.Tensor;
  }

  exportOnnx(graph: GraphWriter, input: string, name: string): string {
    return graph.node('MaxPool', [input], `${name}.output`, {
      kernel_shape: { ints: [this.kernel, this.kernel] },
      strides: { ints: [this.stride, this.stride] },
      pads: { ints: [0, 0, 0, 0] },
    });
  }
}
