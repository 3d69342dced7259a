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
 * Copies a float32 tensor's values into `target` from `offset`. On the wasm backend this reads
 * the heap directly (dataSync would allocate a copy first); elsewhere dataSync is already cheap.
 */
export function copyTensorInto(tensor: tf.Tensor, target: Float32Array, offset = 0): void {
  const backend = tf.backend();
  // A heap view is only valid until the next allocation in the heap: it is used at once.
  const values = hasHeapViews(backend) ? backend.typedArrayFromHeap(tensor) : (tensor.dataSync() as Float32Array);
  target.set(values, offset);
}

/** A gradient copy waiting for settleGradients(). */
interface PendingWrite {
  readonly values: tf.Tensor1D;
  readonly target: Float32Array;
  readonly offset: number;
}

const pendingWrites: PendingWrite[] = [];

/**
 * Copies a gradient tensor into `target` from `offset`: at once where the backend reads
 * synchronously; on WebGPU (which reads only asynchronously in Node) at settleGradients(), all of
 * a pass's gradients in one read, so that they leave the GPU once a pass rather than once a block.
 */
export function writeGradient(tensor: tf.Tensor, target: Float32Array, offset = 0): void {
  if (tf.getBackend() !== 'webgpu') {
    copyTensorInto(tensor, target, offset);
    return;
  }
  pendingWrites.push({ values: tf.keep(tf.reshape(tensor, [-1])), target, offset });
}

/** Completes the gradient copies writeGradient() left waiting (none off WebGPU). */
export async function settleGradients(): Promise<void> {
  const writes = pendingWrites.splice(0);
  if (writes.length === 0) return;
  const joined = tf.concat(writes.map((write) => write.values));
  const values = (await joined.data()) as Float32Array;
  let start = 0;
  for (const { values: tensor, target, offset } of writes) {
    target.set(values.subarray(start, start + tensor.size), offset);
    start += tensor.size;
  }
  tf.dispose([joined, ...writes.map((write) => write.values)]);
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
