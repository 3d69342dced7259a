/**
 * A fully connected network with a hand-written backward pass: the body and heads of SAC's Q
 * networks (src/networks/q-network.ts: upstream's ValueNetwork given the continuous actions as
 * extra inputs, one output per discrete action or a single one, per reward signal).
 *
 * Layers are Swish(W x + b), as upstream's LinearEncoder, then a linear head. Batches are
 * row-major (count x features). The backward pass gives the gradient with respect to the
 * parameters and to the inputs: SAC's policy loss needs dQ/da at the actor's sampled action.
 * The parameters live in one Float32Array (Adam updates them in JavaScript), its own or a view of
 * a larger one (MlpStorage).
 *
 * Two ways to run the same arithmetic: plain loops (JsMlp) for small networks, where the
 * per-op overhead of tensor ops would cost more than the products themselves (upstream's test
 * networks of 16 units: about 100 times faster), and tfjs products (TensorMlp) for larger ones
 * (2 x 256 at batch 128: about 10 times faster). createMlp picks by the work per sample.
 */
import * as tf from '@tensorflow/tfjs';
import { SeededRandom } from '../common/random';
import { denseForward } from './dense-forward';
import { DenseInit, initializeLinearWeights } from './layers/dense';
import { swishBackward } from './layers/activations';
import { copyTensorInto, transposeInto } from './tensor-io';

export interface MlpShape {
  readonly inputs: number;
  readonly hiddenUnits: number;
  readonly numLayers: number;
  readonly outputs: number;
}

/** One linear layer's place in the parameter vector; its weight is outputs x inputs, row-major. */
interface LinearLayer {
  readonly inputs: number;
  readonly outputs: number;
  readonly weightOffset: number;
  readonly biasOffset: number;
}

/** One network's interface, whichever way it runs. */
export interface Mlp {
  readonly shape: MlpShape;
  /** All weights and biases, layer after layer (weight, then bias), the head last. */
  readonly parameters: Float32Array;
  /** d loss / d parameters after backward(), same layout. */
  readonly gradient: Float32Array;
  /** The outputs (count x outputs) for `inputs` (count x inputs); keeps what backward() needs. */
  forward(inputs: Float32Array, count: number): Float32Array;
  /**
   * Backpropagates `outputGradient` (count x outputs) through the last forward() pass: writes
   * d loss / d parameters into `gradient`, and returns d loss / d inputs (count x inputs).
   */
  backward(outputGradient: Float32Array): Float32Array;
}

/** Above this many multiply-adds per sample, tfjs products beat plain loops (measured on wasm). */
export const TENSOR_WORK_PER_SAMPLE = 2048;

/**
 * Where a network keeps its parameters and their gradient, when they are part of larger vectors
 * (views of mlpParameterCount(shape) values each); by default it allocates its own.
 */
export interface MlpStorage {
  readonly parameters: Float32Array;
  readonly gradient: Float32Array;
}

/** The network of this shape, run the faster way for its size. */
export function createMlp(shape: MlpShape, random: SeededRandom, storage?: MlpStorage): Mlp {
  const { inputs, hiddenUnits, numLayers, outputs } = shape;
  const work = inputs * hiddenUnits + (numLayers - 1) * hiddenUnits * hiddenUnits + hiddenUnits * outputs;
  return work > TENSOR_WORK_PER_SAMPLE ? new TensorMlp(shape, random, storage) : new JsMlp(shape, random, storage);
}

/** The weights and biases of each linear layer, the head last, as offsets into the parameters. */
function linearLayers(shape: MlpShape): { layers: LinearLayer[]; size: number } {
  const { inputs, hiddenUnits, numLayers, outputs } = shape;
  const layers: LinearLayer[] = [];
  let size = 0;
  const addLayer = (layerInputs: number, layerOutputs: number): void => {
    layers.push({ inputs: layerInputs, outputs: layerOutputs, weightOffset: size, biasOffset: size + layerInputs * layerOutputs });
    size += layerInputs * layerOutputs + layerOutputs;
  };
  for (let l = 0; l < numLayers; l++) addLayer(l === 0 ? inputs : hiddenUnits, hiddenUnits);
  addLayer(numLayers === 0 ? inputs : hiddenUnits, outputs);
  return { layers, size };
}

/** How many values a network of this shape has: its weights and biases. */
export function mlpParameterCount(shape: MlpShape): number {
  return linearLayers(shape).size;
}

/**
 * The parameter layout and initial values: as the actor-critic's bodies and value heads, hidden
 * layers normal with std 1 / sqrt(fan_in), the head Xavier-Glorot uniform, biases 0.
 */
