/**
 * Max pooling over square windows without padding, as torch.nn.MaxPool2d(kernel, stride). The
 * gradient goes to the first maximum of each window (in the window's row-major order, as torch
 * picks it), found again from the kept input and output. Where tensors read back at once (wasm),
 * in JavaScript: on the wasm backend that is several times faster than its MaxPoolGrad kernel
 * (250 ms against about 30 on resnet's first pooling at batch 64, 84x84), and than recording the
 * positions with MaxPoolWithArgmax, whose forward is 10 times slower than plain pooling. On
 * WebGPU, with tfjs ops that stay on the GPU (a mask of each window's first maximum, then a
 * transposed convolution that places the gradients): the MaxPoolGrad kernel there sends a tie to
 * the window's last maximum, not its first.
 *
 * Its traced pass (layer.ts) keeps each window's maximum at its place: the map from d/d output to
 * d/d input is linear (a scatter to those places), and tfjs differentiates it, and the pooling
 * itself, by gathering from the same places. Where tensors read back at once the places are
 * found in JavaScript; on WebGPU they are the mask above (tracedPassOnDevice), 5 times slower on
 * wasm (a GAIL update on resnet, 3x40x40 images, 16 rows: 3.3 s against 0.64).
 */
import * as tf from '@tensorflow/tfjs';
import { readsSynchronously, tensorView } from '../tensor-io';
import { GraphWriter, Layer, ParameterBlock, TracedPass } from './layer';

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
    if (!readsSynchronously()) return this.placeAtMaxima(this.firstMaximumMask(input, output), outputGradient as tf.Tensor4D, input.shape);
    return scatter(outputGradient, this.maxima(input, output), input.shape);
  }

  tracedPass(input: tf.Tensor): TracedPass {
    return readsSynchronously() ? this.readingTracedPass(input as tf.Tensor4D) : this.tracedPassOnDevice(input as tf.Tensor4D);
  }

  /**
   * tracedPass() in tfjs ops only, for the backends that cannot read mid-pass (WebGPU); every
   * backend runs it. tfjs's own gradient of tf.maxPool (MaxPoolGrad) has no gradient of its own
   * in tfjs 4.22, nor has a strided slice, so both maps are custom gradients around one mask of
   * the windows' first maxima. Found outside them, the mask is a constant to tfjs (nothing it
   * differentiates reads it), as the places are where the maxima stay put: exact everywhere but
   * at ties, where the derivative does not exist.
   */
  tracedPassOnDevice(input: tf.Tensor4D): TracedPass {
    const maxima = tf.maxPool(input, this.kernel, this.stride, 'valid');
    const mask = this.firstMaximumMask(input, maxima);
    // Saved through tfjs (a kept copy): the pass's own tensors are freed before its gradient runs.
    const pool = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      (args[1] as tf.GradSaveFunc)([mask]);
      // A copy made here: the tensor above is no output of the custom gradient.
      return { value: tf.clone(maxima), gradFunc: (dy: tf.Tensor, [saved]: tf.Tensor[]) => this.placeAtMaxima(saved as tf.Tensor2D, dy as tf.Tensor4D, input.shape) };
    }) as (x: tf.Tensor4D) => tf.Tensor4D;
    const unpool = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      (args[1] as tf.GradSaveFunc)([mask]);
      return {
        value: this.placeAtMaxima(mask, args[0] as tf.Tensor4D, input.shape),
        gradFunc: (dx: tf.Tensor, [saved]: tf.Tensor[]) => this.readAtMaxima(saved as tf.Tensor2D, dx as tf.Tensor4D),
      };
    }) as (dy: tf.Tensor) => tf.Tensor;
    return { output: pool(input), inputGradient: unpool };
  }

  /** tracedPass() where tensors read back at once: the maxima's places found in JavaScript (maxima()), faster there. */
  private readingTracedPass(x: tf.Tensor4D): TracedPass {
    let places: Int32Array = new Int32Array(0);
    const pool = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      const output = tf.maxPool(args[0] as tf.Tensor4D, this.kernel, this.stride, 'valid');
      places = this.maxima(args[0] as tf.Tensor4D, output);
      return { value: output, gradFunc: (dy: tf.Tensor) => scatter(dy, places, x.shape) };
    }) as (x: tf.Tensor4D) => tf.Tensor4D;
    const output = pool(x);
    const unpool = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => ({
      value: scatter(args[0] as tf.Tensor, places, x.shape),
      gradFunc: (dx: tf.Tensor) => gather(dx, places, output.shape),
    })) as (dy: tf.Tensor) => tf.Tensor;
    return { output, inputGradient: unpool };
  }

  /**
   * [output elements, places]: each output element's window (batch, row, column, channel order;
   * the window's places row-major), one strided slice per place. 2-D: the webgpu backend's cumsum
   * takes no rank 5.
   */
  private windows(values: tf.Tensor4D): tf.Tensor2D {
    const [batch, , , channels] = values.shape;
    const [outHeight, outWidth] = this.outputShape;
    const { kernel, stride } = this;
    const slices: tf.Tensor4D[] = [];
    for (let ky = 0; ky < kernel; ky++) {
      for (let kx = 0; kx < kernel; kx++) {
        const end = [batch, ky + stride * (outHeight - 1) + 1, kx + stride * (outWidth - 1) + 1, channels];
        slices.push(tf.stridedSlice(values, [0, ky, kx, 0], end, [1, stride, stride, 1]) as tf.Tensor4D);
      }
    }
    return tf.reshape(tf.stack(slices, 4), [-1, kernel * kernel]);
  }

  /** windows()'s shape: 1 at the first place of each window equal to its maximum (`output`), 0 elsewhere. */
  private firstMaximumMask(input: tf.Tensor4D, output: tf.Tensor4D): tf.Tensor2D {
    const isMaximum = tf.cast(tf.equal(this.windows(input), tf.reshape(output, [-1, 1])), 'float32');
    const noMaximumBefore = tf.cast(tf.equal(tf.cumsum(isMaximum, 1, true), 0), 'float32');
    return tf.mul(isMaximum, noMaximumBefore);
  }

  /**
   * Each output element's gradient sent to its window's place in `mask`, in the input's shape
   * (overlapping windows add): a transposed convolution whose filter sends channel c x places +
   * place to channel c at that place, then zeros for the rows and columns no window covers.
   */
  private placeAtMaxima(mask: tf.Tensor2D, outputGradient: tf.Tensor4D, inputShape: readonly [number, number, number, number]): tf.Tensor4D {
    const [batch, height, width, channels] = inputShape;
    const [outHeight, outWidth] = this.outputShape;
    const { kernel, stride } = this;
    const covered = [stride * (outHeight - 1) + kernel, stride * (outWidth - 1) + kernel];
    const routed = tf.mul(mask, tf.reshape(outputGradient, [-1, 1]));
    const placed = tf.conv2dTranspose(
      tf.reshape(routed, [batch, outHeight, outWidth, channels * kernel * kernel]) as tf.Tensor4D,
      this.placementFilter(channels),
      [batch, covered[0], covered[1], channels],
      stride,
      'valid',
    );
    return tf.pad(placed, [[0, 0], [0, height - covered[0]], [0, width - covered[1]], [0, 0]]);
  }

  /** placeAtMaxima()'s adjoint: each output element's value read from its window's place in `mask` of an input-shaped tensor. */
  private readAtMaxima(mask: tf.Tensor2D, values: tf.Tensor4D): tf.Tensor4D {
    // Each row summed by a product with a column of ones: on SwiftShader the webgpu backend's sum
    // over many rows of 9 took 9 times as long (2.2 s against 0.26 on 18816 rows).
    const picked = tf.matMul(tf.mul(this.windows(values), mask), tf.ones([this.kernel * this.kernel, 1]));
    return tf.reshape(picked, [values.shape[0], ...this.outputShape]);
  }

  /** [kernel, kernel, channels, channels x places]: 1 where input channel c x places + place goes to channel c at that place. */
  private placementFilter(channels: number): tf.Tensor4D {
    const { kernel } = this;
    const places = kernel * kernel;
    const values = new Float32Array(places * channels * channels * places);
    for (let place = 0; place < places; place++) {
      for (let c = 0; c < channels; c++) values[(place * channels + c) * channels * places + c * places + place] = 1;
    }
    return tf.tensor4d(values, [kernel, kernel, channels, channels * places]);
  }

  /** For each output element, the flat index of its window's first element equal to the maximum (pooling returns one of them). */
  private maxima(input: tf.Tensor4D, output: tf.Tensor4D): Int32Array {
    const [batch, height, width, channels] = input.shape;
    const [outHeight, outWidth] = this.outputShape;
    // Views, not copies: nothing below allocates on the backend.
    const x = tensorView(input);
    const maxima = tensorView(output);
    const places = new Int32Array(maxima.length);
    const { kernel, stride } = this;
    let o = 0;
    for (let b = 0; b < batch; b++) {
      for (let oy = 0; oy < outHeight; oy++) {
        for (let ox = 0; ox < outWidth; ox++) {
          for (let c = 0; c < channels; c++, o++) {
            let found = -1;
            for (let ky = 0; ky < kernel && found < 0; ky++) {
              const row = (b * height + oy * stride + ky) * width;
              for (let kx = 0; kx < kernel; kx++) {
                const at = (row + ox * stride + kx) * channels + c;
                if (x[at] === maxima[o]) {
                  found = at;
                  break;
                }
              }
            }
            places[o] = found;
          }
        }
      }
    }
    return places;
  }

  exportOnnx(graph: GraphWriter, input: string, name: string): string {
    return graph.node('MaxPool', [input], `${name}.output`, {
      kernel_shape: { ints: [this.kernel, this.kernel] },
      strides: { ints: [this.stride, this.stride] },
      pads: { ints: [0, 0, 0, 0] },
    });
  }
}

/** The output gradient added into an input-shaped tensor at each output's place. */
function scatter(outputGradient: tf.Tensor, places: Int32Array, inputShape: readonly number[]): tf.Tensor4D {
  const gradient = tensorView(outputGradient);
  const inputGradient = new Float32Array(inputShape.reduce((a, b) => a * b, 1));
  for (let o = 0; o < places.length; o++) inputGradient[places[o]] += gradient[o];
  return tf.tensor4d(inputGradient, inputShape as [number, number, number, number]);
}

/** scatter()'s adjoint: each output's value read from its place in an input-shaped tensor. */
function gather(inputValues: tf.Tensor, places: Int32Array, outputShape: readonly number[]): tf.Tensor4D {
  const values = inputValues.dataSync();
  return tf.tensor4d(Float32Array.from(places, (place) => values[place]), outputShape as [number, number, number, number]);
}
