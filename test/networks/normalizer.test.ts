import { RunningNormalizer } from '../../src/networks/normalizer';

describe('RunningNormalizer', () => {
  it('starts as upstream: one step, mean 0, variance 1', () => {
    const normalizer = new RunningNormalizer(2);
    expect(normalizer.steps).toBe(1);
    expect([...normalizer.mean]).toEqual([0, 0]);
    expect([...normalizer.variance]).toEqual([1, 1]);
    expect(normalizer.normalize(0.5, 0)).toBe(0.5);
  });

  it('updates mean and variance with upstream formula (values worked out by hand)', () => {
    const normalizer = new RunningNormalizer(2);
    // Two observations: (1, 2) and (3, 6). Steps 1 -> 3.
    normalizer.update(new Float32Array([1, 2, 3, 6]), 2);
    // mean += sum(x - mean) / steps: 4/3 and 8/3.
    // variance += sum((x - new mean) (x - old mean)): 1 + (-1/3 * 1 + 5/3 * 3) = 17/3, 1 + (-2/3 * 2 + 10/3 * 6) = 59/3.
    expect(normalizer.steps).toBe(3);
    expect(normalizer.mean[0]).toBeCloseTo(4 / 3, 12);
    expect(normalizer.mean[1]).toBeCloseTo(8 / 3, 12);
    expect(normalizer.variance[0]).toBeCloseTo(17 / 3, 12);
    expect(normalizer.variance[1]).toBeCloseTo(59 / 3, 12);
    // (x - mean) / sqrt(variance / steps): (2 - 4/3) / sqrt(17/9) = 2 / sqrt(17).
    expect(normalizer.normalize(2, 0)).toBeCloseTo(2 / Math.sqrt(17), 12);

    // One more observation, (0, 0): mean 4/3 + (0 - 4/3) / 4 = 1; variance 17/3 + (0 - 1)(0 - 4/3) = 7.
    normalizer.update(new Float32Array([0, 0]), 1);
    expect(normalizer.steps).toBe(4);
    expect(normalizer.mean[0]).toBeCloseTo(1, 12);
    expect(normalizer.variance[0]).toBeCloseTo(7, 12);
  });

  it('clips normalized values to [-5, 5]', () => {
    const normalizer = new RunningNormalizer(1);
    normalizer.update(new Float32Array([1, -1, 1, -1]), 4);
    expect(normalizer.normalize(100, 0)).toBe(5);
    expect(normalizer.normalize(-100, 0)).toBe(-5);
  });

  it('ignores an empty batch and copies another normalizer', () => {
    const normalizer = new RunningNormalizer(1);
    normalizer.update(new Float32Array(0), 0);
    expect(normalizer.steps).toBe(1);
    const other = new RunningNormalizer(1);
    other.update(new Float32Array([4, 8]), 2);
    normalizer.copyFrom(other);
    expect([normalizer.steps, normalizer.mean[0], normalizer.variance[0]]).toEqual([other.steps, other.mean[0], other.variance[0]]);
    expect(() => normalizer.copyFrom(new RunningNormalizer(3))).toThrow('3 features into one of 1');
  });

  it('addedSince() and merge(): observations seen on two copies combine as if one had seen them all, in any order', () => {
    const batch = (seed: number, count: number) => Float32Array.from({ length: count * 2 }, (_, i) => Math.sin(seed * 7.1 + i * 1.3) * (3 + seed));
    // One copy sees X then Y; another, from the state after X, sees Z: Y is carried over to it.
    const worker = new RunningNormalizer(2);
    worker.update(batch(1, 5), 5);
    const shared = worker.state();
    worker.update(batch(2, 7), 7);
    const main = new RunningNormalizer(2);
    main.copyFrom(shared);
    main.update(batch(3, 4), 4);
    main.merge(worker.addedSince(shared));

    const alone = new RunningNormalizer(2);
    for (const [seed, count] of [[1, 5], [3, 4], [2, 7]]) alone.update(batch(seed, count), count);
    expect(main.steps).toBe(17);
    for (let f = 0; f < 2; f++) {
      expect(main.mean[f]).toBeCloseTo(alone.mean[f], 10);
      expect(main.variance[f]).toBeCloseTo(alone.variance[f], 9);
    }
    // Nothing added merges as nothing.
    const before = main.state();
    main.merge(main.addedSince(main.state()));
    expect(main.state()).toEqual(before);
  });
});
