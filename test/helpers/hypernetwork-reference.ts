/**
 * Upstream's HyperNetwork, LayerNorm and Swish written with plain tfjs ops the way torch computes
 * them (conditioning.py, layers.py): the references that tfjs's autodiff differentiates in the
 * layer tests, and the formulation bench/conditional-encoder.ts times against ours.
 */
import * as tf from '@tensorflow/tfjs';

export function swish(z: tf.Tensor): tf.Tensor {
  return tf.mul(z, tf.sigmoid(z));
}

/** (x - mean) / sqrt(variance + 1e-5) over the last axis. */
export function referenceLayerNorm(x: tf.Tensor): tf.Tensor {
  const centered = tf.sub(x, tf.mean(x, -1, true));
  return tf.div(centered, tf.sqrt(tf.add(tf.mean(tf.square(centered), -1, true), 1e-5)));
}

/**
 * Upstream's HyperNetwork.forward: the generated weights per sample (batch x inputs x outputs,
 * from a Linear of torch's layout) and a batched product. `p` holds our blocks by name, `name`
 * the layer's prefix.
 */
export function referenceHyperNetwork(x: tf.Tensor, goal: tf.Tensor, p: Record<string, tf.Tensor>, name: string, inputs: number, outputs: number): tf.Tensor {
  const dense = (h: tf.Tensor, layer: string) => swish(tf.add(tf.matMul(h, p[`${layer}.weight`], false, true), p[`${layer}.bias`]));
  const hidden = referenceLayerNorm(dense(dense(goal, `${name}.hypernet.0`), `${name}.hypernet.2`));
  const h = hidden.shape[1]!;
  // Torch's Linear weight is [I O, H]: ours, [H, I, O], transposed.
  const torchWeight = tf.transpose(tf.reshape(p[`${name}.hypernet.5.weight`], [h, inputs * outputs]));
  const generated = tf.add(tf.matMul(hidden, torchWeight, false, true), tf.reshape(p[`${name}.hypernet.5.bias`], [inputs * outputs]));
  const weights = tf.reshape(generated, [-1, inputs, outputs]) as tf.Tensor3D;
  const product = tf.matMul(tf.expandDims(x, 1) as tf.Tensor3D, weights);
  return tf.add(tf.squeeze(product, [1]), p[`${name}.bias`]);
}
