import {
  EPSILON,
  addCategoricalGradient,
  argmax,
  categoricalEntropy,
  categoricalLogProb,
  clipAction,
  gaussianEntropy,
  gaussianEntropyByLogStd,
  gaussianLogProb,
  gaussianLogProbByLogStd,
  gaussianLogProbByMean,
  maskedSoftmax,
  sampleCategorical,
} from '../../src/networks/distributions';
import { SeededRandom } from '../../src/common/random';

/** Central finite difference of f at x. */
function slope(f: (x: number) => number, x: number, h = 1e-6): number {
  return (f(x + h) - f(x - h)) / (2 * h);
}

describe('Gaussian', () => {
  const logStd = Math.log(0.7);

  it('log probability and entropy are the normal density and entropy', () => {
    const expected = -(0.3 * 0.3) / (2 * 0.49) - Math.log(0.7) - 0.5 * Math.log(2 * Math.PI);
    expect(gaussianLogProb(0.5, 0.2, logStd)).toBeCloseTo(expected, 6);
    expect(gaussianEntropy(logStd)).toBeCloseTo(0.5 * Math.log(2 * Math.PI * Math.E * 0.49), 6);
  });

  it('derivatives match finite differences', () => {
    expect(gaussianLogProbByMean(0.5, 0.2, logStd)).toBeCloseTo(slope((m) => gaussianLogProb(0.5, m, logStd), 0.2), 6);
    expect(gaussianLogProbByLogStd(0.5, 0.2, logStd)).toBeCloseTo(slope((s) => gaussianLogProb(0.5, 0.2, s), logStd), 6);
    expect(gaussianLogProbByLogStd(-2, 0.1, 0.4)).toBeCloseTo(slope((s) => gaussianLogProb(-2, 0.1, s), 0.4), 6);
    expect(gaussianEntropyByLogStd(logStd)).toBeCloseTo(slope(gaussianEntropy, logStd), 6);
  });

  it('clips actions as upstream: clamp to [-3, 3], divide by 3', () => {
    expect(clipAction(1.5)).toBe(0.5);
    expect(clipAction(4.5)).toBe(1);
    expect(clipAction(-6)).toBe(-1);
  });
});

describe('categorical with action masks', () => {
  const logits = [1, 2, 3];
  const probs = new Float64Array(3);

  it('forbidden actions get probability exactly 0; the others share the softmax', () => {
    maskedSoftmax(logits, [1, 0, 1], 3, probs);
    expect(probs[1]).toBe(0);
    expect(probs[0]).toBeCloseTo(Math.exp(1) / (Math.exp(1) + Math.exp(3)), 12);
    expect(probs[2]).toBeCloseTo(Math.exp(3) / (Math.exp(1) + Math.exp(3)), 12);
    maskedSoftmax(logits, null, 3, probs);
    const total = Math.exp(1) + Math.exp(2) + Math.exp(3);
    expect([...probs].map((p) => p.toFixed(12))).toEqual([1, 2, 3].map((z) => (Math.exp(z) / total).toFixed(12)));
  });

  it('never samples a forbidden action, and samples the others by their probability', () => {
    const p = new Float64Array(4);
    maskedSoftmax([0.5, 3, -1, 0.5], [1, 0, 1, 1], 4, p);
    const random = new SeededRandom(11);
    const counts = [0, 0, 0, 0];
    const draws = 20000;
    for (let i = 0; i < draws; i++) counts[sampleCategorical(p, 4, random.next())]++;
    expect(counts[1]).toBe(0);
    for (const k of [0, 2, 3]) expect(counts[k] / draws).toBeCloseTo(p[k], 1);
    // The greatest uniform value still lands on an allowed action.
    expect(sampleCategorical(p, 4, 1 - 1e-16)).toBe(3);
    expect(argmax(p, 4)).toBe(0);
  });

  it('log probability and entropy carry upstream epsilon', () => {
    const p = new Float64Array([0.25, 0, 0.75]);
    expect(categoricalLogProb(p, 2)).toBeCloseTo(Math.log(0.75 + EPSILON), 15);
    expect(categoricalLogProb(p, 1)).toBeCloseTo(Math.log(EPSILON), 12);
    expect(categoricalEntropy(p, 3)).toBeCloseTo(-(0.25 * Math.log(0.25 + EPSILON) + 0.75 * Math.log(0.75 + EPSILON)), 15);
  });

  it('the logit gradient matches finite differences and is 0 for forbidden actions', () => {
    const mask = [1, 0, 1, 1];
    const z = [0.3, 1.2, -0.7, 0.9];
    const objective = (values: number[]) => {
      const p = new Float64Array(4);
      maskedSoftmax(values, mask, 4, p);
      return -0.8 * categoricalLogProb(p, 2) + 0.05 * categoricalEntropy(p, 4);
    };
    const p = new Float64Array(4);
    maskedSoftmax(z, mask, 4, p);
    const gradient = new Float64Array(4);
    addCategoricalGradient(p, mask, 4, 2, -0.8, 0.05, gradient);
    for (let k = 0; k < 4; k++) {
      const numeric = slope((x) => objective(z.map((v, j) => (j === k ? x : v))), z[k]);
      expect(gradient[k]).toBeCloseTo(numeric, 6);
    }
    expect(gradient[1]).toBe(0);
  });
});
