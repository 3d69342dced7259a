import { ActionSpec } from '../../../src/env/behavior-spec';
import { HeadGradients, HeadOutputs } from '../../../src/networks/actor-critic';
import { gaussianLogProb } from '../../../src/networks/distributions';
import { PpoMinibatch, clippedSurrogate, clippedValueError, ppoLoss } from '../../../src/trainers/ppo/loss';

describe('clipped surrogate min(r A, clip(r, 1 - eps, 1 + eps) A)', () => {
  it('clips a ratio that went too far in the direction the advantage favours, and stops its gradient', () => {
    expect(clippedSurrogate(Math.log(1.5), 2, 0.2)).toEqual([expect.closeTo(2.4, 12), 0]);
    expect(clippedSurrogate(Math.log(0.5), -1, 0.2)).toEqual([expect.closeTo(-0.8, 12), 0]);
  });

  it('keeps the unclipped term (gradient r A) inside the trust region or where it is the smaller', () => {
    expect(clippedSurrogate(Math.log(1.1), 2, 0.2).map((v) => v.toFixed(10))).toEqual(['2.2000000000', '2.2000000000']);
    expect(clippedSurrogate(Math.log(0.5), 1, 0.2).map((v) => v.toFixed(10))).toEqual(['0.5000000000', '0.5000000000']);
    expect(clippedSurrogate(Math.log(1.5), -1, 0.2).map((v) => v.toFixed(10))).toEqual(['-1.5000000000', '-1.5000000000']);
  });
});

describe('clipped value error max((R - V)^2, (R - V_clipped)^2)', () => {
  it('takes the clipped error, with no gradient, when V moved too far away from the return', () => {
    // V_clipped = 0.5 + 0.2 = 0.7: (2 - 1)^2 = 1 < (2 - 0.7)^2 = 1.69.
    expect(clippedValueError(1.0, 0.5, 2, 0.2)).toEqual([expect.closeTo(1.69, 12), 0]);
  });

  it('takes the plain error, gradient 2 (V - R), otherwise', () => {
    expect(clippedValueError(1.0, 0.5, 0, 0.2)).toEqual([1, 2]);
    expect(clippedValueError(0.6, 0.5, 2, 0.2)).toEqual([expect.closeTo(1.96, 12), expect.closeTo(-2.8, 12)]);
  });
});

