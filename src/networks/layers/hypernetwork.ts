/**
 * Upstream's HyperNetwork (torch_entities/conditioning.py): a fully connected layer of I inputs
 * and O outputs whose weight matrix is generated for each sample from a conditioning input (the
 * goal): y = x W(g) + b. W(g) is the output of a small MLP on the goal (numLayers Swish layers of
 * H units, drawn KaimingHeNormal with gain 1), upstream's parameter-free LayerNorm, then a last
 * linear layer of I x O outputs whose weights start uniform in +-sqrt(1 / (H I)), its biases at
 * 0. The main layer's bias b is a plain parameter (zeros at first), not generated.
 *
 * Blocks as torch names the module's: `<name>.hypernet.<2l>` for the MLP's layers (Swish and
 * LayerNorm take the odd places of torch's Sequential), `<name>.hypernet.<2 numLayers + 1>` for
 * the last layer and `<name>.bias`. The last layer's weight is kept as [H, I, O], entry (k, i, o)
 * being hidden unit k's weight on the generated W(g)[i, o] (torch keeps [I O, H]), and its bias as
 * [I, O]: then, with n the normalized hidden features,
 *
 *     y = (n outer x) M + x C + b,    M = the weight as (H I) x O, C = the bias as I x O,
 *
 * one product over the outer products of the batch and no product with a transposed operand (the
 * wasm backend's transposed products are 5 to 10 times slower). The backward is derived by hand:
 * dM = (n outer x)^T dy, dC = x^T dy, and d(n outer x) = dy M^T, taken as M dy^T so that M needs
 * no transposed copy; from it dn (summed over the inputs, times x) and dx (summed over the hidden
 * features, times n, plus dy C^T). Checked against tfjs's autodiff in test/networks/layers.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { copyTensorInto } from '../tensor-io';
import { Dense, linearLayer, tracedMatMul } from './dense';
import { GraphWriter, ParameterAllocator, ParameterBlock, ParameterSource, TracedParameters, TracedPass, blockValues } from './layer';
import { LayerNorm } from './layer-norm';

/** The last layer's weights and biases as tensors, in the shapes the passes multiply by. */
interface GeneratorTensors {
  readonly version: number;
  /** M: (H I) x O */
  readonly weight: tf.Tensor2D;
  /** C: I x O */
  readonly generatedBias: tf.Tensor2D;
  readonly bias: tf.Tensor1D;
}

/** What a kept forward pass left for the backward: the main layer's input and the normalized hidden features. */
interface KeptPass<T> {
  readonly input: T;
  readonly normalized: T;
}

/** The gradients a backward returns: of the main layer's input and of the conditioning input; null when not asked for. */
export interface HyperNetworkGradients<T> {
  readonly input: T | null;
  readonly goal: T | null;
}

/** A traced pass (layer.ts) of the hypernetwork: its output, and the map from d/d output to d/d input and d/d goal. */
export interface HyperNetworkTracedPass {
  readonly output: tf.Tensor2D;
  inputGradients(outputGradient: tf.Tensor2D): { readonly input: tf.Tensor2D; readonly goal: tf.Tensor2D };
}

export class HyperNetwork {
  readonly blocks: readonly ParameterBlock[];
  readonly outputShape: readonly number[];
  /** The MLP on the goal, each layer with Swish. */
  readonly layers: readonly Dense[];
  readonly layerNorm: LayerNorm;
  /** The last layer: weight [H, I, O], bias [I, O]; and the main layer's own bias [O]. */
  readonly weight: ParameterBlock;
  readonly generatedBias: ParameterBlock;
  readonly bias: ParameterBlock;
  private tensors: GeneratorTensors | null = null;
  private kept: KeptPass<tf.Tensor2D> | null = null;
  private keptInJavaScript: KeptPass<Float32Array> | null = null;

  constructor(
    allocate: ParameterAllocator,
    readonly name: string,
    /** I: the main layer's inputs. */
    readonly inputs: number,
    /** O: the main layer's outputs. */
    readonly outputs: number,
    /** The conditioning input's width (upstream's hyper_input_size). */
    readonly goalSize: number,
    /** H: the MLP's units (upstream's layer_size). */
    readonly hiddenSize: number,
    numLayers = 2,
  ) {
    this.layers = Array.from({ length: numLayers }, (_, l) =>
      linearLayer(allocate, `${name}.hypernet.${2 * l}`, l === 0 ? goalSize : hiddenSize, hiddenSize, { kind: 'kaimingNormal', gain: 1 }, 'swish'),
    );
    this.layerNorm = new LayerNorm(hiddenSize);
    const last = `${name}.hypernet.${2 * numLayers + 1}`;
    this.weight = allocate(`${last}.weight`, [hiddenSize, inputs, outputs]);
    this.generatedBias = allocate(`${last}.bias`, [inputs, outputs]);
    this.bias = allocate(`${name}.bias`, [outputs]);
    this.blocks = [...this.layers.flatMap((layer) => layer.blocks), this.weight, this.generatedBias, this.bias];
    this.outputShape = [outputs];
  }

