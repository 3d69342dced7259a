/**
 * The central difference (f(x + h) - f(x - h)) / 2h of `loss` in entry `index` of `values`,
 * changing the entry in place and putting it back; `changed` tells the owner after each change
 * (a model re-uploads its weights).
 */
export function centralDifference(values: Float32Array, index: number, h: number, loss: () => number, changed: () => void = () => undefined): number {
  const original = values[index];
  values[index] = original + h;
  changed();
  const up = loss();
  values[index] = original - h;
  changed();
  const down = loss();
  values[index] = original;
  changed();
  return (up - down) / (2 * h);
}
