/**
 * A fully connected layer, y = act(x W^T + b), with upstream's linear_layer initializations and,
 * optionally, Swish fused in (upstream's LinearEncoder pairs every linear layer with one). W is
 * out x in, row-major, as torch stores it.
 *
 * Its output may be split into named parts, each with its own initialization, that share one
 * product: the actor's heads (means, log_sigma, branch logits) and value heads sit side by side
 * on their body's encoding, as upstream's separate heads would, at the cost of one product.
 * Their weights are one contiguous out x in matrix (part after part), their biases one vector.
 *
 * The same arithmetic runs three ways, each where it is fastest (measured on the wasm backend),
 * and a fourth for tfjs's autodiff (traced, below):
 *  - rows (the Layer interface): batch first, with tfjs; acting, and SAC's Q networks.
 *  - columns: feature-major (features x samples), with tfjs; PPO's training pass, where the
 *    short batch is a side of every right operand and no product needs a transpose flag.
 *  - JavaScript: batch first, plain loops; batches whose whole pass is a few ten thousand
 *    multiply-adds, where tfjs's fixed cost per op (about 0.1 ms) would dominate.
 * No tfjs product uses a transpose flag (5 to 10 times slower on wasm): W^T is kept as its own
 * tensor, uploaded again only when the parameters change.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { ReadingPass, transposeInto, writeGradient } from '../tensor-io';
import { swishBackward } from './activations';
import { Layer, ParameterAllocator, ParameterBlock, ParameterSource, GraphWriter, TracedParameters, TracedPass, blockValues } from './layer';

/** Weights (inputs x outputs) above which the batch-first backward avoids W as a right operand: 256 x 256 breaks even here. */
const LARGE_WEIGHT = 256 * 256;

/** Upstream's initializations of a linear layer's weights (layers.py, with nonlinearity "linear"). */
export type DenseInit =
  /** normal with std gain / sqrt(fan_in) */
  | { readonly kind: 'kaimingNormal'; readonly gain: number }
  /** uniform in +-gain sqrt(6 / (fan_in + fan_out)) */
  | { readonly kind: 'xavierUniform'; readonly gain: number }
  /** normal with std gain (upstream's Initialization.Normal: a standard normal times the gain) */
  | { readonly kind: 'normal'; readonly gain: number };

/** What follows the product: nothing, or Swish (x sigmoid(x)) as in upstream's LinearEncoder. */
export type DenseActivation = 'linear' | 'swish';

/** One named part of a layer's outputs: blocks `<name>.weight` (size x in) and `<name>.bias`. */
export interface DenseOutputPart {
  readonly name: string;
  readonly size: number;
  readonly init: DenseInit;
}

interface Part extends DenseOutputPart {
  /** Its first output row. */
  readonly row: number;
  readonly weight: ParameterBlock;
  readonly bias: ParameterBlock;
}

/** The weights as tensors, in the layouts the passes multiply by. */
interface WeightTensors {
  readonly version: number;
  /** W^T (in x out): the right operand of batch-first products. */
  readonly transposed: tf.Tensor2D;
  /** W (out x in): the left operand of feature-major products, and of dx = dy W. */
  readonly weight: tf.Tensor2D;
  readonly bias: tf.Tensor1D;
  readonly biasColumn: tf.Tensor2D;
}

/** What a kept forward pass left for the backward: the input, and Swish's gate and output. */
interface KeptPass<T> {
  readonly input: T;
  readonly gate: T | null;
  readonly output: T | null;
}

export class Dense implements Layer {
  readonly outputShape: readonly number[];
  readonly blocks: readonly ParameterBlock[];
  readonly outputs: number;
  readonly parts: readonly Part[];
  /** Where the weight matrix (out x in) and the bias vector start in the parameters. */
  readonly weightOffset: number;
  readonly biasOffset: number;
  private tensors: WeightTensors | null = null;
  private readonly transposedScratch: Float32Array;
  private kept: KeptPass<tf.Tensor> | null = null;
  private keptInJavaScript: KeptPass<Float32Array> | null = null;

