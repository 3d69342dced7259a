/**
 * Upstream's LayerNorm (torch_entities/layers.py): each sample's features centered on their mean
 * and divided by sqrt(variance + 1e-5), without the learned gain and offset of the paper. The
 * hypernetwork normalizes its hidden features with it before generating weights.
 *
 * With y the normalized features and s = 1 / sqrt(variance + eps), the backward is
 * dx = s (dy - mean(dy) - y mean(dy y)), every mean over the sample's features.
 */
import * as tf from '@tensorflow/tfjs';
import { GraphWriter, Layer, ParameterBlock, TracedPass } from './layer';

/** Upstream's epsilon under the square root. */
export const LAYER_NORM_EPSILON = 1e-5;

/** What a kept forward pass left for the backward: the output and each sample's 1 / std. */
interface KeptPass<T> {
  readonly output: T;
  readonly inverseStd: T;
}

export class LayerNorm implements Layer {
  readonly blocks: readonly ParameterBlock[] = [];
  readonly outputShape: readonly number[];
  private kept: KeptPass<tf.Tensor> | null = null;
  private keptInJavaScript: KeptPass<Float32Array> | null = null;

  constructor(readonly features: number) {
    this.outputShape = [features];
  }

  initialize(): void {}

  forward(input: tf.Tensor, _source: unknown, keep: boolean): tf.Tensor {
    const pass = normalize(input);
    if (keep) this.kept = pass;
    return pass.output;
  }

  backward(outputGradient: tf.Tensor, _source: unknown, needInput: boolean): tf.Tensor | null {
    return needInput ? inputGradient(outputGradient, keptPass(this.kept)) : null;
  }

  /** Its forward and backward are ops tfjs differentiates. */
  tracedPass(input: tf.Tensor): TracedPass {
    const pass = normalize(input);
    return { output: pass.output, inputGradient: (dy) => inputGradient(dy, pass) };
  }

  /** count x features rows in plain loops, sums in double precision. */
  forwardInJavaScript(input: Float32Array, count: number, keep: boolean): Float32Array {
    const n = this.features;
    const output = new Float32Array(count * n);
    const inverseStd = new Float32Array(count);
    for (let i = 0; i < count; i++) {
      const row = i * n;
      let mean = 0;
      for (let f = 0; f < n; f++) mean += input[row + f];
      mean /= n;
      let variance = 0;
      for (let f = 0; f < n; f++) variance += (input[row + f] - mean) ** 2;
      const s = 1 / Math.sqrt(variance / n + LAYER_NORM_EPSILON);
      for (let f = 0; f < n; f++) output[row + f] = (input[row + f] - mean) * s;
      inverseStd[i] = s;
    }
    if (keep) this.keptInJavaScript = { output, inverseStd };
    return output;
  }

  backwardInJavaScript(outputGradient: Float32Array): Float32Array {
    const { output, inverseStd } = keptPass(this.keptInJavaScript);
    const n = this.features;
    const inputGradient = new Float32Array(output.length);
    for (let i = 0; i < inverseStd.length; i++) {
      const row = i * n;
      let meanGradient = 0;
      let meanProjection = 0;
      for (let f = 0; f < n; f++) {
        meanGradient += outputGradient[row + f];
        meanProjection += outputGradient[row + f] * output[row + f];
      }
      meanGradient /= n;
      meanProjection /= n;
      for (let f = 0; f < n; f++) {
        inputGradient[row + f] = inverseStd[i] * (outputGradient[row + f] - meanGradient - output[row + f] * meanProjection);
      }
    }
    return inputGradient;
  }

  /** Opset 9's ReduceMean takes its axes as an attribute. */
  exportOnnx(graph: GraphWriter, input: string, name: string): string {
    const mean = graph.node('ReduceMean', [input], `${name}.mean`, { axes: { ints: [-1] }, keepdims: { int: 1 } });
    const centered = graph.node('Sub', [input, mean], `${name}.centered`);
    const squared = graph.node('Mul', [centered, centered], `${name}.squared`);
    const variance = graph.node('ReduceMean', [squared], `${name}.variance`, { axes: { ints: [-1] }, keepdims: { int: 1 } });
    const shifted = graph.node('Add', [variance, graph.floats(`${name}.epsilon`, [], [LAYER_NORM_EPSILON])], `${name}.shifted`);
    const std = graph.node('Sqrt', [shifted], `${name}.std`);
    return graph.node('Div', [centered, std], `${name}.output`);
  }
}

function normalize(input: tf.Tensor): KeptPass<tf.Tensor> {
  const centered = tf.sub(input, tf.mean(input, -1, true));
  const inverseStd = tf.rsqrt(tf.add(tf.mean(tf.square(centered), -1, true), LAYER_NORM_EPSILON));
  return { output: tf.mul(centered, inverseStd), inverseStd };
}

/** dx = s (dy - mean(dy) - y mean(dy y)) */
function inputGradient(outputGradient: tf.Tensor, { output, inverseStd }: KeptPass<tf.Tensor>): tf.Tensor {
  const meanGradient = tf.mean(outputGradient, -1, true);
  const meanProjection = tf.mean(tf.mul(outputGradient, output), -1, true);
  return tf.mul(inverseStd, tf.sub(tf.sub(outputGradient, meanGradient), tf.mul(output, meanProjection)));
}

function keptPass<T>(pass: KeptPass<T> | null): KeptPass<T> {
  if (pass === null) throw new Error('A layer norm\'s backward needs a kept forward pass first.');
  return pass;
}
