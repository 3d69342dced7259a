/**
 * A network's parameters and its Adam's moments kept on the GPU for the length of one update
 * (WebGPU): uploaded once when the update starts, stepped there minibatch after minibatch, read
 * back once when it ends. Between minibatches no weight crosses: the layers slice their weights
 * from the GPU vector (ParameterSource.device), the gradient blocks stay where the backward pass
 * computed them (tensor-io.ts's gatherGradients), and Adam steps on tensors (adam.ts). The model's
 * and Adam's arrays are stale meanwhile; the acting thread and checkpoints read them after the
 * update, so they see each update's result once.
 *
 * Off WebGPU (wasm, cpu) the typed arrays are already where the update runs, and Adam's loop in
 * JavaScript beats a dozen tensor ops over the whole vector: nothing of this runs there.
 */
import * as tf from '@tensorflow/tfjs';
import { Adam, AdamTensors } from './adam';
import { ReadingPass, discardPendingGradients, gatherGradients } from './tensor-io';

/** What a model offers to run its passes on GPU parameters. */
export interface DeviceResidentModel {
  readonly parameters: Float32Array;
  /** Whether all its passes can take their weights from the GPU vector; when not, its updates keep them in JavaScript. */
  readonly parametersCanStayOnDevice: boolean;
  /** Makes its passes take their weights from `parameters` on the GPU; null: from its array again. */
  useDeviceParameters(parameters: tf.Tensor1D | null): void;
}

/** Whether updates on the running backend keep the parameters on the GPU (WebGPU's). */
function parametersStayOnDevice(): boolean {
  return tf.getBackend() === 'webgpu';
}

export class DeviceParameters {
  private state: AdamTensors;

  /** Uploads the model's parameters and Adam's moments (three copies) and points the model at them. */
  constructor(
    private readonly model: DeviceResidentModel,
    private readonly adam: Adam,
  ) {
    this.state = {
      parameters: tf.tensor1d(model.parameters),
      firstMoment: tf.tensor1d(adam.firstMoment),
      secondMoment: tf.tensor1d(adam.secondMoment),
    };
    model.useDeviceParameters(this.state.parameters);
  }

  /**
   * One Adam step from a pass's gradient: its blocks waiting on the GPU, the rest written in
   * `gradient` (see gatherGradients).
   */
  step(gradient: Float32Array, learningRate: number): void {
    const onDevice = gatherGradients(gradient);
    const next = this.adam.stepTensors(this.state, onDevice, learningRate);
    tf.dispose([onDevice, this.state.parameters, this.state.firstMoment, this.state.secondMoment]);
    this.state = next;
    this.model.useDeviceParameters(next.parameters);
  }

  /** Copies the parameters and moments back into the model's and Adam's arrays, in one read. */
  *readBack(): ReadingPass<void> {
    const { parameters, firstMoment, secondMoment } = this.state;
    const joined = tf.concat([parameters, firstMoment, secondMoment]);
    let values: Float32Array;
    try {
      values = yield joined;
    } finally {
      joined.dispose();
    }
    const size = parameters.size;
    this.model.parameters.set(values.subarray(0, size));
    this.adam.firstMoment.set(values.subarray(size, 2 * size));
    this.adam.secondMoment.set(values.subarray(2 * size));
  }

  /** Frees the GPU copies; the model reads its array again. */
  dispose(): void {
    this.model.useDeviceParameters(null);
    discardPendingGradients();
    tf.dispose([this.state.parameters, this.state.firstMoment, this.state.secondMoment]);
  }
}

/**
 * Runs a whole update's pass with `model`'s parameters and `adam`'s moments on the GPU when the
 * backend is WebGPU (`pass` is handed them, to step Adam there), else as it is (handed null).
 * The arrays get the result once, at the end; an update that fails leaves them as they were.
 */
export function* updatingOnDevice<T>(model: DeviceResidentModel, adam: Adam, pass: (device: DeviceParameters | null) => ReadingPass<T>): ReadingPass<T> {
  if (!parametersStayOnDevice() || !model.parametersCanStayOnDevice) return yield* pass(null);
  const startStep = adam.step;
  const device = new DeviceParameters(model, adam);
  let completed = false;
  try {
    const result = yield* pass(device);
    yield* device.readBack();
    completed = true;
    return result;
  } finally {
    if (!completed) adam.step = startStep;
    device.dispose();
  }
}
