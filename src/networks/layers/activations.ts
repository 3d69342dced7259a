/**
 * The activations upstream's encoders use, as layers without parameters: LeakyReLU (torch's
 * default slope 0.01), ReLU and Swish (x sigmoid(x)). Each keeps what its derivative needs. Their
 * traced derivatives treat the kinks' step functions as constants, as torch's double backward does.
 */
import * as tf from '@tensorflow/tfjs';
import { GraphWriter, Layer, ParameterBlock, TracedPass } from './layer';

/** torch.nn.LeakyReLU's default negative slope. */
export const LEAKY_RELU_SLOPE = 0.01;

abstract class Activation implements Layer {
  readonly blocks: readonly ParameterBlock[] = [];
  constructor(readonly outputShape: readonly number[]) {}
  initialize(): void {}
  abstract forward(input: tf.Tensor, source: unknown, keep: boolean): tf.Tensor;
  abstract backward(outputGradient: tf.Tensor, source: unknown, needInput: boolean): tf.Tensor | null;
  abstract tracedPass(input: tf.Tensor): TracedPass;
  abstract exportOnnx(graph: GraphWriter, input: string, name: string): string;
}

/** max(x, 0) + slope min(x, 0) */
export class LeakyRelu extends Activation {
  private input: tf.Tensor | null = null;

  forward(input: tf.Tensor, _source: unknown, keep: boolean): tf.Tensor {
    if (keep) this.input = input;
    // The same values as tf.leakyRelu, whose wasm kernel takes about twice as long.
    return tf.prelu(input, tf.scalar(LEAKY_RELU_SLOPE));
  }

  backward(outputGradient: tf.Tensor, _source: unknown, needInput: boolean): tf.Tensor | null {
    if (!needInput) return null;
    // step(x, a) is 1 where x > 0 and a elsewhere: the derivative itself.
    return tf.mul(outputGradient, tf.step(kept(this.input), LEAKY_RELU_SLOPE));
  }

  tracedPass(input: tf.Tensor): TracedPass {
    const slope = tf.step(input, LEAKY_RELU_SLOPE);
    return { output: tf.leakyRelu(input, LEAKY_RELU_SLOPE), inputGradient: (dy) => tf.mul(dy, slope) };
  }

  exportOnnx(graph: GraphWriter, input: string, name: string): string {
    return graph.node('LeakyRelu', [input], `${name}.output`, { alpha: { float: LEAKY_RELU_SLOPE } });
  }
}

/** max(x, 0) */
export class Relu extends Activation {
  private input: tf.Tensor | null = null;

  forward(input: tf.Tensor, _source: unknown, keep: boolean): tf.Tensor {
    if (keep) this.input = input;
    return tf.relu(input);
  }

  backward(outputGradient: tf.Tensor, _source: unknown, needInput: boolean): tf.Tensor | null {
    return needInput ? tf.mul(outputGradient, tf.step(kept(this.input), 0)) : null;
  }

  tracedPass(input: tf.Tensor): TracedPass {
    const slope = tf.step(input, 0);
    return { output: tf.relu(input), inputGradient: (dy) => tf.mul(dy, slope) };
  }

  exportOnnx(graph: GraphWriter, input: string, name: string): string {
    return graph.node('Relu', [input], `${name}.output`);
  }
}

/** x sigmoid(x), upstream's Swish */
export class Swish extends Activation {
  private gate: tf.Tensor | null = null;
  private output: tf.Tensor | null = null;

  forward(input: tf.Tensor, _source: unknown, keep: boolean): tf.Tensor {
    const gate = tf.sigmoid(input);
    const output = tf.mul(input, gate);
    if (keep) {
      this.gate = gate;
      this.output = output;
    }
    return output;
  }

  backward(outputGradient: tf.Tensor, _source: unknown, needInput: boolean): tf.Tensor | null {
    if (!needInput) return null;
    return swishBackward(outputGradient, kept(this.gate), kept(this.output));
  }

  tracedPass(input: tf.Tensor): TracedPass {
    const gate = tf.sigmoid(input);
    const output = tf.mul(input, gate);
    return { output, inputGradient: (dy) => swishBackward(dy, gate, output) };
  }

  exportOnnx(graph: GraphWriter, input: string, name: string): string {
    const gate = graph.node('Sigmoid', [input], `${name}.gate`);
    return graph.node('Mul', [input, gate], `${name}.output`);
  }
}

function kept(tensor: tf.Tensor | null): tf.Tensor {
  if (tensor === null) throw new Error('An activation\'s backward() needs a kept forward pass first.');
  return tensor;
}

/**
 * Swish's input gradient from its output gradient, its gate sigmoid(x) and its output:
 * d/dx [x s(x)] = s + swish - swish s. Same-shape ops only: a broadcast scalar (1 - s) makes the
 * wasm backend's following ops markedly slower.
 */
export function swishBackward(outputGradient: tf.Tensor, gate: tf.Tensor, output: tf.Tensor): tf.Tensor {
  return tf.mul(outputGradient, tf.sub(tf.add(gate, output), tf.mul(output, gate)));
}