  /** The MLP as upstream's linear_layer draws it; the last layer's weights uniform in +-sqrt(1 / (H I)); biases 0. */
  initialize(parameters: Float32Array, random: SeededRandom): void {
    for (const layer of this.layers) layer.initialize(parameters, random);
    const bound = Math.sqrt(1 / (this.hiddenSize * this.inputs));
    const weight = blockValues(parameters, this.weight);
    for (let j = 0; j < weight.length; j++) weight[j] = random.range(-bound, bound);
    blockValues(parameters, this.generatedBias).fill(0);
    blockValues(parameters, this.bias).fill(0);
  }

  /** Multiply-adds per sample: the MLP, the generated product and the generated bias's. */
  get multiplyAdds(): number {
    const { hiddenSize: h, inputs, outputs } = this;
    return this.layers.reduce((total, layer) => total + layer.multiplyAdds, 0) + (h + 1) * inputs * outputs;
  }

  // Rows: batch first, with tfjs.

  /** The main layer's output (count x O) for `input` (count x I) conditioned on `goal` (count x goalSize). */
  forward(input: tf.Tensor2D, goal: tf.Tensor2D, source: ParameterSource, keep: boolean): tf.Tensor2D {
    const count = input.shape[0];
    const { hiddenSize: h, inputs } = this;
    const hidden = this.layers.reduce<tf.Tensor>((x, layer) => layer.forward(x, source, keep), goal);
    const normalized = this.layerNorm.forward(hidden, source, keep) as tf.Tensor2D;
    const { weight, generatedBias, bias } = this.generatorTensors(source);
    const outer = tf.reshape(tf.mul(tf.reshape(normalized, [count, h, 1]), tf.reshape(input, [count, 1, inputs])), [count, h * inputs]);
    if (keep) this.kept = { input, normalized };
    return tf.add(tf.matMul(outer, weight), tf.fused.matMul({ a: input, b: generatedBias, bias })) as tf.Tensor2D;
  }

  /**
   * From d loss / d output (count x O) of the last kept forward, writes the gradient of every
   * block and, with `needInput`, returns those of the input and the goal.
   */
  backward(outputGradient: tf.Tensor2D, source: ParameterSource, needInput: boolean): HyperNetworkGradients<tf.Tensor2D> {
    const { input, normalized } = keptPass(this.kept);
    const count = input.shape[0];
    const { hiddenSize: h, inputs } = this;
    const { weight, generatedBias } = this.generatorTensors(source);
    // Feature-major copies of the small operands: every product below is a plain one.
    const inputColumns = tf.transpose(input);
    const normalizedColumns = tf.transpose(normalized);
    const gradientColumns = tf.transpose(outputGradient);
    const outerColumns = tf.reshape(tf.mul(tf.reshape(normalizedColumns, [h, 1, count]), tf.reshape(inputColumns, [1, inputs, count])), [h * inputs, count]);
    copyTensorInto(tf.matMul(outerColumns, outputGradient), source.gradient, this.weight.offset);
    copyTensorInto(tf.matMul(inputColumns, outputGradient), source.gradient, this.generatedBias.offset);
    copyTensorInto(tf.sum(outputGradient, 0), source.gradient, this.bias.offset);

    // d(n outer x), feature-major: H x I x count.
    const outerGradient = tf.reshape(tf.matMul(weight, gradientColumns), [h, inputs, count]);
    const normalizedGradient = tf.transpose(tf.sum(tf.mul(outerGradient, tf.reshape(inputColumns, [1, inputs, count])), 1));
    let gradient: tf.Tensor | null = this.layerNorm.backward(normalizedGradient, source, true);
    for (let l = this.layers.length - 1; l >= 0 && gradient !== null; l--) {
      gradient = this.layers[l].backward(gradient, source, l > 0 || needInput);
    }
    if (!needInput) return { input: null, goal: null };
    const inputGradientColumns = tf.add(tf.sum(tf.mul(outerGradient, tf.reshape(normalizedColumns, [h, 1, count])), 0), tf.matMul(generatedBias, gradientColumns));
    return { input: tf.transpose(inputGradientColumns) as tf.Tensor2D, goal: gradient as tf.Tensor2D };
  }

