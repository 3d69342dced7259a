/**
 * A 2D convolution, as torch.nn.Conv2d(in, out, kernel, stride, padding) with its default
 * initialization, run channel last (NHWC) as tfjs convolves.
 *
 * The weight is stored out x kernel x kernel x in (row-major): row o of the out x (k k in) matrix
 * W is filter o, its columns in the order of an image patch read row by row, channel last.
 *
 * The backward pass is built from forward convolutions and plain products, which the wasm
 * backend (XNNPACK) runs fast, where its own convolution-gradient kernels are 10 to 40 times
 * slower than the forward convolution (and it has no Conv2DBackpropFilter at all). Measured on
 * this project's layers (bench:ppo's visual rows):
 *  - dW: a convolution of the input, batch and channels swapped ([in, H, W, batch]), by the
 *    output gradient as the filter ([outH, outW, batch, out]) dilated by the stride: each filter
 *    tap sums input x gradient over the batch and the output pixels.
 *  - dX, stride 1: a convolution of the output gradient, padded by kernel - 1 - padding, by the
 *    filter flipped in space with in and out swapped.
 *  - dX, larger strides: split by where each input pixel falls within a stride (stride^2 phases);
 *    each phase is a stride-1 convolution of the output gradient with the filter taps of that
 *    phase, flipped; the phases are then interleaved. (One convolution of the gradient dilated by
 *    the stride would multiply stride^2 as many zeros; im2col's col2im runs in JavaScript.)
 * The exported ONNX Conv takes torch's out x in x k x k layout, permuted at export.
 *
 * Its traced pass (layer.ts) runs the same three computations as two ops of its own that tfjs
 * differentiates: the convolution (d/dx is the input gradient, d/dW the filter gradient) and its
 * input gradient, which is linear in both dY and W: d<h, dX(dY, W)>/d dY is the convolution of h,
 * and d/dW the filter gradient of input h and output gradient dY.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { transposeInto, writeGradient } from '../tensor-io';
import { transposeMerged } from '../transpose';
import { GraphWriter, Layer, ParameterAllocator, ParameterBlock, ParameterSource, TracedParameters, TracedPass, blockValues, deviceBlock } from './layer';

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
  private tensors: { version: number; filter: tf.Tensor4D; reversed: ReversedFilters; bias: tf.Tensor1D } | null = null;
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
    return this.convolve(x, filter, bias);
  }

  backward(outputGradient: tf.Tensor, source: ParameterSource, needInput: boolean): tf.Tensor | null {
    const x = this.input;
    if (x === null) throw new Error('Conv2d.backward() needs a kept forward pass first.');
    const dy = outputGradient as tf.Tensor4D;
    writeGradient(this.weightGradient(x, dy), source.gradient, this.weight.offset);
    writeGradient(biasGradient(dy), source.gradient, this.bias.offset);
    return needInput ? this.inputGradient(dy, this.weightTensors(source).reversed) : null;
  }

  tracedPass(input: tf.Tensor, parameters: TracedParameters): TracedPass {
    const weight = parameters(this.weight) as tf.Tensor4D;
    // The inputs a gradient reads are saved: tfjs frees the forward pass's other tensors first.
    const convolution = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      const [x, w, b, save] = args as [tf.Tensor4D, tf.Tensor4D, tf.Tensor1D, tf.GradSaveFunc];
      save([x, w]);
      return {
        value: this.convolve(x, filterOf(w), b),
        gradFunc: (dy: tf.Tensor, [savedX, savedW]: tf.Tensor[]) => {
          const gradient = dy as tf.Tensor4D;
          return [this.inputGradient(gradient, this.reversedFiltersOf(savedW as tf.Tensor4D)), this.weightGradient(savedX as tf.Tensor4D, gradient), biasGradient(gradient)];
        },
      };
    }) as (x: tf.Tensor4D, w: tf.Tensor4D, b: tf.Tensor) => tf.Tensor4D;
    const inputGradient = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      const [dy, w, save] = args as [tf.Tensor4D, tf.Tensor4D, tf.GradSaveFunc];
      save([dy, w]);
      return {
        value: this.inputGradient(dy, this.reversedFiltersOf(w)),
        gradFunc: (h: tf.Tensor, [savedDy, savedW]: tf.Tensor[]) => [
          this.convolve(h as tf.Tensor4D, filterOf(savedW as tf.Tensor4D), null),
          this.weightGradient(h as tf.Tensor4D, savedDy as tf.Tensor4D),
        ],
      };
    }) as (dy: tf.Tensor4D, w: tf.Tensor4D) => tf.Tensor4D;
    return {
      output: convolution(input as tf.Tensor4D, weight, parameters(this.bias)),
      inputGradient: (dy) => inputGradient(dy as tf.Tensor4D, weight),
    };
  }

  private convolve(x: tf.Tensor4D, filter: tf.Tensor4D, bias: tf.Tensor | null): tf.Tensor4D {
    const p = this.shape.padding;
    const pad = p === 0 ? 'valid' : ([[0, 0], [p, p], [p, p], [0, 0]] as [[number, number], [number, number], [number, number], [number, number]]);
    return bias === null ? tf.conv2d(x, filter, this.shape.stride, pad) : tf.fused.conv2d({ x, filter, strides: this.shape.stride, pad, bias });
  }

  /** dW (out x k x k x in, as the block) from the input and dY. */
  private weightGradient(x: tf.Tensor4D, dy: tf.Tensor4D): tf.Tensor {
    const { kernel, stride, padding, outChannels } = this.shape;
    const channels = this.shape.input[2];
    const padded = padding > 0 ? tf.pad(x, [[0, 0], [padding, padding], [padding, padding], [0, 0]]) : x;
    const byChannel = transposeMerged(padded, [3, 1, 2, 0]) as tf.Tensor4D;
    const gradientFilter = transposeMerged(dy, [1, 2, 0, 3]) as tf.Tensor4D;
    const taps = tf.conv2d(byChannel, gradientFilter, 1, 'valid', 'NHWC', stride);
    // [in, k', k', out], k' >= k where the stride does not divide the input: the first k taps.
    return transposeMerged(tf.slice(taps, [0, 0, 0, 0], [channels, kernel, kernel, outChannels]), [3, 1, 2, 0]);
  }

  /** dX from dY. */
  private inputGradient(dy: tf.Tensor4D, { flipped, phases }: ReversedFilters): tf.Tensor4D {
    const { kernel, padding } = this.shape;
    if (flipped !== null) {
      const edge = kernel - 1 - padding;
      return tf.conv2d(dy, flipped, 1, [[0, 0], [edge, edge], [edge, edge], [0, 0]]);
    }
    return this.stridedInputGradient(dy, phases);
  }

  /**
   * dX for stride s > 1. An input row iy is reached by kernel rows ky = (iy + padding) mod s + s t
   * from output rows (iy + padding - ky) / s: per phase (iy + padding) mod s, a stride-1 "full"
   * convolution of dY with that phase's taps, flipped (likewise for columns).
   */
  private stridedInputGradient(dy: tf.Tensor4D, phases: readonly Phase[]): tf.Tensor4D {
    const { kernel, stride, padding } = this.shape;
    const [height, width, channels] = this.shape.input;
    const [batch, outHeight, outWidth] = dy.shape;
    const mostTaps = Math.ceil(kernel / stride);
    const rows = outHeight + mostTaps - 1;
    const cols = outWidth + mostTaps - 1;
    const byRowPhase = [];
    for (let ry = 0; ry < stride; ry++) {
      const byColumnPhase = [];
      for (let rx = 0; rx < stride; rx++) {
        const phase = phases[ry * stride + rx];
        if (phase.filter === null) {
          byColumnPhase.push(tf.zeros([batch, rows, cols, channels]));
          continue;
        }
        const [tapsY, tapsX] = phase.taps;
        const pad: [[number, number], [number, number], [number, number], [number, number]] = [
          [0, 0],
          [tapsY - 1, rows - outHeight],
          [tapsX - 1, cols - outWidth],
          [0, 0],
        ];
        byColumnPhase.push(tf.conv2d(dy, phase.filter, 1, pad));
      }
      byRowPhase.push(tf.stack(byColumnPhase, 3));
    }
    // [batch, rows, stride, cols, stride, channels]: row Q s + ry, column Qx s + rx of the padded input.
    let padded = tf.stack(byRowPhase, 2).reshape([batch, rows * stride, cols * stride, channels]);
    const missingRows = Math.max(0, padding + height - rows * stride);
    const missingCols = Math.max(0, padding + width - cols * stride);
    if (missingRows > 0 || missingCols > 0) padded = tf.pad(padded, [[0, 0], [0, missingRows], [0, missingCols], [0, 0]]);
    return tf.slice(padded, [0, padding, padding, 0], [batch, height, width, channels]) as tf.Tensor4D;
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
   * The filters and b as tensors, kept per parameter version: they live until the parameters
   * change (this may run inside a caller's tidy scope).
   */
  private weightTensors(source: ParameterSource): { filter: tf.Tensor4D; reversed: ReversedFilters; bias: tf.Tensor1D } {
    if (this.tensors !== null && this.tensors.version === source.version) return this.tensors;
    if (this.tensors !== null) {
      const { filter, reversed, bias } = this.tensors;
      tf.dispose([filter, bias, ...(reversed.flipped === null ? [] : [reversed.flipped]), ...reversed.phases.flatMap((phase) => (phase.filter === null ? [] : [phase.filter]))]);
    }
    if (source.device) {
      // With the parameters on the GPU, rearranged there rather than read back.
      const device = source.device;
      // The tensors kept; the slices between them freed.
      tf.tidy(() => {
        const weight = deviceBlock(device, this.weight) as tf.Tensor4D;
        const { flipped, phases } = this.reversedFiltersOf(weight);
        const reversed = {
          flipped: flipped === null ? null : tf.keep(flipped),
          phases: phases.map(({ taps, filter }) => ({ taps, filter: filter === null ? null : tf.keep(filter) })),
        };
        this.tensors = { version: source.version, filter: tf.keep(filterOf(weight)), reversed, bias: tf.keep(deviceBlock(device, this.bias) as tf.Tensor1D) };
      });
      return this.tensors!;
    }
    // Rearranged in JavaScript: a few thousand values, where the same ops on tensors (tf.stridedSlice,
    // reverse and transposes for every phase) cost several ms a layer on the wasm backend.
    const { kernel, stride, outChannels } = this.shape;
    const channels = this.shape.input[2];
    const values = blockValues(source.parameters, this.weight);
    const filter = new Float32Array(values.length);
    transposeInto(values, outChannels, kernel * kernel * channels, filter);
    const phases = phaseTaps(this.shape).map(({ ry, rx, taps }) => ({
      taps,
      filter: taps[0] === 0 || taps[1] === 0 ? null : tf.keep(tf.tensor4d(flippedPhase(values, this.shape, ry, rx, taps), [taps[0], taps[1], outChannels, channels])),
    }));
    this.tensors = {
      version: source.version,
      filter: tf.keep(tf.tensor4d(filter, [kernel, kernel, channels, outChannels])),
      reversed: stride === 1 ? { flipped: phases[0].filter, phases: [] } : { flipped: null, phases },
      bias: tf.keep(tf.tensor1d(blockValues(source.parameters, this.bias))),
    };
    return this.tensors;
  }

  /**
   * The filters dX convolves dY with, from a weight tensor (out x k x k x in, as the block): at
   * stride 1 the weights flipped in space with in and out swapped (k x k x out x in); at larger
   * strides the flipped taps of each stride phase.
   */
  private reversedFiltersOf(weight: tf.Tensor4D): ReversedFilters {
    if (this.shape.stride === 1) return { flipped: transposeMerged(tf.reverse(weight, [1, 2]), [1, 2, 0, 3]) as tf.Tensor4D, phases: [] };
    return { flipped: null, phases: phaseFilters(weight, this.shape) };
  }
}

/**
 * db: dY summed over samples and pixels, as rows of a matrix (the same sums; the wasm backend
 * reduces rank 4 over three axes markedly slower: 42 against 27 ms at 64x84x84x16).
 */
function biasGradient(dy: tf.Tensor4D): tf.Tensor1D {
  return tf.sum(dy.reshape([-1, dy.shape[3]]), 0);
}

/** tf.conv2d's filter (k x k x in x out) from a weight tensor (out x k x k x in, as the block). */
function filterOf(weight: tf.Tensor4D): tf.Tensor4D {
  return transposeMerged(weight, [1, 2, 3, 0]) as tf.Tensor4D;
}

/** The filters of dX (see reversedFiltersOf): `flipped` at stride 1, else `phases`. */
interface ReversedFilters {
  readonly flipped: tf.Tensor4D | null;
  readonly phases: readonly Phase[];
}

/** The filter taps of one stride phase, flipped, as tf.conv2d's filter (taps y x taps x x out x in); null when none. */
interface Phase {
  readonly taps: [number, number];
  readonly filter: tf.Tensor4D | null;
}

/**
 * Phase (ry, rx) takes kernel rows ry, ry + s, ... and columns rx, rx + s, ..., in reverse order:
 * taps y x taps x x out x in.
 */
function phaseFilters(weight: tf.Tensor4D, shape: Conv2dShape): Phase[] {
  const { kernel, stride } = shape;
  const [outChannels, , , channels] = weight.shape;
  return phaseTaps(shape).map(({ ry, rx, taps }) => {
    if (taps[0] === 0 || taps[1] === 0) return { taps, filter: null };
    const picked = tf.stridedSlice(weight, [0, ry, rx, 0], [outChannels, kernel, kernel, channels], [1, stride, stride, 1]);
    return { taps, filter: transposeMerged(tf.reverse(picked, [1, 2]), [1, 2, 0, 3]) as tf.Tensor4D };
  });
}

/** The stride phases (ry, rx), row by row, each with its taps in y and x (0 where the kernel is smaller than the stride). */
function phaseTaps({ kernel, stride }: Conv2dShape): Array<{ ry: number; rx: number; taps: [number, number] }> {
  const taps = (phase: number) => Math.max(0, Math.ceil((kernel - phase) / stride));
  const phases = [];
  for (let ry = 0; ry < stride; ry++) {
    for (let rx = 0; rx < stride; rx++) phases.push({ ry, rx, taps: [taps(ry), taps(rx)] as [number, number] });
  }
  return phases;
}

/** phaseFilters()'s filter of phase (ry, rx), from the block's values: tap (t, u) is kernel row ry + s (taps y - 1 - t), column rx + s (taps x - 1 - u). */
function flippedPhase(weights: Float32Array, { kernel, stride, outChannels, input }: Conv2dShape, ry: number, rx: number, [tapsY, tapsX]: [number, number]): Float32Array {
  const channels = input[2];
  const filter = new Float32Array(tapsY * tapsX * outChannels * channels);
  let at = 0;
  for (let t = 0; t < tapsY; t++) {
    const ky = ry + stride * (tapsY - 1 - t);
    for (let u = 0; u < tapsX; u++) {
      const kx = rx + stride * (tapsX - 1 - u);
      for (let o = 0; o < outChannels; o++) {
        const from = ((o * kernel + ky) * kernel + kx) * channels;
        filter.set(weights.subarray(from, from + channels), at);
        at += channels;
      }
    }
  }
  return filter;
}
