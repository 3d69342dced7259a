/**
 * Adam on a flat parameter vector, with torch.optim.Adam's defaults and arithmetic (upstream's
 * optimizer): betas 0.9 and 0.999, epsilon 1e-8 added to the bias-corrected root of the second
 * moment, no weight decay. It runs in JavaScript because the parameters live in a typed array:
 * one loop over the vector costs less than the dozen tensor ops per weight a tensor Adam takes.
 */
import { CheckpointArray, requireCheckpointArray } from './checkpoint-file';

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
    this.step++;
    const { beta1, beta2, epsilon, firstMoment: m, secondMoment: v } = this;
    const stepSize = learningRate / (1 - beta1 ** this.step);
    const inverseSecondCorrection = 1 / Math.sqrt(1 - beta2 ** this.step);
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
}