  // Traced (layer.ts): the same products, each block's values given by `parameters`.

  tracedPass(input: tf.Tensor2D, goal: tf.Tensor2D, parameters: TracedParameters): HyperNetworkTracedPass {
    const count = input.shape[0];
    const { hiddenSize: h, inputs, outputs } = this;
    const passes: Array<TracedPass<tf.Tensor2D>> = [];
    let hidden = goal;
    for (const layer of this.layers) {
      const pass = layer.tracedPass(hidden, parameters);
      passes.push(pass);
      hidden = pass.output;
    }
    const norm = this.layerNorm.tracedPass(hidden);
    const normalized = tf.reshape(norm.output, [count, h, 1]);
    const weight = tf.reshape(parameters(this.weight), [h * inputs, outputs]) as tf.Tensor2D;
    const generatedBias = parameters(this.generatedBias) as tf.Tensor2D;
    const outer = tf.reshape(tf.mul(normalized, tf.reshape(input, [count, 1, inputs])), [count, h * inputs]) as tf.Tensor2D;
    const output = tf.add(tf.add(tracedMatMul(outer, weight), tracedMatMul(input, generatedBias)), parameters(this.bias)) as tf.Tensor2D;
    const inputGradients = (dy: tf.Tensor2D) => {
      const outerGradient = tf.reshape(tracedMatMul(dy, tf.transpose(weight)), [count, h, inputs]);
      const inputGradient = tf.add(tf.sum(tf.mul(outerGradient, normalized), 1), tracedMatMul(dy, tf.transpose(generatedBias))) as tf.Tensor2D;
      const normalizedGradient = tf.sum(tf.mul(outerGradient, tf.reshape(input, [count, 1, inputs])), 2);
      const goalGradient = passes.reduceRight((gradient, pass) => pass.inputGradient(gradient), norm.inputGradient(normalizedGradient) as tf.Tensor2D);
      return { input: inputGradient, goal: goalGradient };
    };
    return { output, inputGradients };
  }

  // JavaScript: batch first, plain loops.

  /** forward() in plain loops: count x O values; sums in double precision. */
  forwardInJavaScript(input: Float32Array, goal: Float32Array, count: number, parameters: Float32Array, keep: boolean): Float32Array {
    const { hiddenSize: h, inputs, outputs } = this;
    const hidden = this.layers.reduce((x, layer) => layer.forwardInJavaScript(x, count, parameters, keep), goal);
    const normalized = this.layerNorm.forwardInJavaScript(hidden, count, keep);
    const weight = this.weight.offset;
    const generatedBias = this.generatedBias.offset;
    const output = new Float32Array(count * outputs);
    const sums = new Float64Array(outputs);
    for (let s = 0; s < count; s++) {
      for (let o = 0; o < outputs; o++) sums[o] = parameters[this.bias.offset + o];
      for (let i = 0; i < inputs; i++) {
        const x = input[s * inputs + i];
        if (x === 0) continue;
        for (let k = -1; k < h; k++) {
          // k = -1: the generated bias's row; then hidden unit k's.
          const scale = k < 0 ? x : x * normalized[s * h + k];
          const row = k < 0 ? generatedBias + i * outputs : weight + (k * inputs + i) * outputs;
          for (let o = 0; o < outputs; o++) sums[o] += scale * parameters[row + o];
        }
      }
      for (let o = 0; o < outputs; o++) output[s * outputs + o] = sums[o];
    }
    if (keep) this.keptInJavaScript = { input, normalized };
    return output;
  }

