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
 * the last layer and `<name>.bias`. The last layer's weight is kept as [H, I O] (torch keeps
 * [I O, H]), its bias as [I O]: with n the normalized hidden features of a goal,
 *
 *     W(g) = n M + C,    y = x W(g) + b.
 *
 * Generating W(g) costs H I O multiply-adds, against I O for using it, so a batch generates it
 * once per distinct goal (goals are few in practice: GridWorld has two) and each sample picks its
 * goal's: U distinct goals cost U H I O. The backward is derived by hand, per distinct goal u
 * with its samples S(u): dW_u = sum over S(u) of x^T dy, dM = n^T dW, dC = the sum of the dW_u,
 * dn_u = M . dW_u (summed over I O), dx = dy W(g)^T. It is exact only for the goals' sums: the
 * gradient of each sample's own goal is not recovered, so a layer whose goal comes out of an
 * encoder that learns (`goalGradient`) gives every sample its own group instead; the plain-loop
 * passes always do. Products with a transposed operand (the wasm backend runs them in a plain
 * loop, 5 to 10 times slower) are avoided but for one, on purpose: see generatedProduct().
 * Checked against tfjs's autodiff in test/networks/layers.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { readsSynchronously, tensorValues, writeGradient } from '../tensor-io';
import { Dense, linearLayer, tracedMatMul } from './dense';
import { GraphWriter, ParameterAllocator, ParameterBlock, ParameterSource, TracedParameters, TracedPass, blockValues, deviceBlock } from './layer';
import { LayerNorm } from './layer-norm';

/** The last layer's weights and biases as tensors, in the shapes the passes multiply by. */
interface GeneratorTensors {
  readonly version: number;
  /** M: H x (I O) */
  readonly weight: tf.Tensor2D;
  /** C: I O */
  readonly generatedBias: tf.Tensor1D;
  readonly bias: tf.Tensor1D;
}

/**
 * The samples of a batch grouped by goal: `first[u]` is the first sample of distinct goal u,
 * `membership` (count x U) is 1 where sample s has goal u. Null: every sample its own group.
 */
interface GoalGroups {
  readonly first: tf.Tensor1D;
  readonly membership: tf.Tensor2D;
}

/** What a kept tfjs forward left for the backward. */
interface KeptTensors {
  readonly input: tf.Tensor2D;
  /** Each distinct goal's normalized hidden features: U x H. */
  readonly normalized: tf.Tensor2D;
  /** Each sample's generated weights: count x I x O. */
  readonly generated: tf.Tensor3D;
  readonly groups: GoalGroups | null;
}

