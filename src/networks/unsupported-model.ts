/** A behavior a model cannot be built for, with the reason and the setting to change. */
export class UnsupportedModelError extends Error {
  override name = 'UnsupportedModelError';
}