describe('ppoLoss', () => {
  /** Zeroed gradient arrays shaped like the outputs. */
  function zerosLike(outputs: HeadOutputs): HeadGradients {
    return {
      means: new Float32Array(outputs.means.length),
      logStd: new Float32Array(outputs.logStd.length),
      logits: new Float32Array(outputs.logits.length),
      values: outputs.values.map((v) => new Float32Array(v.length)),
    };
  }

  it('matches a continuous minibatch worked out by hand', () => {
    const logStd = Math.log(0.5);
    const outputs: HeadOutputs = {
      count: 2,
      means: new Float32Array([0.1, -0.2]),
      logStd: new Float32Array([logStd]),
      logits: new Float32Array(0),
      values: [new Float32Array([0.5, 1.0])],
    };
    const actions = new Float32Array([0.3, -0.5]);
    // Old log probabilities chosen so that the ratios are 1.5 and 0.9.
    const oldLogProbs = new Float32Array([
      gaussianLogProb(actions[0], 0.1, Math.fround(logStd)) - Math.log(1.5),
      gaussianLogProb(actions[1], -0.2, Math.fround(logStd)) - Math.log(0.9),
    ]);
    const batch: PpoMinibatch = {
      count: 2,
      observations: [],
      continuousActions: actions,
      discreteActions: new Int32Array(0),
      actionMasks: null,
      oldContinuousLogProbs: oldLogProbs,
      oldDiscreteLogProbs: new Float32Array(0),
      advantages: new Float32Array([1, -2]),
      returns: { extrinsic: new Float32Array([1, 0]) },
      oldValues: { extrinsic: new Float32Array([0.4, 0.5]) },
    };
    const gradients = zerosLike(outputs);
    const loss = ppoLoss(outputs, batch, ActionSpec.createContinuous(1), ['extrinsic'], 0.2, 0.01, gradients);
    // Policy: sample 1 min(1.5, 1.2) = 1.2 (clipped); sample 2 min(-1.8, -1.8) = -1.8; -mean = 0.3.
    expect(loss.policyLoss).toBeCloseTo(0.3, 6);
    // Values: sample 1 moved 0.1 (inside): (1 - 0.5)^2 = 0.25; sample 2: max(1, (0 - 0.7)^2) = 1; mean 0.625.
    expect(loss.valueLoss).toBeCloseTo(0.625, 6);
    const entropy = 0.5 * Math.log(2 * Math.PI * Math.E * 0.25 + 1e-7);
    expect(loss.entropy).toBeCloseTo(entropy, 6);
    expect(loss.loss).toBeCloseTo(0.3 + 0.5 * 0.625 - 0.01 * entropy, 6);
    // d/d mean: sample 1 is clipped (0); sample 2: -1/2 * (r A = -1.8) * 2 (a - mean) / (2 std^2) = -0.5 * -1.8 * -1.2.
    expect(gradients.means[0]).toBe(0);
    expect(gradients.means[1]).toBeCloseTo(-1.08, 5);
    // d/d value: 0.5 * 2 (V - R) / 2 samples.
    expect(gradients.values[0][0]).toBeCloseTo(-0.25, 6);
    expect(gradients.values[0][1]).toBeCloseTo(0.5, 6);
  });

  it('matches a discrete minibatch worked out by hand, masks included', () => {
    // Branch of 3: logits (0, ln 3, 5) with the third action forbidden: probabilities (1/4, 3/4, 0).
    const outputs: HeadOutputs = {
      count: 1,
      means: new Float32Array(0),
      logStd: new Float32Array(0),
      logits: new Float32Array([0, Math.log(3), 5]),
      values: [new Float32Array([0])],
    };
    const batch: PpoMinibatch = {
      count: 1,
      observations: [],
      continuousActions: new Float32Array(0),
      discreteActions: new Int32Array([1]),
      actionMasks: new Float32Array([1, 1, 0]),
      oldContinuousLogProbs: new Float32Array(0),
      oldDiscreteLogProbs: new Float32Array([Math.log(0.75)]),
      advantages: new Float32Array([2]),
      returns: { extrinsic: new Float32Array([0]) },
      oldValues: { extrinsic: new Float32Array([0]) },
    };
    const gradients = zerosLike(outputs);
    const loss = ppoLoss(outputs, batch, ActionSpec.createDiscrete([3]), ['extrinsic'], 0.2, 0.5, gradients);
    expect(loss.policyLoss).toBeCloseTo(-2, 5); // ratio 1: -(1 x 2)
    const entropy = -(0.25 * Math.log(0.25) + 0.75 * Math.log(0.75));
    expect(loss.entropy).toBeCloseTo(entropy, 5);
    expect(loss.valueLoss).toBe(0);
    // d/d logit k = -(r A) (1[k = 1] - p_k) - beta p_k (g_k - sum_j g_j p_j), g_j = -(ln p_j + 1):
    // g = (0.386294, -0.712318), sum g p = -0.437665, so logit 1: -2 (0.25) - 0.5 (0.75 x -0.274653).
    expect(gradients.logits[1]).toBeCloseTo(-0.5 + 0.102995, 4);
    expect(gradients.logits[0]).toBeCloseTo(0.5 - 0.102995, 4);
    // The forbidden logit gets no gradient.
    expect(gradients.logits[2]).toBe(0);
  });
  it('leaves sequence padding (mask 0) out of every mean and gradient, as upstream masked_mean', () => {
    // Hybrid actions: one Gaussian dimension and a branch of 3; samples 2 and 4 are padding.
    const spec = new ActionSpec(1, [3]);
    const n = 5;
    const random = (k: number) => Math.sin(12.9898 * k) * 0.8;
    const full: HeadOutputs = {
      count: n,
      means: Float32Array.from({ length: n }, (_, i) => random(i + 1)),
      logStd: new Float32Array([-0.3]),
      logits: Float32Array.from({ length: 3 * n }, (_, k) => random(k + 20)),
      values: [Float32Array.from({ length: n }, (_, i) => random(i + 40))],
    };
    const batch: PpoMinibatch = {
      count: n,
      observations: [],
      continuousActions: Float32Array.from({ length: n }, (_, i) => random(i + 60)),
      discreteActions: Int32Array.from({ length: n }, (_, i) => i % 3),
      actionMasks: null,
      oldContinuousLogProbs: Float32Array.from({ length: n }, (_, i) => -1 + random(i + 80) * 0.2),
      oldDiscreteLogProbs: Float32Array.from({ length: n }, (_, i) => -1.1 + random(i + 90) * 0.2),
      advantages: Float32Array.from({ length: n }, (_, i) => random(i + 100) * 2),
      returns: { extrinsic: Float32Array.from({ length: n }, (_, i) => random(i + 120)) },
      oldValues: { extrinsic: Float32Array.from({ length: n }, (_, i) => random(i + 140)) },
      masks: new Float32Array([1, 1, 0, 1, 0]),
    };
    const kept = [0, 1, 3];
    const pick = (a: Float32Array, width = 1) => Float32Array.from(kept.flatMap((i) => Array.from(a.subarray(i * width, (i + 1) * width))));
    // The same loss on the three real samples alone, no masks.
    const logitsOfKept = new Float32Array(3 * kept.length);
    for (let k = 0; k < 3; k++) kept.forEach((i, j) => (logitsOfKept[k * kept.length + j] = full.logits[k * n + i]));
    const alone: HeadOutputs = { count: 3, means: pick(full.means), logStd: full.logStd, logits: logitsOfKept, values: [pick(full.values[0])] };
    const aloneBatch: PpoMinibatch = {
      ...batch,
      count: 3,
      continuousActions: pick(batch.continuousActions),
      discreteActions: Int32Array.from(kept, (i) => batch.discreteActions[i]),
      oldContinuousLogProbs: pick(batch.oldContinuousLogProbs),
      oldDiscreteLogProbs: pick(batch.oldDiscreteLogProbs),
      advantages: pick(batch.advantages),
      returns: { extrinsic: pick(batch.returns.extrinsic) },
      oldValues: { extrinsic: pick(batch.oldValues.extrinsic) },
      masks: undefined,
    };
    const gradients = zerosLike(full);
    const aloneGradients = zerosLike(alone);
    const masked = ppoLoss(full, batch, spec, ['extrinsic'], 0.2, 0.01, gradients);
    const expected = ppoLoss(alone, aloneBatch, spec, ['extrinsic'], 0.2, 0.01, aloneGradients);
    expect(masked.loss).toBeCloseTo(expected.loss, 6);
    expect(masked.policyLoss).toBeCloseTo(expected.policyLoss, 6);
    expect(masked.valueLoss).toBeCloseTo(expected.valueLoss, 6);
    expect(masked.entropy).toBeCloseTo(expected.entropy, 6);
    expect(Array.from(pick(gradients.means))).toEqual(Array.from(aloneGradients.means).map((v) => expect.closeTo(v, 6)));
    expect(gradients.means[2]).toBe(0);
    expect(gradients.values[0][4]).toBe(0);
    expect(gradients.logits[2 * n + 2]).toBe(0);
    expect(gradients.logStd[0]).toBeCloseTo(aloneGradients.logStd[0], 6);
    expect(gradients.logits[1 * n + 3]).toBeCloseTo(aloneGradients.logits[1 * 3 + 2], 6);
  });
});