/** What a kept JavaScript forward left for the backward: the main layer's input and the normalized hidden features. */
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
  private kept: KeptTensors | null = null;
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
    /**
     * Whether backward() returns the gradient of each sample's goal (an encoder below learns
     * from it); without, samples of one goal share one generated weight matrix.
     */
    readonly goalGradient = true,
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
    const { inputs, outputs } = this;
    // Grouping reads the goals: a backend that cannot read them mid-pass (WebGPU) generates every
    // sample's weights instead, the same numbers at more multiply-adds, which a GPU affords.
    const groups = this.goalGradient || !readsSynchronously() ? null : goalGroups(tensorValues(goal), count, this.goalSize);
    const goals = groups === null ? goal : tf.gather(goal, groups.first);
    const hidden = this.layers.reduce<tf.Tensor>((x, layer) => layer.forward(x, source, keep), goals);
    const normalized = this.layerNorm.forward(hidden, source, keep) as tf.Tensor2D;
    const { weight, generatedBias, bias } = this.generatorTensors(source);
    const perGoal = tf.add(generatedProduct(normalized, weight, keep), generatedBias);
    // Each sample's goal's, picked by a product with the one-hot membership (the wasm backend's gather is slower).
    const generated = tf.reshape(groups === null ? perGoal : tf.matMul(groups.membership, perGoal), [count, inputs, outputs]) as tf.Tensor3D;
    if (keep) this.kept = { input, normalized, generated, groups };
    return tf.add(tf.reshape(tf.matMul(tf.reshape(input, [count, 1, inputs]), generated), [count, outputs]), bias) as tf.Tensor2D;
  }

  /**
   * From d loss / d output (count x O) of the last kept forward, writes the gradient of every
   * block and, with `needInput`, returns those of the input and (with goalGradient) the goal.
   */
  backward(outputGradient: tf.Tensor2D, source: ParameterSource, needInput: boolean): HyperNetworkGradients<tf.Tensor2D> {
    const { input, normalized, generated, groups } = keptPass(this.kept);
    const count = input.shape[0];
    const { inputs, outputs } = this;
    const { weight } = this.generatorTensors(source);
    // d loss / d W(g), feature-major ((I O) x U): each sample's x^T dy, summed over its goal's samples.
    const perSample = tf.reshape(
      tf.mul(tf.reshape(tf.transpose(input), [inputs, 1, count]), tf.reshape(tf.transpose(outputGradient), [1, outputs, count])),
      [inputs * outputs, count],
    );
    const generatedGradient = groups === null ? perSample : tf.matMul(perSample, groups.membership);
    writeGradient(tf.matMul(tf.transpose(normalized), tf.transpose(generatedGradient)), source.gradient, this.weight.offset);
    writeGradient(tf.sum(generatedGradient, 1), source.gradient, this.generatedBias.offset);
    writeGradient(tf.sum(outputGradient, 0), source.gradient, this.bias.offset);

    const normalizedGradient = tf.transpose(tf.matMul(weight, generatedGradient));
    let gradient: tf.Tensor | null = this.layerNorm.backward(normalizedGradient, source, true);
    for (let l = this.layers.length - 1; l >= 0 && gradient !== null; l--) {
      gradient = this.layers[l].backward(gradient, source, l > 0 || (needInput && this.goalGradient));
    }
    if (!needInput) return { input: null, goal: null };
    const inputGradient = tf.reshape(tf.matMul(generated, tf.reshape(outputGradient, [count, outputs, 1])), [count, inputs]) as tf.Tensor2D;
    return { input: inputGradient, goal: this.goalGradient ? (gradient as tf.Tensor2D) : null };
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

  /**
   * The last layer's parameters as tensors, uploaded again only when the parameters changed
   * (sliced on the GPU when they live there).
   */
  private generatorTensors(source: ParameterSource): GeneratorTensors {
    if (this.tensors !== null && this.tensors.version === source.version) return this.tensors;
    this.disposeGenerator();
    const { hiddenSize: h, inputs, outputs } = this;
    const { device, parameters } = source;
    const values = (block: ParameterBlock, shape: number[]) => (device ? tf.reshape(deviceBlock(device, block), shape) : tf.tensor(blockValues(parameters, block), shape));
    this.tensors = tf.tidy(() => ({
      version: source.version,
      weight: tf.keep(values(this.weight, [h, inputs * outputs]) as tf.Tensor2D),
      generatedBias: tf.keep(values(this.generatedBias, [inputs * outputs]) as tf.Tensor1D),
      bias: tf.keep(values(this.bias, [outputs]) as tf.Tensor1D),
    }));
    return this.tensors;
  }
}

/**
 * Below this many distinct goals, a training pass computes n M with the wasm backend's plain loop
 * kernel rather than with XNNPACK (bench:conditioning).
 */
const PLAIN_LOOP_GOALS = 4;

/**
 * n M (U x H by H x I O). XNNPACK copies M into its own layout (about 20 ms at GridWorld's
 * sizes) before its first product with it, and reuses that copy while M stays the same tensor:
 * worth it for acting and value estimates, which run many times between two updates, but not
 * for a training pass, after which M changes. There, for a few goals, the backend's plain loop
 * kernel (which the wasm backend runs for a product with a transposed operand) reads M where it
 * lies, at about a quarter of that copy's cost per goal.
 */
function generatedProduct(normalized: tf.Tensor2D, weight: tf.Tensor2D, training: boolean): tf.Tensor2D {
  if (training && normalized.shape[0] < PLAIN_LOOP_GOALS) return tf.matMul(tf.transpose(normalized), weight, true, false);
  return tf.matMul(normalized, weight);
}

/** The samples of `count` rows of goals (count x width values) grouped by distinct goal, in order of first appearance. */
function goalGroups(goals: Float32Array, count: number, width: number): GoalGroups {
  const groupOf = new Map<string, number>();
  const first: number[] = [];
  const of = new Int32Array(count);
  for (let s = 0; s < count; s++) {
    // Each float32 value prints as a distinct string: rows with the same key are the same goal.
    const key = goals.subarray(s * width, (s + 1) * width).join(',');
    let group = groupOf.get(key);
    if (group === undefined) {
      group = first.length;
      groupOf.set(key, group);
      first.push(s);
    }
    of[s] = group;
  }
  const membership = new Float32Array(count * first.length);
  of.forEach((group, s) => (membership[s * first.length + group] = 1));
  return { first: tf.tensor1d(first, 'int32'), membership: tf.tensor2d(membership, [count, first.length]) };
}

function keptPass<T>(pass: T | null): T {
  if (pass === null) throw new Error('A hypernetwork\'s backward needs a kept forward pass first.');
  return pass;
}
