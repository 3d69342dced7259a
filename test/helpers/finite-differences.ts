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

/**
 * The central difference of `loss` along `direction` (a unit vector over `values`, changed in
 * place and put back). Along a block's whole gradient it averages out the kinks (ReLU, LeakyReLU)
 * that lie within any single-entry step float32 can resolve: it then equals the gradient's norm.
 */
export function directionalDifference(values: Float32Array, direction: Float32Array, h: number, loss: () => number, changed: () => void = () => undefined): number {
  const original = values.slice();
  const at = (sign: number) => {
    values.forEach((v, j) => (values[j] = original[j] + sign * h * direction[j]));
    changed();
    return loss();
  };
  const up = at(1);
  const down = at(-1);
  values.set(original);
  changed();
  return (up - down) / (2 * h);
}
