/**
 * Two arrays agree when their largest difference is within `tolerance` of the expected array's
 * largest magnitude (plus 1e-5): a test of whole gradients, where small entries carry float noise
 * relative to the big ones. The error names the array, the difference and the scale.
 */
export function expectCloseToScale(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string, tolerance = 1e-4): void {
  expect(actual.length).toBe(expected.length);
  let worst = 0;
  let scale = 1e-6;
  for (let i = 0; i < expected.length; i++) {
    worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
    scale = Math.max(scale, Math.abs(expected[i]));
  }
  if (worst > tolerance * scale + 1e-5) throw new Error(`${what}: differs by ${worst} (largest value ${scale})`);
}