  /** backward() in plain loops, from d loss / d output (count x O). */
  backwardInJavaScript(outputGradient: Float32Array, parameters: Float32Array, gradient: Float32Array, needInput: boolean): HyperNetworkGradients<Float32Array> {
    const { input, normalized } = keptPass(this.keptInJavaScript);
    const { hiddenSize: h, inputs, outputs } = this;
    const count = input.length / inputs;
    const weight = this.weight.offset;
    const generatedBias = this.generatedBias.offset;
    gradient.fill(0, weight, weight + h * inputs * outputs);
    gradient.fill(0, generatedBias, generatedBias + inputs * outputs);
    gradient.fill(0, this.bias.offset, this.bias.offset + outputs);
    const normalizedGradient = new Float32Array(count * h);
    const inputGradient = new Float32Array(count * inputs);
    for (let s = 0; s < count; s++) {
      const dy = s * outputs;
      for (let o = 0; o < outputs; o++) gradient[this.bias.offset + o] += outputGradient[dy + o];
      for (let i = 0; i < inputs; i++) {
        const x = input[s * inputs + i];
        for (let k = -1; k < h; k++) {
          const n = k < 0 ? 1 : normalized[s * h + k];
          const row = k < 0 ? generatedBias + i * outputs : weight + (k * inputs + i) * outputs;
          // d loss / d (n x), the product's factor
          let product = 0;
          for (let o = 0; o < outputs; o++) {
            gradient[row + o] += n * x * outputGradient[dy + o];
            product += parameters[row + o] * outputGradient[dy + o];
          }
          inputGradient[s * inputs + i] += n * product;
          if (k >= 0) normalizedGradient[s * h + k] += x * product;
        }
      }
    }
    let below: Float32Array | null = this.layerNorm.backwardInJavaScript(normalizedGradient);
    for (let l = this.layers.length - 1; l >= 0 && below !== null; l--) {
      below = this.layers[l].backwardInJavaScript(below, parameters, gradient, l > 0 || needInput);
    }
    return needInput ? { input: inputGradient, goal: below } : { input: null, goal: null };
  }

  // Export.

  /**
   * Its ONNX nodes after `input` [batch, I] and `goal` [batch, goalSize]: the MLP and LayerNorm,
   * the outer products flattened to [batch, H I], then two Gemms (opset 9's Gemm needs its C input:
   * the first takes b, the second the first's output).
   */
  exportOnnx(graph: GraphWriter, input: string, goal: string, parameters: Float32Array): string {
    const { name, hiddenSize: h, inputs, outputs } = this;
    const hidden = this.layers.reduce((x, layer, l) => layer.exportOnnx(graph, x, `${name}.hypernet.${2 * l}`, parameters), goal);
    const normalized = this.layerNorm.exportOnnx(graph, hidden, `${name}.hypernet.${2 * this.layers.length}`);
    const column = graph.node('Unsqueeze', [normalized], `${name}.normalized_column`, { axes: { ints: [2] } });
    const row = graph.node('Unsqueeze', [input], `${name}.input_row`, { axes: { ints: [1] } });
    const outer = graph.node('Flatten', [graph.node('Mul', [column, row], `${name}.outer`)], `${name}.outer_flat`, { axis: { int: 1 } });
    const weight = graph.floats(this.weight.name, [h * inputs, outputs], blockValues(parameters, this.weight));
    const generatedBias = graph.floats(this.generatedBias.name, [inputs, outputs], blockValues(parameters, this.generatedBias));
    const bias = graph.floats(this.bias.name, [outputs], blockValues(parameters, this.bias));
    const generated = graph.node('Gemm', [outer, weight, bias], `${name}.generated`);
    return graph.node('Gemm', [input, generatedBias, generated], `${name}.output`);
  }

  /** Frees the tensors kept between passes. */
  dispose(): void {
    for (const layer of this.layers) layer.dispose();
    this.disposeGenerator();
  }

  private disposeGenerator(): void {
    if (this.tensors === null) return;
    tf.dispose([this.tensors.weight, this.tensors.generatedBias, this.tensors.bias]);
    this.tensors = null;
  }

  /** The last layer's parameters as tensors, uploaded again only when the parameters changed. */
  private generatorTensors(source: ParameterSource): GeneratorTensors {
    if (this.tensors !== null && this.tensors.version === source.version) return this.tensors;
    this.disposeGenerator();
    const { hiddenSize: h, inputs, outputs } = this;
    const p = source.parameters;
    this.tensors = tf.tidy(() => ({
      version: source.version,
      weight: tf.keep(tf.tensor2d(blockValues(p, this.weight), [h * inputs, outputs])),
      generatedBias: tf.keep(tf.tensor2d(blockValues(p, this.generatedBias), [inputs, outputs])),
      bias: tf.keep(tf.tensor1d(blockValues(p, this.bias))),
    }));
    return this.tensors;
  }
}

function keptPass<T>(pass: KeptPass<T> | null): KeptPass<T> {
  if (pass === null) throw new Error('A hypernetwork\'s backward needs a kept forward pass first.');
  return pass;
}
