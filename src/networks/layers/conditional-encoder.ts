/**
 * Upstream's ConditionalEncoder (torch_entities/conditioning.py): the network body's MLP when
 * goal signals condition it (network_settings.goal_conditioning_type: hyper). `numLayers` layers
 * of `hiddenUnits`, each followed by Swish; the last `conditionalLayers` of them (upstream's
 * bodies use 1) are HyperNetworks (hypernetwork.ts, an MLP of 2 layers of hiddenUnits on the
 * goal), the others dense layers drawn KaimingHeNormal with gain 1, as the LinearEncoder's.
 *
 * Its input is the body's whole input (every observation encoded, the goals among them, then any
 * actions), as upstream's; the goal is the goal observations' encodings, columns of that same
 * input (`goalColumns`), picked by a product with a one-hot selection matrix so that their
 * gradient flows back into the input's columns (and through a visual goal's encoder).
 *
 * It runs in the three ways of the LinearEncoder (BodyEncoder): the feature-major way transposes
 * into the batch-first one, whose generated product (H I O multiply-adds a sample) dwarfs the
 * transposes.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { Swish } from './activations';
import { Dense, linearLayer, tracedMatMul } from './dense';
import { HyperNetwork, HyperNetworkTracedPass } from './hypernetwork';
import { GraphWriter, ParameterAllocator, ParameterBlock, ParameterSource, TracedParameters, TracedPass } from './layer';
import type { BodyEncoder } from './linear-encoder';

/** One layer: dense with Swish fused, or a hypernetwork with its Swish after it. */
type ConditionalLayer = { readonly dense: Dense } | { readonly hyper: HyperNetwork; readonly swish: Swish };

/** A JavaScript pass's Swish on a hypernetwork's output: its gate sigmoid(z) and output z sigmoid(z). */
interface SwishPass {
  readonly gate: Float32Array;
  readonly output: Float32Array;
}

export class ConditionalEncoder implements BodyEncoder {
  readonly blocks: readonly ParameterBlock[];
  readonly outputShape: readonly number[];
  readonly layers: readonly ConditionalLayer[];
  private selection: { readonly pick: tf.Tensor2D; readonly scatter: tf.Tensor2D } | null = null;
  private keptSwish: SwishPass[] = [];

  /** Blocks `<name>.<l>.weight` and `.bias` for dense layers, `<name>.<l>.hypernet...` and `<name>.<l>.bias` for conditional ones. */
  constructor(
    allocate: ParameterAllocator,
    name: string,
    readonly inputs: number,
    /** The input columns holding the goal observations' encodings, in order. */
    readonly goalColumns: readonly number[],
    hiddenUnits: number,
    numLayers: number,
    conditionalLayers = 1,
    /**
     * Whether the goal columns of backward()'s input gradient carry the gradient through the
     * hypernetworks, as a goal from an encoder that learns needs; without, they carry only the
     * gradient of the goal as an ordinary input, and the hypernetworks generate their weights
     * once per distinct goal of a batch rather than once per sample (hypernetwork.ts).
     */
    goalGradient = true,
  ) {
    this.layers = Array.from({ length: numLayers }, (_, l): ConditionalLayer => {
      const layerInputs = l === 0 ? inputs : hiddenUnits;
      if (numLayers - l > conditionalLayers) {
        return { dense: linearLayer(allocate, `${name}.${l}`, layerInputs, hiddenUnits, { kind: 'kaimingNormal', gain: 1 }, 'swish') };
      }
      return { hyper: new HyperNetwork(allocate, `${name}.${l}`, layerInputs, hiddenUnits, goalColumns.length, hiddenUnits, 2, goalGradient), swish: new Swish([hiddenUnits]) };
    });
    this.blocks = this.layers.flatMap((layer) => ('dense' in layer ? layer.dense.blocks : layer.hyper.blocks));
    this.outputShape = [hiddenUnits];
  }

  initialize(parameters: Float32Array, random: SeededRandom): void {
    for (const layer of this.layers) ('dense' in layer ? layer.dense : layer.hyper).initialize(parameters, random);
  }

  get multiplyAdds(): number {
    return this.layers.reduce((total, layer) => total + ('dense' in layer ? layer.dense : layer.hyper).multiplyAdds, 0);
  }

  // Rows: batch first, with tfjs.

