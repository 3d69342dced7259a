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
 * A float32 tensor's values, to be used at once. On the wasm backend this is a view of its heap
 * (dataSync would allocate a copy first), valid until the next allocation there; elsewhere
 * dataSync is already cheap. The webgpu backend cannot read synchronously in Node: a pass that
 * reads mid-way runs there as a ReadingPass.
 */
export function tensorView(tensor: tf.Tensor): Float32Array {
  const backend = tf.backend();
  if (hasHeapViews(backend)) return backend.typedArrayFromHeap(tensor);
  if (!readsSynchronously()) {
    throw new Error('This pass reads the GPU synchronously mid-way, which the webgpu backend cannot do in Node: it does not run on WebGPU yet.');
  }
  return tensor.dataSync() as Float32Array;
}

/**
 * Whether the active backend reads tensors back synchronously (wasm, cpu). The webgpu backend
 * does not in Node: a module either reads through a ReadingPass there or keeps the work on it.
 */
export function readsSynchronously(): boolean {
  return tf.getBackend() !== 'webgpu';
}

/** Copies a float32 tensor's values into `target` from `offset`. */
export function copyTensorInto(tensor: tf.Tensor, target: Float32Array, offset = 0): void {
  target.set(tensorView(tensor), offset);
}

/** What a reading pass yields to wait until its gradient writes (writeGradient) are in place. */
const SETTLE_GRADIENTS = Symbol('settle gradients');

/**
 * A pass that reads values back mid-way, written once for both kinds of backend: it yields each
 * tensor whose values it needs and is resumed with a copy of them (or yields SETTLE_GRADIENTS
 * through gradientsSettled()). runPass reads at once (wasm, cpu); runPassAsync awaits each read
 * (WebGPU, which reads only asynchronously in Node).
 */
export type ReadingPass<T> = Generator<tf.Tensor | typeof SETTLE_GRADIENTS, T, Float32Array>;

/** Within a reading pass: waits until every gradient it wrote is in its array. */
export function* gradientsSettled(): ReadingPass<void> {
  yield SETTLE_GRADIENTS;
}

/** Runs a reading pass, each read at once. */
export function runPass<T>(pass: ReadingPass<T>): T {
  let step = pass.next();
  // Gradient writes are already in place on these backends.
  while (!step.done) step = pass.next(step.value === SETTLE_GRADIENTS ? new Float32Array(0) : tensorValues(step.value));
  return step.value;
}

/** Runs a reading pass, each read awaited. */
export async function runPassAsync<T>(pass: ReadingPass<T>): Promise<T> {
  let step = pass.next();
  while (!step.done) {
    if (step.value === SETTLE_GRADIENTS) {
      await settleGradients();
      step = pass.next(new Float32Array(0));
    } else {
      step = pass.next(Float32Array.from((await step.value.data()) as Float32Array));
    }
  }
  return step.value;
}

/** Within a reading pass: the values of several tensors in one read (each a view of one array). */
export function* readTogether(tensors: readonly tf.Tensor[]): ReadingPass<Float32Array[]> {
  const values = yield tf.concat(tensors.map((tensor) => tf.reshape(tensor, [-1])));
  let start = 0;
  return tensors.map((tensor) => values.subarray(start, (start += tensor.size)));
}

/** A reading pass of work that reads synchronously (it runs on the backends that can). */
export function* passReadingNothing<T>(compute: () => T): ReadingPass<T> {
  return compute();
}

/**
 * tf.tidy for work whose result holds no tensor (typed arrays, numbers): every tensor made in
 * `compute` is freed. tf.tidy itself walks its result key by key looking for tensors to keep,
 * which for a typed array means every element, each put in a Set: a third of a second for the
 * values of one 256-step trajectory at Sorter's sizes.
 */
export function tidyValues<T>(compute: () => T): T {
  tf.engine().startScope();
  try {
    return compute();
  } finally {
    tf.engine().endScope();
  }
}

