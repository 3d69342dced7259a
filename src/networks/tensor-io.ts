/**
 * Moving matrices between JavaScript typed arrays and tfjs tensors, cheaply. The models keep
 * their parameters in typed arrays and use tfjs for the large matrix products; values cross
 * over a few times per pass, so these copies must not allocate.
 */
import * as tf from '@tensorflow/tfjs';

/** The wasm backend's view of a tensor's bytes in its heap (public on its backend class). */
interface HeapBackend {
  typedArrayFromHeap(tensor: tf.Tensor): Float32Array;
}

function hasHeapViews(backend: unknown): backend is HeapBackend {
  return typeof (backend as Partial<HeapBackend>).typedArrayFromHeap === 'function';
}

/**
 * A float32 tensor's values, to read at once: on the wasm backend a view of its heap, valid only
 * until the backend next allocates (dataSync would copy first); elsewhere dataSync's array.
 */
export function tensorView(tensor: tf.Tensor): Float32Array {
  const backend = tf.backend();
  return hasHeapViews(backend) ? backend.typedArrayFromHeap(tensor) : (tensor.dataSync() as Float32Array);
}

/** Copies a float32 tensor's values into `target` from `offset`. */
export function copyTensorInto(tensor: tf.Tensor, target: Float32Array, offset = 0): void {
  target.set(tensorView(tensor), offset);
}

/** A float32 tensor's values as a new array (in the tensor's row-major order). */
export function tensorValues(tensor: tf.Tensor): Float32Array {
  const values = new Float32Array(tensor.size);
  copyTensorInto(tensor, values);
  return values;
}

/** Writes the transpose of a rows x cols row-major matrix into `target` (cols x rows) at `offset`. */
export function transposeInto(
  source: ArrayLike<number>,
  rows: number,
  cols: number,
  target: Float32Array | Float64Array,
  offset = 0,
): void {
  for (let r = 0; r < rows; r++) {
    const rowStart = r * cols;
    for (let c = 0; c < cols; c++) target[offset + c * rows + r] = source[rowStart + c];
  }
}

/**
 * Copies `columns` columns of each of `rows` rows from `source` (at `from`) into `target` (at
 * `to`); in plain loops, which beat a subarray per row for the few values of a vector row.
 */
export function copyColumns(
  source: Float32Array,
  sourceWidth: number,
  from: number,
  target: Float32Array,
  targetWidth: number,
  to: number,
  columns: number,
  rows: number,
): void {
  for (let i = 0; i < rows; i++) {
    const start = i * sourceWidth + from;
    const end = i * targetWidth + to;
    for (let f = 0; f < columns; f++) target[end + f] = source[start + f];
  }
}