  constructor(
    allocate: ParameterAllocator,
    readonly inputs: number,
    parts: readonly DenseOutputPart[],
    readonly activation: DenseActivation = 'linear',
  ) {
    const weights = parts.map((part) => allocate(`${part.name}.weight`, [part.size, inputs]));
    const biases = parts.map((part) => allocate(`${part.name}.bias`, [part.size]));
    let row = 0;
    this.parts = parts.map((part, p) => {
      const placed = { ...part, row, weight: weights[p], bias: biases[p] };
      row += part.size;
      return placed;
    });
    this.outputs = row;
    this.weightOffset = weights[0].offset;
    this.biasOffset = biases[0].offset;
    this.parts.forEach((part) => {
      if (part.weight.offset !== this.weightOffset + part.row * inputs || part.bias.offset !== this.biasOffset + part.row) {
        throw new Error(`The allocator must place ${part.name}'s blocks after the other parts' (one weight matrix, one bias vector).`);
      }
    });
    this.blocks = [...weights, ...biases];
    this.outputShape = [this.outputs];
    this.transposedScratch = new Float32Array(inputs * this.outputs);
  }

  /** Each part's weights as upstream's linear_layer draws them, part after part; biases 0. */
  initialize(parameters: Float32Array, random: SeededRandom): void {
    for (const part of this.parts) {
      initializeLinearWeights(blockValues(parameters, part.weight), this.inputs, part.size, part.init, random);
      blockValues(parameters, part.bias).fill(0);
    }
  }

  /** Multiply-adds per sample. */
  get multiplyAdds(): number {
    return this.inputs * this.outputs;
  }

  // Rows: batch first, with tfjs.

  forward(input: tf.Tensor, source: ParameterSource, keep: boolean): tf.Tensor {
    const x = input.reshape([-1, this.inputs]) as tf.Tensor2D;
    const { transposed, bias } = this.weightTensors(source);
    const z = tf.fused.matMul({ a: x, b: transposed, bias });
    return this.activate(z, x, keep);
  }

  backward(outputGradient: tf.Tensor, source: ParameterSource, needInput: boolean): tf.Tensor | null {
    const { input: x, gate, output } = keptPass(this.kept);
    const dz = (gate === null ? outputGradient : swishBackward(outputGradient, gate, output!)) as tf.Tensor2D;
    writeGradient(tf.matMul(tf.transpose(dz), x), source.gradient, this.weightOffset);
    writeGradient(tf.sum(dz, 0), source.gradient, this.biasOffset);
    if (!needInput) return null;
    const { weight, transposed } = this.weightTensors(source);
    // XNNPACK copies a product's right operand into its own layout once per new tensor (here, per
    // update). For a large W that copy costs more than taking dz W as (W^T dz^T)^T, whose left
    // operand is read in place, and its two transposes of the batch's rows.
    return this.inputs * this.outputs > LARGE_WEIGHT ? tf.transpose(tf.matMul(transposed, tf.transpose(dz))) : tf.matMul(dz, weight);
  }

  // Columns: feature-major (features x samples), with tfjs.

  /** The output (out x count) for `input` (in x count). */
  forwardColumns(input: tf.Tensor2D, source: ParameterSource, keep: boolean): tf.Tensor2D {
    const { weight, biasColumn } = this.weightTensors(source);
    return this.activate(tf.add(tf.matMul(weight, input), biasColumn), input, keep) as tf.Tensor2D;
  }

  /**
   * forwardColumns()'s backward, from d loss / d output (out x count). dW = dz x^T takes the
   * input as rows: `inputRows` (count x in) when the caller has them, else x transposed.
   */
  backwardColumns(outputGradient: tf.Tensor2D, source: ParameterSource, needInput: boolean, inputRows?: tf.Tensor2D): tf.Tensor2D | null {
    const { input: x, gate, output } = keptPass(this.kept);
    const dz = (gate === null ? outputGradient : swishBackward(outputGradient, gate, output!)) as tf.Tensor2D;
    writeGradient(tf.matMul(dz, inputRows ?? tf.transpose(x)), source.gradient, this.weightOffset);
    writeGradient(tf.sum(dz, 1), source.gradient, this.biasOffset);
    return needInput ? (tf.matMul(this.weightTensors(source).transposed, dz) as tf.Tensor2D) : null;
  }

  /**
   * forwardColumns() for an output layer whose values the loss reads in JavaScript (linear
   * only): out x count values. The bias is added here, cheaper than a broadcast op for the few
   * rows of a head.
   */
  *forwardOutputColumns(input: tf.Tensor2D, source: ParameterSource, keep: boolean): ReadingPass<Float32Array> {
    if (this.activation !== 'linear') throw new Error('forwardOutputColumns() runs linear layers only.');
    const count = input.shape[1];
    const values = yield tf.matMul(this.weightTensors(source).weight, input);
    if (keep) this.kept = { input, gate: null, output: null };
    const p = source.parameters;
    for (let r = 0; r < this.outputs; r++) {
      const bias = p[this.biasOffset + r];
      for (let i = 0; i < count; i++) values[r * count + i] += bias;
    }
    return values;
  }

