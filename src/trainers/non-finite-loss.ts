/** The loss came out NaN or infinite; the weights were left as they were before the minibatch. */
export class NonFiniteLossError extends Error {
  override name = 'NonFiniteLossError';
}
