/**
 * A 2D convolution, as torch.nn.Conv2d(in, out, kernel, stride, padding) with its default
 * initialization, run channel last (NHWC) as tfjs convolves.
 *
 * The weight is stored out x kernel x kernel x in (row-major): row o of the out x (k k in) matrix
 * W is filter o, its columns in the order of an image patch read row by row, channel last. That
 * order makes both halves of the backward pass plain matrix products over image patches
 * (im2col), which the wasm backend runs fast, where its own convolution-gradient kernels are
 * 10 to 40 times slower than the forward convolution (and it has no Conv2DBackpropFilter at all):
 *   dW^T = P^T dY and dP = dY W, with P the patches (one row per output pixel) and dY the output
 *   gradient (one row per output pixel); dX adds each row of dP back where its patch came from.
 * P is built transposed (one row per patch position): as the right operand of the product it
 * would be repacked by the backend at every call, which costs ten times the product itself.
 * The exported ONNX Conv takes torch's out x in x k x k layout, permuted at export.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { copyTensorInto, transposeInto } from '../tensor-io';
import { GraphWriter, Layer, ParameterAllocator, ParameterBlock, ParameterSource, blockValues } from './layer';

export interface Conv2dShape {
  /** The input image, [height, width, channels]. */
  readonly input: readonly [number, number, number];
  readonly outChannels: number;
  readonly kernel: number;
  readonly stride: number;
  /** Zeros added on every side, as torch's padding. */
  readonly padding: number;
}

/** Output height or width of a convolution, as upstream's conv_output_shape. */
export function convOutputSize(size: number, kernel: number, stride: number, padding = 0): number {
  return Math.floor((size + 2 * padding - (kernel - 1) - 1) / stride + 1);
}

export class Conv2d implements Layer {
  readonly outputShape: readonly [number, number, number];
  readonly blocks: readonly ParameterBlock[];
  readonly weight: ParameterBlock;
  readonly bias: ParameterBlock;
  /** Values in one patch: kernel x kernel x input channels. */
  private readonly patchSize: number;
  private tensors: { version: number; filter: tf.Tensor4D; matrix: tf.Tensor2D; bias: tf.Tensor1D } | null = null;
  private input: tf.Tensor4D | null = null;

  constructor(
    allocate: ParameterAllocator,
    name: string,
    readonly shape: Conv2dShape,
  ) {
    const [height, width, channels] = shape.input;
    const { outChannels, kernel, stride, padding } = shape;
    this.patchSize = kernel * kernel * channels;
    this.weight = allocate(`${name}.weight`, [outChannels, kernel, kernel, channels]);
    this.bias = allocate(`${name}.bias`, [outChannels]);
    this.blocks = [this.weight, this.bias];
    this.outputShape = [
      convOutputSize(height, kernel, stride, padding),
      convOutputSize(width, kernel, stride, padding),
      outChannels,
    ];
    if (this.outputShape[0] < 1 || this.outputShape[1] < 1) {
      throw new Error(`A ${kernel}x${kernel} convolution cannot take a ${height}x${width} image.`);
    }
  }

  /** torch's default for Conv2d: weights and biases uniform in +-1/sqrt(fan_in). */
  initialize(parameters: Float32Array, random: SeededRandom): void {
    const bound = 1 / Math.sqrt(this.patchSize);
    for (const block of this.blocks) {
      const values = blockValues(parameters, block);
      for (let i = 0; i < values.length; i++) values[i] = random.range(-bound, bound);
    }
  }

  forward(input: tf.Tensor, source: ParameterSource, keep: boolean): tf.Tensor {
    const x = input as tf.Tensor4D;
    if (keep) this.input = x;
    const { filter, bias } = this.weightTensors(source);
    const p = this.shape.padding;
    const pad = p === 0 ? 'valid' : ([[0, 0], [p, p], [p, p], [0, 0]] as [[number, number], [number, number], [number, number], [number, number]]);
    return tf.fused.conv2d({ x, filter, strides: this.shape.stride, pad, bias });
  }

  backward(outputGradient: tf.Tensor, source: ParameterSource, needInput: boolean): tf.Tensor | null {
    const x = this.input;
    if (x === null) throw new Error('Conv2d.backward() needs a kept forward pass first.');
    const batch = x.shape[0];
    const [outHeight, outWidth, outChannels] = this.outputShape;
    const pixels = batch * outHeight * outWidth;
    const dy = outputGradient.reshape([pixels, outChannels]) as tf.Tensor2D;
    const patchesByPosition = tf.tensor2d(this.transposedPatches(x), [this.patchSize, pixels]);
    const weightGradientT = new Float32Array(this.patchSize * outChannels);
    copyTensorInto(tf.matMul(patchesByPosition, dy), weightGradientT);
    transposeInto(weightGradientT, this.patchSize, outChannels, source.gradient, this.weight.offset);
    copyTensorInto(tf.sum(dy, 0), source.gradient, this.bias.offset);
    if (!needInput) return null;
    const patchGradient = tf.matMul(dy, this.weightTensors(source).matrix);
    return tf.tensor4d(this.addPatchesBack(patchGradient, batch), x.shape);
  }