function initialParameters(
  shape: MlpShape,
  random: SeededRandom,
  storage?: MlpStorage,
): { layers: LinearLayer[]; parameters: Float32Array; gradient: Float32Array } {
  const { numLayers } = shape;
  const { layers, size } = linearLayers(shape);
  if (storage !== undefined && (storage.parameters.length !== size || storage.gradient.length !== size)) {
    throw new Error(
      `The network has ${size} parameters but was given room for ${storage.parameters.length} (gradient ${storage.gradient.length}).`,
    );
  }
  const parameters = storage?.parameters ?? new Float32Array(size);
  const gradient = storage?.gradient ?? new Float32Array(size);
  parameters.fill(0);
  layers.forEach((layer, l) => {
    const weights = parameters.subarray(layer.weightOffset, layer.biasOffset);
    const init: DenseInit = l < numLayers ? { kind: 'kaimingNormal', gain: 1 } : { kind: 'xavierUniform', gain: 1 };
    initializeLinearWeights(weights, layer.inputs, layer.outputs, init, random);
  });
  return { layers, parameters, gradient };
}

/** The network in plain loops over typed arrays. */
export class JsMlp implements Mlp {
  /** All weights and biases, layer after layer (weight, then bias), the head last. */
  readonly parameters: Float32Array;
  /** d loss / d parameters after backward(), same layout. */
  readonly gradient: Float32Array;
  private readonly layers: LinearLayer[];
  /** Per hidden layer, from the last forward(): its input, its sigmoid gate and its output. */
  private inputsOf: Float32Array[] = [];
  private gatesOf: Float32Array[] = [];
  private count = 0;

  constructor(
    readonly shape: MlpShape,
    random: SeededRandom,
    storage?: MlpStorage,
  ) {
    ({ layers: this.layers, parameters: this.parameters, gradient: this.gradient } = initialParameters(shape, random, storage));
  }

  /** The outputs (count x outputs) for `inputs` (count x inputs); keeps what backward() needs. */
  forward(inputs: Float32Array, count: number): Float32Array {
    if (inputs.length !== count * this.shape.inputs) {
      throw new Error(`The network takes ${this.shape.inputs} inputs per sample but got ${inputs.length} values for ${count} samples.`);
    }
    this.count = count;
    this.inputsOf = [];
    this.gatesOf = [];
    let x = inputs;
    for (let l = 0; l < this.layers.length; l++) {
      const layer = this.layers[l];
      const z = this.linear(layer, x, count);
      if (l === this.layers.length - 1) {
        this.inputsOf.push(x);
        return z;
      }
      // Swish in place: z becomes z * sigmoid(z); the gate is kept for the backward pass.
      const gate = new Float32Array(z.length);
      for (let i = 0; i < z.length; i++) {
        gate[i] = 1 / (1 + Math.exp(-z[i]));
        z[i] *= gate[i];
      }
      this.inputsOf.push(x);
      this.gatesOf.push(gate);
      x = z;
    }
    throw new Error('unreachable: the network always has a head');
  }

  /**
   * Backpropagates `outputGradient` (count x outputs) through the last forward() pass: writes
   * d loss / d parameters into `gradient`, and returns d loss / d inputs (count x inputs).
   */
  backward(outputGradient: Float32Array): Float32Array {
    const count = this.count;
    let upstream = outputGradient;
    for (let l = this.layers.length - 1; l >= 0; l--) {
      const layer = this.layers[l];
      const x = this.inputsOf[l];
      this.accumulateWeightGradient(layer, x, upstream, count);
      const below = this.inputGradient(layer, upstream, count);
      if (l > 0) {
        // Through the Swish of the layer below: d/dz [z s(z)] = s + swish (1 - s).
        const gate = this.gatesOf[l - 1];
        const output = this.inputsOf[l];
        for (let i = 0; i < below.length; i++) below[i] *= gate[i] + output[i] * (1 - gate[i]);
      }
      upstream = below;
    }
    return upstream;
  }

  /** z = x W^T + b, row-major. */
  private linear(layer: LinearLayer, x: Float32Array, count: number): Float32Array {
    const z = new Float32Array(count * layer.outputs);
    denseForward(x, count, layer.inputs, this.parameters, layer.weightOffset, layer.biasOffset, layer.outputs, false, z);
    return z;
  }

  /** dW = dz^T x and db = column sums of dz, written into `gradient`. */
  private accumulateWeightGradient(layer: LinearLayer, x: Float32Array, dz: Float32Array, count: number): void {
    const { inputs, outputs, weightOffset, biasOffset } = layer;
    const g = this.gradient;
    g.fill(0, weightOffset, biasOffset + outputs);
    for (let i = 0; i < count; i++) {
      const xRow = i * inputs;
      for (let o = 0; o < outputs; o++) {
        const d = dz[i * outputs + o];
        if (d === 0) continue;
        g[biasOffset + o] += d;
        const wRow = weightOffset + o * inputs;
        for (let k = 0; k < inputs; k++) g[wRow + k] += d * x[xRow + k];
      }
    }
  }

