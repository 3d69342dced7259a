/**
 * Adam on a flat parameter vector, with torch.optim.Adam's defaults and arithmetic (upstream's
 * optimizer): betas 0.9 and 0.999, epsilon 1e-8 added to the bias-corrected root of the second
 * moment, no weight decay. It runs in JavaScript because the parameters live in a typed array:
 * one loop over the vector costs less than the dozen tensor ops per weight a tensor Adam takes.
 * During an update on WebGPU the parameters and moments live on the GPU instead
 * (device-parameters.ts) and the same step runs there on tensors (stepTensors).
 */
import * as tf from '@tensorflow/tfjs';
import { CheckpointArray, requireCheckpointArray } from './checkpoint-file';

/** Parameters and Adam's moments as GPU vectors of one length. */
export interface AdamTensors {
  readonly parameters: tf.Tensor1D;
  readonly firstMoment: tf.Tensor1D;
  readonly secondMoment: tf.Tensor1D;
}

export class Adam {
  readonly firstMoment: Float32Array;
  readonly secondMoment: Float32Array;
  /** Updates applied so far (torch's `step`), which drives the bias correction. */
  step = 0;

  constructor(
    readonly size: number,
    readonly beta1 = 0.9,
    readonly beta2 = 0.999,
    readonly epsilon = 1e-8,
  ) {
    this.firstMoment = new Float32Array(size);
    this.secondMoment = new Float32Array(size);
  }

  /** Its moments as checkpoint arrays, named <prefix>.first_moment and <prefix>.second_moment. */
  stateArrays(prefix: string): Array<[string, CheckpointArray]> {
    return [
      [`${prefix}.first_moment`, this.firstMoment],
      [`${prefix}.second_moment`, this.secondMoment],
    ];
  }

  /** Restores stateArrays(prefix) and the step count saved beside them. */
  loadStateArrays(prefix: string, arrays: ReadonlyMap<string, CheckpointArray>, step: number): void {
    this.firstMoment.set(requireCheckpointArray(arrays, `${prefix}.first_moment`, this.size));
    this.secondMoment.set(requireCheckpointArray(arrays, `${prefix}.second_moment`, this.size));
    this.step = step;
  }

  /** stateArrays(prefix) and the step count as <prefix>.step: everything a provider's own Adam needs back. */
  stateArraysWithStep(prefix: string): Array<[string, CheckpointArray]> {
    return [...this.stateArrays(prefix), [`${prefix}.step`, new Float64Array([this.step])]];
  }

  /** Restores stateArraysWithStep(prefix). */
  loadStateArraysWithStep(prefix: string, arrays: ReadonlyMap<string, CheckpointArray>): void {
    this.loadStateArrays(prefix, arrays, requireCheckpointArray(arrays, `${prefix}.step`, 1)[0]);
  }

  /** parameters -= learningRate * m_hat / (sqrt(v_hat) + epsilon), in place. */
  apply(parameters: Float32Array, gradient: Float32Array, learningRate: number): void {
    const { stepSize, inverseSecondCorrection } = this.nextStep(learningRate);
    const { beta1, beta2, epsilon, firstMoment: m, secondMoment: v } = this;
    const firstWeight = 1 - beta1;
    const secondWeight = 1 - beta2;
    // Everything loop-invariant is hoisted and each array element read once: this loop is a
    // noticeable share of a minibatch update.
    for (let i = 0; i < parameters.length; i++) {
      const g = gradient[i];
      const mPrevious = m[i];
      const mi = mPrevious + firstWeight * (g - mPrevious);
      const vi = beta2 * v[i] + secondWeight * g * g;
      m[i] = mi;
      v[i] = vi;
      parameters[i] -= (stepSize * mi) / (Math.sqrt(vi) * inverseSecondCorrection + epsilon);
    }
  }

  /** apply() on GPU vectors: the new parameters and moments (the caller frees `state` and `gradient`). */
  stepTensors(state: AdamTensors, gradient: tf.Tensor1D, learningRate: number): AdamTensors {
    const { stepSize, inverseSecondCorrection } = this.nextStep(learningRate);
    const { beta1, beta2, epsilon } = this;
    return tf.tidy(() => {
      const firstMoment = tf.add(state.firstMoment, tf.mul(tf.sub(gradient, state.firstMoment), 1 - beta1)) as tf.Tensor1D;
      const secondMoment = tf.add(tf.mul(state.secondMoment, beta2), tf.mul(tf.square(gradient), 1 - beta2)) as tf.Tensor1D;
      const denominator = tf.add(tf.mul(tf.sqrt(secondMoment), inverseSecondCorrection), epsilon);
      const parameters = tf.sub(state.parameters, tf.div(tf.mul(firstMoment, stepSize), denominator)) as tf.Tensor1D;
      return { parameters, firstMoment, secondMoment };
    });
  }

  /** Counts one more step and gives its bias corrections: lr / (1 - beta1^t) and 1 / sqrt(1 - beta2^t). */
  private nextStep(learningRate: number): { stepSize: number; inverseSecondCorrection: number } {
    this.step++;
    return {
      stepSize: learningRate / (1 - this.beta1 ** this.step),
      inverseSecondCorrection: 1 / Math.sqrt(1 - this.beta2 ** this.step),
    };
  }
}