  exportOnnx(graph: GraphWriter, input: string, name: string, parameters: Float32Array): string {
    const [, , channels] = this.shape.input;
    const { outChannels, kernel, stride, padding } = this.shape;
    // out x k x k x in  ->  torch's out x in x k x k
    const ours = blockValues(parameters, this.weight);
    const torchLayout = new Float32Array(ours.length);
    for (let o = 0; o < outChannels; o++) {
      for (let ky = 0; ky < kernel; ky++) {
        for (let kx = 0; kx < kernel; kx++) {
          for (let c = 0; c < channels; c++) {
            torchLayout[((o * channels + c) * kernel + ky) * kernel + kx] = ours[((o * kernel + ky) * kernel + kx) * channels + c];
          }
        }
      }
    }
    const weight = graph.floats(`${name}.weight`, [outChannels, channels, kernel, kernel], torchLayout);
    const bias = graph.floats(`${name}.bias`, [outChannels], blockValues(parameters, this.bias));
    return graph.node('Conv', [input, weight, bias], `${name}.output`, {
      kernel_shape: { ints: [kernel, kernel] },
      strides: { ints: [stride, stride] },
      pads: { ints: [padding, padding, padding, padding] },
      dilations: { ints: [1, 1] },
      group: { int: 1 },
    });
  }

  /**
   * The image patches under each output pixel, transposed: row k holds patch position k
   * (kernel row, kernel column, channel) of every output pixel in turn; zeros outside the image.
   */
  private transposedPatches(x: tf.Tensor4D): Float32Array {
    const [batch, height, width, channels] = x.shape;
    const image = new Float32Array(batch * height * width * channels);
    copyTensorInto(x, image);
    const [outHeight, outWidth] = this.outputShape;
    const { kernel, stride, padding } = this.shape;
    const pixels = batch * outHeight * outWidth;
    const patches = new Float32Array(this.patchSize * pixels);
    for (let ky = 0; ky < kernel; ky++) {
      for (let kx = 0; kx < kernel; kx++) {
        for (let c = 0; c < channels; c++) {
          let target = ((ky * kernel + kx) * channels + c) * pixels;
          for (let b = 0; b < batch; b++) {
            for (let oy = 0; oy < outHeight; oy++) {
              const iy = oy * stride - padding + ky;
              if (iy < 0 || iy >= height) {
                target += outWidth; // stays zero
                continue;
              }
              const rowStart = (b * height + iy) * width;
              for (let ox = 0; ox < outWidth; ox++, target++) {
                const ix = ox * stride - padding + kx;
                if (ix >= 0 && ix < width) patches[target] = image[(rowStart + ix) * channels + c];
              }
            }
          }
        }
      }
    }
    return patches;
  }

  /** The input gradient: each patch's gradient added back where the patch was read from. */
  private addPatchesBack(patchGradient: tf.Tensor, batch: number): Float32Array {
    const [height, width, channels] = this.shape.input;
    const [outHeight, outWidth] = this.outputShape;
    const { kernel, stride, padding } = this.shape;
    const gradients = new Float32Array(batch * outHeight * outWidth * this.patchSize);
    copyTensorInto(patchGradient, gradients);
    const image = new Float32Array(batch * height * width * channels);
    let row = 0;
    for (let b = 0; b < batch; b++) {
      for (let oy = 0; oy < outHeight; oy++) {
        for (let ox = 0; ox < outWidth; ox++, row += this.patchSize) {
          for (let ky = 0; ky < kernel; ky++) {
            const iy = oy * stride - padding + ky;
            if (iy < 0 || iy >= height) continue;
            for (let kx = 0; kx < kernel; kx++) {
              const ix = ox * stride - padding + kx;
              if (ix < 0 || ix >= width) continue;
              const target = ((b * height + iy) * width + ix) * channels;
              const source = row + (ky * kernel + kx) * channels;
              for (let c = 0; c < channels; c++) image[target + c] += gradients[source + c];
            }
          }
        }
      }
    }
    return image;
  }

  /** The filter (k x k x in x out, for tf.conv2d), W (out x patch) and b as tensors, per parameter version. */
  private weightTensors(source: ParameterSource) {
    if (this.tensors !== null && this.tensors.version === source.version) return this.tensors;
    if (this.tensors !== null) tf.dispose([this.tensors.filter, this.tensors.matrix, this.tensors.bias]);
    const { kernel, outChannels } = this.shape;
    const channels = this.shape.input[2];
    const matrix = blockValues(source.parameters, this.weight);
    const filter = new Float32Array(matrix.length);
    transposeInto(matrix, outChannels, this.patchSize, filter);
    this.tensors = tf.tidy(() => ({
      version: source.version,
      filter: tf.keep(tf.tensor4d(filter, [kernel, kernel, channels, outChannels])),
      matrix: tf.keep(tf.tensor2d(matrix, [outChannels, this.patchSize])),
      bias: tf.keep(tf.tensor1d(blockValues(source.parameters, this.bias))),
    }));
    return this.tensors;
  }
}
