import { decayedValue } from '../../src/networks/schedule';

describe('decayedValue', () => {
  it('linear: from the initial value at step 0 to the minimum at max steps, then stays', () => {
    expect(decayedValue('linear', 3e-4, 1e-10, 1000, 0)).toBe(3e-4);
    expect(decayedValue('linear', 3e-4, 1e-10, 1000, 250)).toBeCloseTo((3e-4 - 1e-10) * 0.75 + 1e-10, 15);
    expect(decayedValue('linear', 0.2, 0.1, 1000, 500)).toBeCloseTo(0.15, 15);
    expect(decayedValue('linear', 0.2, 0.1, 1000, 1000)).toBeCloseTo(0.1, 15);
    expect(decayedValue('linear', 0.2, 0.1, 1000, 5000)).toBeCloseTo(0.1, 15);
  });

  it('constant: the initial value at every step', () => {
    expect(decayedValue('constant', 5e-3, 1e-5, 1000, 0)).toBe(5e-3);
    expect(decayedValue('constant', 5e-3, 1e-5, 1000, 5000)).toBe(5e-3);
  });
});
