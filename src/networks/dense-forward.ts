/**
 * A dense layer's forward pass in plain JavaScript, for batches too small for tfjs: a tfjs pass
 * costs about 0.1 ms of fixed overhead (tensor bookkeeping, kernel dispatch), which is most of
 * what acting for a handful of agents costs, while the arithmetic itself takes microseconds.
 */

/**
 * output (count x outputs, row-major) = input (count x inputs) W^T + b, with W (outputs x inputs,
 * row-major, as torch stores it) and b read from `parameters` at the given offsets; then Swish
 * (x * sigmoid(x)) when `swish` is set. Sums are taken in double precision.
 */
export function denseForward(
  input: Float32Array,
  count: number,
  inputs: number,
  parameters: Float32Array,
  weightOffset: number,
  biasOffset: number,
  outputs: number,
  swish: boolean,
  output: Float32Array,
): void {
  for (let i = 0; i < count; i++) {
    const row = i * inputs;
    for (let o = 0; o < outputs; o++) {
      const weights = weightOffset + o * inputs;
      let sum = parameters[biasOffset + o];
      for (let k = 0; k < inputs; k++) sum += parameters[weights + k] * input[row + k];
      output[i * outputs + o] = swish ? sum / (1 + Math.exp(-sum)) : sum;
    }
  }
}
