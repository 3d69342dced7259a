/**
 * A network's parameters and its Adams' moments kept on the GPU for the length of one update
 * (WebGPU): uploaded once when the update starts, stepped there minibatch after minibatch, read
 * back once when it ends. Between minibatches no weight crosses: the layers slice their weights
 * from the GPU vector (ParameterSource.device), the gradient blocks stay where the backward pass
 * computed them (tensor-io.ts's gatherGradients), and Adam steps on tensors (adam.ts). The model's
 * and the Adams' arrays are stale meanwhile; the acting thread and checkpoints read them after the
 * update, so they see each update's result once.
 *
 * One parameter vector may be stepped by several Adams within an update (PPO's, then behavioral
 * cloning's on the same actor): each Adam's moments go up at its first step and come back with
 * the parameters, so the GPU vector stays the one copy every step reads.
 *
 * Off WebGPU (wasm, cpu) the typed arrays are already where the update runs, and Adam's loop in
 * JavaScript beats a dozen tensor ops over the whole vector: nothing of this runs there.
 */
import * as tf from '@tensorflow/tfjs';
import { Adam } from './adam';
import { ReadingPass, discardPendingGradients, gatherGradients } from './tensor-io';

/** What a model offers to run its passes on GPU parameters. */
export interface DeviceResidentModel {
  readonly parameters: Float32Array;
  /** Makes its passes take their weights from `parameters` on the GPU; null: from its array again. */
  useDeviceParameters(parameters: tf.Tensor1D | null): void;
}

/** One Adam's moments on the GPU, and its step count when the update began (restored if the update fails). */
interface DeviceMoments {
  firstMoment: tf.Tensor1D;
  secondMoment: tf.Tensor1D;
  readonly startStep: number;
}

/** Whether updates on the running backend keep the parameters on the GPU (WebGPU's). */
function parametersStayOnDevice(): boolean {
  return tf.getBackend() === 'webgpu';
}

export class DeviceParameters {
  private parameters: tf.Tensor1D;
  private readonly moments = new Map<Adam, DeviceMoments>();

  /** Uploads the model's parameters and points the model at them; `adam`'s moments go up too. */
  constructor(
    private readonly model: DeviceResidentModel,
    adam: Adam,
  ) {
    this.parameters = tf.tensor1d(model.parameters);
    this.momentsOf(adam);
    model.useDeviceParameters(this.parameters);
  }

  /**
   * One step of `adam` from a pass's gradient: its blocks waiting on the GPU, the rest written in
   * `gradient` (see gatherGradients). An Adam not seen before in this update brings its moments up first.
   */
  step(adam: Adam, gradient: Float32Array, learningRate: number): void {
    const moments = this.momentsOf(adam);
    const onDevice = gatherGradients(gradient);
    const next = adam.stepTensors({ parameters: this.parameters, ...moments }, onDevice, learningRate);
    tf.dispose([onDevice, this.parameters, moments.firstMoment, moments.secondMoment]);
    this.parameters = next.parameters;
    moments.firstMoment = next.firstMoment;
    moments.secondMoment = next.secondMoment;
    this.model.useDeviceParameters(next.parameters);
  }

  /** Copies the parameters and every Adam's moments back into their arrays, in one read. */
  *readBack(): ReadingPass<void> {
    const adams = [...this.moments];
    const joined = tf.concat([this.parameters, ...adams.flatMap(([, moments]) => [moments.firstMoment, moments.secondMoment])]);
    let values: Float32Array;
    try {
      values = yield joined;
    } finally {
      joined.dispose();
    }
    const size = this.parameters.size;
    this.model.parameters.set(values.subarray(0, size));
    adams.forEach(([adam], a) => {
      const start = (1 + 2 * a) * size;
      adam.firstMoment.set(values.subarray(start, start + size));
      adam.secondMoment.set(values.subarray(start + size, start + 2 * size));
    });
  }

  /** Puts every Adam's step count back where the update found it (its steps were not kept). */
  restoreSteps(): void {
    for (const [adam, { startStep }] of this.moments) adam.step = startStep;
  }

  /** Frees the GPU copies; the model reads its array again. */
  dispose(): void {
    this.model.useDeviceParameters(null);
    discardPendingGradients();
    tf.dispose([this.parameters, ...[...this.moments.values()].flatMap((m) => [m.firstMoment, m.secondMoment])]);
    this.moments.clear();
  }

  private momentsOf(adam: Adam): DeviceMoments {
    if (adam.size !== this.model.parameters.length) {
      throw new Error(`An Adam of ${adam.size} values cannot step a parameter vector of ${this.model.parameters.length}.`);
    }
    let moments = this.moments.get(adam);
    if (moments === undefined) {
      moments = { firstMoment: tf.tensor1d(adam.firstMoment), secondMoment: tf.tensor1d(adam.secondMoment), startStep: adam.step };
      this.moments.set(adam, moments);
    }
    return moments;
  }
}

/**
 * Runs a whole update's pass with `model`'s parameters and `adam`'s moments on the GPU when the
 * backend is WebGPU (`pass` is handed them, to step Adam there), else as it is (handed null).
 * The arrays get the result once, at the end; an update that fails leaves them as they were.
 */
export function* updatingOnDevice<T>(model: DeviceResidentModel, adam: Adam, pass: (device: DeviceParameters | null) => ReadingPass<T>): ReadingPass<T> {
  if (!parametersStayOnDevice()) return yield* pass(null);
  const device = new DeviceParameters(model, adam);
  let completed = false;
  try {
    const result = yield* pass(device);
    yield* device.readBack();
    completed = true;
    return result;
  } finally {
    if (!completed) device.restoreSteps();
    device.dispose();
  }
}

/** One step of `adam` on `parameters`: on the GPU when an update holds them there (`device`), else on the arrays. */
export function adamStep(device: DeviceParameters | null, adam: Adam, parameters: Float32Array, gradient: Float32Array, learningRate: number): void {
  if (device !== null) device.step(adam, gradient, learningRate);
  else adam.apply(parameters, gradient, learningRate);
}