  /**
   * forwardOutputColumns() with the parameters on the GPU (ParameterSource.device): the output
   * (out x count) as a tensor, the bias added there, for the caller to read with others.
   */
  outputColumnsOnDevice(input: tf.Tensor2D, source: ParameterSource, keep: boolean): tf.Tensor2D {
    if (this.activation !== 'linear') throw new Error('outputColumnsOnDevice() runs linear layers only.');
    const { weight, biasColumn } = this.weightTensors(source);
    if (keep) this.kept = { input, gate: null, output: null };
    return tf.add(tf.matMul(weight, input), biasColumn) as tf.Tensor2D;
  }

  /**
   * forwardOutputColumns()'s backward, from d loss / d output (out x count values): dW = dy x^T
   * taken as its transpose x dy^T, so that no activation is transposed, and db summed here.
   */
  backwardOutputColumns(outputGradient: Float32Array, source: ParameterSource, needInput: boolean): tf.Tensor2D | null {
    const { input: x } = keptPass(this.kept);
    const { outputs } = this;
    const count = x.shape[1]!;
    const rows = new Float32Array(count * outputs);
    transposeInto(outputGradient, outputs, count, rows);
    writeGradient(tf.matMul(x, tf.tensor2d(rows, [count, outputs])), source.gradient, this.weightOffset, true);
    for (let r = 0; r < outputs; r++) {
      let sum = 0;
      for (let i = 0; i < count; i++) sum += outputGradient[r * count + i];
      source.gradient[this.biasOffset + r] = sum;
    }
    return needInput ? (tf.matMul(this.weightTensors(source).transposed, tf.tensor2d(outputGradient, [outputs, count])) as tf.Tensor2D) : null;
  }

  // JavaScript: batch first, plain loops.

  /** The output (count x out) for `input` (count x in); sums in double precision. */
  forwardInJavaScript(input: Float32Array, count: number, parameters: Float32Array, keep: boolean): Float32Array {
    if (input.length !== count * this.inputs) {
      throw new Error(`The layer takes ${this.inputs} inputs per sample but got ${input.length} values for ${count} samples.`);
    }
    const { inputs, outputs, weightOffset, biasOffset } = this;
    const swish = this.activation === 'swish';
    const output = new Float32Array(count * outputs);
    const gate = keep && swish ? new Float32Array(count * outputs) : null;
    for (let i = 0; i < count; i++) {
      const row = i * inputs;
      for (let o = 0; o < outputs; o++) {
        const weights = weightOffset + o * inputs;
        let sum = parameters[biasOffset + o];
        for (let k = 0; k < inputs; k++) sum += parameters[weights + k] * input[row + k];
        if (!swish) {
          output[i * outputs + o] = sum;
          continue;
        }
        const denominator = 1 + Math.exp(-sum);
        output[i * outputs + o] = sum / denominator;
        if (gate !== null) gate[i * outputs + o] = 1 / denominator;
      }
    }
    if (keep) this.keptInJavaScript = { input, gate, output: swish ? output : null };
    return output;
  }

  /** forwardInJavaScript()'s backward: writes dW and db into `gradient`; returns dx (count x in) when asked. */
  backwardInJavaScript(outputGradient: Float32Array, parameters: Float32Array, gradient: Float32Array, needInput: boolean): Float32Array | null {
    const { input: x, gate, output } = keptPass(this.keptInJavaScript);
    const { inputs, outputs, weightOffset, biasOffset } = this;
    const count = x.length / inputs;
    let dz = outputGradient;
    if (gate !== null) {
      // d/dz [z s(z)] = s + swish (1 - s)
      dz = new Float32Array(outputGradient.length);
      for (let i = 0; i < dz.length; i++) dz[i] = outputGradient[i] * (gate[i] + output![i] * (1 - gate[i]));
    }
    gradient.fill(0, weightOffset, weightOffset + outputs * inputs);
    gradient.fill(0, biasOffset, biasOffset + outputs);
    const dx = needInput ? new Float32Array(count * inputs) : null;
    for (let i = 0; i < count; i++) {
      const row = i * inputs;
      for (let o = 0; o < outputs; o++) {
        const d = dz[i * outputs + o];
        if (d === 0) continue;
        gradient[biasOffset + o] += d;
        const weights = weightOffset + o * inputs;
        for (let k = 0; k < inputs; k++) gradient[weights + k] += d * x[row + k];
        if (dx !== null) for (let k = 0; k < inputs; k++) dx[row + k] += d * parameters[weights + k];
      }
    }
    return dx;
  }