  forward(input: tf.Tensor, source: ParameterSource, keep: boolean): tf.Tensor {
    const x = input.reshape([-1, this.inputs]) as tf.Tensor2D;
    const goal: tf.Tensor2D = tf.matMul(x, this.selectionTensors().pick);
    return this.layers.reduce<tf.Tensor2D>((h, layer) => {
      if ('dense' in layer) return layer.dense.forward(h, source, keep) as tf.Tensor2D;
      return layer.swish.forward(layer.hyper.forward(h, goal, source, keep), source, keep) as tf.Tensor2D;
    }, x);
  }

  backward(outputGradient: tf.Tensor, source: ParameterSource, needInput: boolean): tf.Tensor | null {
    let gradient = outputGradient as tf.Tensor2D;
    let goalGradient: tf.Tensor2D | null = null;
    for (let l = this.layers.length - 1; l >= 0; l--) {
      const layer = this.layers[l];
      const below = l > 0 || needInput;
      if ('dense' in layer) {
        const next = layer.dense.backward(gradient, source, below);
        if (next === null) return null;
        gradient = next as tf.Tensor2D;
        continue;
      }
      const hyper = layer.hyper.backward(layer.swish.backward(gradient, source, true) as tf.Tensor2D, source, below);
      if (hyper.goal !== null) goalGradient = goalGradient === null ? hyper.goal : (tf.add(goalGradient, hyper.goal) as tf.Tensor2D);
      if (hyper.input === null) return null;
      gradient = hyper.input;
    }
    return goalGradient === null ? gradient : tf.add(gradient, tf.matMul(goalGradient, this.selectionTensors().scatter));
  }

  // Columns: feature-major, through the rows.

  forwardColumns(input: tf.Tensor2D, source: ParameterSource, keep: boolean): tf.Tensor2D {
    return tf.transpose(this.forward(tf.transpose(input), source, keep) as tf.Tensor2D);
  }

  backwardColumns(outputGradient: tf.Tensor2D, source: ParameterSource, needInput: boolean): tf.Tensor2D | null {
    const inputGradient = this.backward(tf.transpose(outputGradient), source, needInput);
    return inputGradient === null ? null : tf.transpose(inputGradient as tf.Tensor2D);
  }

  // JavaScript: batch first, plain loops.

  forwardInJavaScript(input: Float32Array, count: number, parameters: Float32Array, keep: boolean): Float32Array {
    const goal = this.pickGoals(input, count);
    const swishPasses: SwishPass[] = [];
    const output = this.layers.reduce((h, layer) => {
      if ('dense' in layer) return layer.dense.forwardInJavaScript(h, count, parameters, keep);
      const pass = swishInJavaScript(layer.hyper.forwardInJavaScript(h, goal, count, parameters, keep));
      swishPasses.push(pass);
      return pass.output;
    }, input);
    if (keep) this.keptSwish = swishPasses;
    return output;
  }

  backwardInJavaScript(outputGradient: Float32Array, parameters: Float32Array, gradient: Float32Array, needInput: boolean): Float32Array | null {
    let below = outputGradient;
    let swishPass = this.keptSwish.length;
    const goalGradients: Float32Array[] = [];
    for (let l = this.layers.length - 1; l >= 0; l--) {
      const layer = this.layers[l];
      const wanted = l > 0 || needInput;
      let next: Float32Array | null;
      if ('dense' in layer) {
        next = layer.dense.backwardInJavaScript(below, parameters, gradient, wanted);
      } else {
        const pass = this.keptSwish[--swishPass];
        if (pass === undefined) throw new Error('A conditional encoder\'s backward needs a kept forward pass first.');
        const hyper = layer.hyper.backwardInJavaScript(swishBackwardInJavaScript(below, pass), parameters, gradient, wanted);
        if (hyper.goal !== null) goalGradients.push(hyper.goal);
        next = hyper.input;
      }
      if (next === null) return null;
      below = next;
    }
    const width = this.inputs;
    const goals = this.goalColumns;
    for (const goalGradient of goalGradients) {
      for (let s = 0; s < below.length / width; s++) {
        goals.forEach((column, g) => (below[s * width + column] += goalGradient[s * goals.length + g]));
      }
    }
    return below;
  }

  // Traced (layer.ts).