/** A reading pass whose tensors are freed when it ends (tf.tidy, which cannot span an await). */
export function* scoped<T>(pass: ReadingPass<T>): ReadingPass<T> {
  tf.engine().startScope();
  try {
    return yield* pass;
  } finally {
    tf.engine().endScope();
  }
}

/** A gradient copy waiting for settleGradients(), transposed on the way when `transposedFrom` gives its rows and columns. */
interface PendingWrite {
  readonly values: tf.Tensor1D;
  readonly target: Float32Array;
  readonly offset: number;
  readonly transposedFrom: readonly [number, number] | null;
}

const pendingWrites: PendingWrite[] = [];

/**
 * Copies a gradient tensor into `target` from `offset` (with `transpose`, a matrix's transpose):
 * at once where the backend reads synchronously; on WebGPU at settleGradients(), all of a pass's
 * gradients in one read, so that they leave the GPU once a pass rather than once a block.
 */
export function writeGradient(tensor: tf.Tensor, target: Float32Array, offset = 0, transpose = false): void {
  const transposedFrom = transpose ? ([tensor.shape[0], tensor.shape[1]!] as const) : null;
  if (!readsSynchronously()) {
    pendingWrites.push({ values: tf.keep(tf.reshape(tensor, [-1])), target, offset, transposedFrom });
  } else {
    writeValues(tensorView(tensor), target, offset, transposedFrom);
  }
}

/** Completes the gradient copies writeGradient() left waiting (none off WebGPU). */
export async function settleGradients(): Promise<void> {
  const writes = pendingWrites.splice(0);
  if (writes.length === 0) return;
  const joined = tf.concat(writes.map((write) => write.values));
  const values = (await joined.data()) as Float32Array;
  let start = 0;
  for (const { values: tensor, target, offset, transposedFrom } of writes) {
    writeValues(values.subarray(start, start + tensor.size), target, offset, transposedFrom);
    start += tensor.size;
  }
  tf.dispose([joined, ...writes.map((write) => write.values)]);
}

/**
 * The gradient vector of `target` as one GPU tensor (kept: the caller disposes it), for an Adam
 * step on the GPU (device-parameters.ts): the blocks writeGradient() left waiting for `target`
 * stay there, and the stretches between them, which the pass wrote in JavaScript (a head's bias,
 * log_sigma), go up from `target`.
 */
export function gatherGradients(target: Float32Array): tf.Tensor1D {
  const writes = pendingWrites.filter((write) => write.target === target).sort((a, b) => a.offset - b.offset);
  pendingWrites.splice(0, pendingWrites.length, ...pendingWrites.filter((write) => write.target !== target));
  const gradient = tf.tidy(() => {
    const pieces: tf.Tensor1D[] = [];
    let next = 0;
    for (const { values, offset, transposedFrom } of writes) {
      if (offset > next) pieces.push(tf.tensor1d(target.subarray(next, offset)));
      pieces.push(transposedFrom === null ? values : (tf.reshape(tf.transpose(tf.reshape(values, [...transposedFrom])), [-1]) as tf.Tensor1D));
      next = offset + values.size;
    }
    if (next < target.length) pieces.push(tf.tensor1d(target.subarray(next)));
    return pieces.length === 1 ? tf.clone(pieces[0]) : tf.concat(pieces);
  });
  tf.dispose(writes.map((write) => write.values));
  return gradient;
}

/** Drops the gradient copies still waiting (a pass that stopped before its gradient was used). */
export function discardPendingGradients(): void {
  tf.dispose(pendingWrites.splice(0).map((write) => write.values));
}

function writeValues(values: Float32Array, target: Float32Array, offset: number, transposedFrom: readonly [number, number] | null): void {
  if (transposedFrom === null) target.set(values, offset);
  else transposeInto(values, transposedFrom[0], transposedFrom[1], target, offset);
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