  /** dx = dz W, row-major. */
  private inputGradient(layer: LinearLayer, dz: Float32Array, count: number): Float32Array {
    const { inputs, outputs, weightOffset } = layer;
    const p = this.parameters;
    const dx = new Float32Array(count * inputs);
    for (let i = 0; i < count; i++) {
      const dxRow = i * inputs;
      for (let o = 0; o < outputs; o++) {
        const d = dz[i * outputs + o];
        if (d === 0) continue;
        const wRow = weightOffset + o * inputs;
        for (let k = 0; k < inputs; k++) dx[dxRow + k] += d * p[wRow + k];
      }
    }
    return dx;
  }
}

/**
 * The same network with tfjs doing the products, row-major throughout. No product uses a
 * transpose flag (slow on the wasm backend): the forward pass multiplies by W^T copied once per
 * call, and the backward pass transposes the gradient explicitly before dW = dz^T x.
 */
export class TensorMlp implements Mlp {
  readonly parameters: Float32Array;
  readonly gradient: Float32Array;
  private readonly layers: LinearLayer[];
  private readonly transposedWeights: Float32Array[];
  /** The last forward pass, kept (tf.keep) until the next one: inputs, gates, outputs per layer. */
  private pass: { inputs: tf.Tensor2D[]; gates: tf.Tensor2D[]; weights: tf.Tensor2D[] } | null = null;

  constructor(
    readonly shape: MlpShape,
    random: SeededRandom,
    storage?: MlpStorage,
  ) {
    ({ layers: this.layers, parameters: this.parameters, gradient: this.gradient } = initialParameters(shape, random, storage));
    this.transposedWeights = this.layers.map((layer) => new Float32Array(layer.inputs * layer.outputs));
  }

  forward(inputs: Float32Array, count: number): Float32Array {
    if (inputs.length !== count * this.shape.inputs) {
      throw new Error(`The network takes ${this.shape.inputs} inputs per sample but got ${inputs.length} values for ${count} samples.`);
    }
    this.dispose();
    const p = this.parameters;
    const output = new Float32Array(count * this.shape.outputs);
    this.pass = tf.tidy(() => {
      const kept = { inputs: [] as tf.Tensor2D[], gates: [] as tf.Tensor2D[], weights: [] as tf.Tensor2D[] };
      let x: tf.Tensor2D = tf.tensor2d(inputs, [count, this.shape.inputs]);
      this.layers.forEach((layer, l) => {
        const { inputs: width, outputs, weightOffset, biasOffset } = layer;
        const weight = p.subarray(weightOffset, biasOffset);
        transposeInto(weight, outputs, width, this.transposedWeights[l]);
        const z = tf.fused.matMul({
          a: x,
          b: tf.tensor2d(this.transposedWeights[l], [width, outputs]),
          bias: tf.tensor1d(p.subarray(biasOffset, biasOffset + outputs)),
        });
        kept.inputs.push(tf.keep(x));
        kept.weights.push(tf.keep(tf.tensor2d(weight, [outputs, width])));
        if (l === this.layers.length - 1) {
          copyTensorInto(z, output);
          return;
        }
        const gate = tf.keep(tf.sigmoid(z)) as tf.Tensor2D;
        kept.gates.push(gate);
        x = tf.mul(z, gate) as tf.Tensor2D;
      });
      return kept;
    });
    return output;
  }

  backward(outputGradient: Float32Array): Float32Array {
    const pass = this.pass;
    if (pass === null) throw new Error('backward() needs a forward() pass first.');
    const count = pass.inputs[0].shape[0];
    const inputGradient = new Float32Array(count * this.shape.inputs);
    tf.tidy(() => {
      let upstream: tf.Tensor2D = tf.tensor2d(outputGradient, [count, this.shape.outputs]);
      for (let l = this.layers.length - 1; l >= 0; l--) {
        const layer = this.layers[l];
        const x = pass.inputs[l];
        copyTensorInto(tf.matMul(tf.transpose(upstream), x), this.gradient, layer.weightOffset);
        copyTensorInto(tf.sum(upstream, 0), this.gradient, layer.biasOffset);
        const below = tf.matMul(upstream, pass.weights[l]);
        if (l === 0) {
          copyTensorInto(below, inputGradient);
          break;
        }
        // Through the Swish of the layer below, whose output is this layer's input.
        upstream = swishBackward(below, pass.gates[l - 1], x) as tf.Tensor2D;
      }
    });
    return inputGradient;
  }

  /** Frees the tensors of the last forward pass. */
  dispose(): void {
    if (this.pass === null) return;
    tf.dispose([...this.pass.inputs, ...this.pass.gates, ...this.pass.weights]);
    this.pass = null;
  }
}