  // Traced: batch first, with tfjs, the weights given as tensors for tfjs's own gradients (see
  // TracedPass in layer.ts). Slower than the passes above; for losses not derived by hand.

  /** The output (count x out) for `input` (count x in) and the map from d/d output to d/d input, traced. */
  tracedPass(input: tf.Tensor2D, parameters: TracedParameters): TracedPass<tf.Tensor2D> {
    const weights = this.parts.map((part) => parameters(part.weight));
    const biases = this.parts.map((part) => parameters(part.bias));
    const weight = (weights.length === 1 ? weights[0] : tf.concat(weights, 0)) as tf.Tensor2D;
    const bias = biases.length === 1 ? biases[0] : tf.concat(biases, 0);
    const z = tf.add(tracedMatMul(input, tf.transpose(weight)), bias) as tf.Tensor2D;
    if (this.activation === 'linear') return { output: z, inputGradient: (dy) => tracedMatMul(dy, weight) };
    const gate = tf.sigmoid(z);
    // d/dz [z s(z)] = s + z s (1 - s)
    const slope = tf.add(gate, tf.mul(tf.mul(z, gate), tf.sub(1, gate)));
    return { output: tf.mul(z, gate), inputGradient: (dy) => tracedMatMul(tf.mul(dy, slope) as tf.Tensor2D, weight) };
  }

  // Export.

  /** All outputs as one Gemm (then Swish), named from `name`. */
  exportOnnx(graph: GraphWriter, input: string, name: string, parameters: Float32Array): string {
    const weight = graph.floats(`${name}.weight`, [this.outputs, this.inputs], parameters.subarray(this.weightOffset, this.weightOffset + this.outputs * this.inputs));
    const bias = graph.floats(`${name}.bias`, [this.outputs], parameters.subarray(this.biasOffset, this.biasOffset + this.outputs));
    const z = graph.node('Gemm', [input, weight, bias], `${name}.linear`, { transB: { int: 1 } });
    if (this.activation === 'linear') return z;
    const gate = graph.node('Sigmoid', [z], `${name}.gate`);
    return graph.node('Mul', [z, gate], `${name}.output`);
  }

  /**
   * All outputs for an input of any rank whose last axis holds the features ([batch, entities,
   * in]): a MatMul by W^T and an Add of b (Gemm takes matrices only), then Swish.
   */
  exportBatchedOnnx(graph: GraphWriter, input: string, name: string, parameters: Float32Array): string {
    const transposed = new Float32Array(this.inputs * this.outputs);
    transposeInto(parameters.subarray(this.weightOffset, this.weightOffset + this.outputs * this.inputs), this.outputs, this.inputs, transposed);
    const weight = graph.floats(`${name}.weight_transposed`, [this.inputs, this.outputs], transposed);
    const bias = graph.floats(`${name}.bias`, [this.outputs], parameters.subarray(this.biasOffset, this.biasOffset + this.outputs));
    const z = graph.node('Add', [graph.node('MatMul', [input, weight], `${name}.product`), bias], `${name}.linear`);
    if (this.activation === 'linear') return z;
    const gate = graph.node('Sigmoid', [z], `${name}.gate`);
    return graph.node('Mul', [z, gate], `${name}.output`);
  }

  /** One part's outputs as a Gemm of its own rows, its constants named as its blocks (a linear layer's). */
  exportPartOnnx(graph: GraphWriter, input: string, partName: string, parameters: Float32Array): string {
    const part = this.parts.find((p) => p.name === partName);
    if (part === undefined) throw new Error(`The layer has no output part named ${partName}.`);
    const weight = graph.floats(part.weight.name, part.weight.shape, blockValues(parameters, part.weight));
    const bias = graph.floats(part.bias.name, part.bias.shape, blockValues(parameters, part.bias));
    return graph.node('Gemm', [input, weight, bias], `${part.name}.linear`, { transB: { int: 1 } });
  }

  /**
   * The weights as tensors, for a layer that multiplies by parts of them itself (EntityEmbedding
   * applies x_self's columns once per agent): W^T (in x out), W (out x in) and b.
   */
  weightsFor(source: ParameterSource): { readonly transposed: tf.Tensor2D; readonly weight: tf.Tensor2D; readonly bias: tf.Tensor1D } {
    return this.weightTensors(source);
  }

  /** Frees the weight tensors kept between passes. */
  dispose(): void {
    if (this.tensors === null) return;
    tf.dispose([this.tensors.transposed, this.tensors.weight, this.tensors.bias, this.tensors.biasColumn]);
    this.tensors = null;
  }