  tracedPass(input: tf.Tensor2D, parameters: TracedParameters): TracedPass<tf.Tensor2D> {
    const { pick, scatter } = this.selectionTensors();
    const goal = tracedMatMul(input, pick);
    const passes: Array<TracedPass<tf.Tensor2D> | { readonly hyper: HyperNetworkTracedPass; readonly swish: TracedPass }> = [];
    const output = this.layers.reduce<tf.Tensor2D>((h, layer) => {
      if ('dense' in layer) {
        const pass = layer.dense.tracedPass(h, parameters);
        passes.push(pass);
        return pass.output;
      }
      const hyper = layer.hyper.tracedPass(h, goal, parameters);
      const swish = layer.swish.tracedPass(hyper.output);
      passes.push({ hyper, swish });
      return swish.output as tf.Tensor2D;
    }, input);
    const inputGradient = (dy: tf.Tensor2D) => {
      let goalGradient: tf.Tensor2D | null = null;
      const gradient = passes.reduceRight<tf.Tensor2D>((below, pass) => {
        if (!('hyper' in pass)) return pass.inputGradient(below);
        const hyper = pass.hyper.inputGradients(pass.swish.inputGradient(below) as tf.Tensor2D);
        goalGradient = goalGradient === null ? hyper.goal : (tf.add(goalGradient, hyper.goal) as tf.Tensor2D);
        return hyper.input;
      }, dy);
      return goalGradient === null ? gradient : (tf.add(gradient, tracedMatMul(goalGradient, scatter)) as tf.Tensor2D);
    };
    return { output, inputGradient };
  }

  // Export.

  /** Its ONNX nodes: the goal picked from `input` by a MatMul with the selection matrix, then the layers. */
  exportOnnx(graph: GraphWriter, input: string, name: string, parameters: Float32Array): string {
    const pick = graph.floats(`${name}.goal_selection`, [this.inputs, this.goalColumns.length], this.selectionValues());
    const goal = graph.node('MatMul', [input, pick], `${name}.goal`);
    return this.layers.reduce((h, layer, l) => {
      if ('dense' in layer) return layer.dense.exportOnnx(graph, h, `${name}.${l}`, parameters);
      return layer.swish.exportOnnx(graph, layer.hyper.exportOnnx(graph, h, goal, parameters), `${name}.${l}.swish`);
    }, input);
  }

  dispose(): void {
    for (const layer of this.layers) ('dense' in layer ? layer.dense : layer.hyper).dispose();
    if (this.selection === null) return;
    tf.dispose([this.selection.pick, this.selection.scatter]);
    this.selection = null;
  }

  /** The goal columns of `count` rows of input (count x goals). */
  private pickGoals(input: Float32Array, count: number): Float32Array {
    const goals = this.goalColumns;
    const picked = new Float32Array(count * goals.length);
    for (let s = 0; s < count; s++) goals.forEach((column, g) => (picked[s * goals.length + g] = input[s * this.inputs + column]));
    return picked;
  }

  /** inputs x goals, 1 where goal g is input column goalColumns[g]. */
  private selectionValues(): Float32Array {
    const goals = this.goalColumns.length;
    const values = new Float32Array(this.inputs * goals);
    this.goalColumns.forEach((column, g) => (values[column * goals + g] = 1));
    return values;
  }

  /** The selection matrix (pick: inputs x goals) and its transpose (scatter), made once. */
  private selectionTensors(): { readonly pick: tf.Tensor2D; readonly scatter: tf.Tensor2D } {
    if (this.selection !== null) return this.selection;
    const goals = this.goalColumns.length;
    const values = this.selectionValues();
    const transposed = new Float32Array(values.length);
    this.goalColumns.forEach((column, g) => (transposed[g * this.inputs + column] = 1));
    this.selection = tf.tidy(() => ({
      pick: tf.keep(tf.tensor2d(values, [this.inputs, goals])),
      scatter: tf.keep(tf.tensor2d(transposed, [goals, this.inputs])),
    }));
    return this.selection;
  }
}

/** Swish of `z` in plain loops. */
function swishInJavaScript(z: Float32Array): SwishPass {
  const gate = new Float32Array(z.length);
  const output = new Float32Array(z.length);
  for (let j = 0; j < z.length; j++) {
    gate[j] = 1 / (1 + Math.exp(-z[j]));
    output[j] = z[j] * gate[j];
  }
  return { gate, output };
}

/** d/dz [z s(z)] = s + swish (1 - s), times the output gradient. */
function swishBackwardInJavaScript(outputGradient: Float32Array, { gate, output }: SwishPass): Float32Array {
  return outputGradient.map((d, j) => d * (gate[j] + output[j] * (1 - gate[j])));
}