  private activate(z: tf.Tensor, input: tf.Tensor, keep: boolean): tf.Tensor {
    if (this.activation === 'linear') {
      if (keep) this.kept = { input, gate: null, output: null };
      return z;
    }
    const gate = tf.sigmoid(z);
    const output = tf.mul(z, gate);
    if (keep) this.kept = { input, gate, output };
    return output;
  }

  /** The weights as tensors, uploaded again only when the parameters changed (sliced on the GPU when they live there). */
  private weightTensors(source: ParameterSource): WeightTensors {
    if (this.tensors !== null && this.tensors.version === source.version) return this.tensors;
    this.dispose();
    if (source.device) {
      const device = source.device;
      this.tensors = tf.tidy(() => {
        const weight = tf.reshape(tf.slice(device, this.weightOffset, this.outputs * this.inputs), [this.outputs, this.inputs]) as tf.Tensor2D;
        const bias = tf.slice(device, this.biasOffset, this.outputs);
        return {
          version: source.version,
          transposed: tf.keep(tf.transpose(weight)),
          weight: tf.keep(weight),
          bias: tf.keep(bias),
          biasColumn: tf.keep(tf.reshape(bias, [this.outputs, 1]) as tf.Tensor2D),
        };
      });
      return this.tensors;
    }
    const weights = source.parameters.subarray(this.weightOffset, this.weightOffset + this.outputs * this.inputs);
    const biases = source.parameters.subarray(this.biasOffset, this.biasOffset + this.outputs);
    transposeInto(weights, this.outputs, this.inputs, this.transposedScratch);
    this.tensors = tf.tidy(() => ({
      version: source.version,
      transposed: tf.keep(tf.tensor2d(this.transposedScratch, [this.inputs, this.outputs])),
      weight: tf.keep(tf.tensor2d(weights, [this.outputs, this.inputs])),
      bias: tf.keep(tf.tensor1d(biases)),
      biasColumn: tf.keep(tf.tensor2d(biases, [this.outputs, 1])),
    }));
    return this.tensors;
  }
}

/**
 * a b, whose gradients tfjs computes with explicit transposes: its own matMul gradient multiplies
 * with transpose flags, 5 to 10 times slower on the wasm backend (DESIGN.md).
 */
export const tracedMatMul = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
  const [a, b, save] = args as [tf.Tensor2D, tf.Tensor2D, tf.GradSaveFunc];
  save([a, b]);
  return {
    value: tf.matMul(a, b),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [savedA, savedB] = saved as tf.Tensor2D[];
      return [tf.matMul(dy as tf.Tensor2D, tf.transpose(savedB)), tf.matMul(tf.transpose(savedA), dy as tf.Tensor2D)];
    },
  };
}) as (a: tf.Tensor2D, b: tf.Tensor2D) => tf.Tensor2D;

/** The tensor with its last two axes swapped (batched products without transpose flags). */
export function transposeLast<T extends tf.Tensor>(x: T): T {
  const perm = x.shape.map((_, i) => i);
  [perm[perm.length - 2], perm[perm.length - 1]] = [perm[perm.length - 1], perm[perm.length - 2]];
  return tf.transpose(x, perm);
}

/** A dense layer with one output part (upstream's linear_layer): blocks `<name>.weight` and `<name>.bias`. */
export function linearLayer(
  allocate: ParameterAllocator,
  name: string,
  inputs: number,
  outputs: number,
  init: DenseInit,
  activation: DenseActivation = 'linear',
): Dense {
  return new Dense(allocate, inputs, [{ name, size: outputs, init }], activation);
}

function keptPass<T>(pass: KeptPass<T> | null): KeptPass<T> {
  if (pass === null) throw new Error('A dense layer\'s backward needs a kept forward pass first.');
  return pass;
}

/** Draws a linear layer's weights (outputs x inputs) as upstream's linear_layer does, in place. */
export function initializeLinearWeights(weights: Float32Array, inputs: number, outputs: number, init: DenseInit, random: SeededRandom): void {
  if (init.kind === 'normal') {
    for (let i = 0; i < weights.length; i++) weights[i] = init.gain * random.gaussian();
  } else if (init.kind === 'kaimingNormal') {
    const std = init.gain / Math.sqrt(inputs);
    for (let i = 0; i < weights.length; i++) weights[i] = std * random.gaussian();
  } else {
    const bound = init.gain * Math.sqrt(6 / (inputs + outputs));
    for (let i = 0; i < weights.length; i++) weights[i] = random.range(-bound, bound);
  }
}
