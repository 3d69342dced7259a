/**
 * One of SAC's twin Q networks: upstream's ValueNetwork given the continuous actions as extra
 * inputs (sac/optimizer_torch.py PolicyValueNetwork, torch_entities/networks.py NetworkBody):
 * a NetworkBody of its own (its visual encoders, the vector observations normalized with the
 * policy's statistics, as upstream copies the policy's normalizer into the Q networks before an
 * update, then the actions, then the LinearEncoder), and a linear head with one output per
 * discrete action, or one, per reward signal.
 *
 * With network_settings.memory its body ends in an LSTM (upstream's ValueNetwork with memory), and
 * it runs over whole sequences of sequence_length rows, each from zero memories: upstream trains
 * its Q networks so (q_memories are zeros), as no Q memories are recorded while acting.
 *
 * Its parameters are one flat vector that Adam updates: the LinearEncoder's, the LSTM's and the
 * head's first, then each encoder's blocks (the layout its checkpoints have always had).
 *
 * The body and head run batch first, in plain loops when the network is small (upstream's
 * test networks of 16 units: about 100 times faster than tfjs's per-op cost allows) and with
 * tfjs otherwise (2 x 256 at batch 128: about 10 times faster than loops). The backward pass
 * gives dQ/da too: SAC's policy loss needs it at the actor's sampled action.
 *
 * Each pass is also a reading pass (tensor-io.ts), so that SAC's update runs it on WebGPU too.
 * With tfjs the LSTM runs feature-major, as the actor's does (its input projection read back for
 * the recurrence); on WebGPU a small network with memory runs with tfjs as well, since even the
 * plain-loop LSTM projects its input with a tfjs product, which reads back only within such a pass.
 * A pass runs in the caller's tf.tidy scope (or scoped()): encode(..., keep = true) keeps what the encoders'
 * backward needs until that scope ends, and one encoding serves both of SAC's passes (the stored
 * actions and the policy's sampled ones), as both read the same observations.
 */
import * as tf from '@tensorflow/tfjs';
import type { NetworkSettings } from '../config/settings';
import type { SeededRandom } from '../common/random';
import type { BehaviorSpec } from '../env/behavior-spec';
import { BodyInputLayout } from './encoders/body-input';
import { Dense, linearLayer } from './layers/dense';
import { ParameterAllocator, ParameterBlock, ParameterSource, countParameters, sizeOf } from './layers/layer';
import { Lstm } from './layers/lstm';
import { NetworkBody, createBodyEncoder } from './network-body';
import { ReadingPass, copyColumns, readsSynchronously, runPass } from './tensor-io';

export interface QNetworkSettings {
  readonly network: NetworkSettings;
  /** The continuous actions it takes after the observations. */
  readonly continuousActions: number;
  /** Outputs per sample: reward signals x (sum of branch sizes, or 1). */
  readonly outputs: number;
}

/** Above this many multiply-adds per sample, tfjs products beat plain loops (measured on wasm). */
export const TENSOR_WORK_PER_SAMPLE = 2048;

export class QNetwork {
  /** The LinearEncoder's and head's parameters, then the encoders' blocks. */
  readonly parameters: Float32Array;
  /** d loss / d parameters after backward(), same layout. */
  readonly gradient: Float32Array;
  readonly blocks: readonly ParameterBlock[];
  readonly body: NetworkBody;
  readonly head: Dense;
  /** The width of the body's input before the actions: vector values and encodings. */
  readonly encodedWidth: number;
  /** Whether its passes run with tfjs (else in plain loops). */
  readonly usesTensors: boolean;
  /** Rows per training sequence with memory (sequence_length); 1 without. */
  readonly sequenceLength: number;
  private readonly continuousActions: number;
  private version = 0;
  private passCount = 0;
  /** Whether the last forward() ran in plain loops, which its backward() follows. */
  private passInJavaScript = false;

  constructor(spec: BehaviorSpec, settings: QNetworkSettings, random: SeededRandom) {
    const { hidden_units: hidden, num_layers: numLayers } = settings.network;
    this.continuousActions = settings.continuousActions;
    const layout = new BodyInputLayout(spec, hidden);
    this.encodedWidth = layout.width;

    // The dense layers' blocks from 0, the encoders' after them.
    const inputs = layout.width + settings.continuousActions;
    const memory = settings.network.memory;
    this.sequenceLength = memory?.sequence_length ?? 1;
    const encodingSize = memory === null ? hidden : memory.memory_size / 2;
    let denseEnd = 0;
    let encoderEnd =
      countParameters((count) => createBodyEncoder(count, 'body.layers', layout, settings.network, inputs)) +
      (memory === null ? 0 : countParameters((count) => new Lstm(count, 'body.lstm', hidden, memory.memory_size))) +
      (encodingSize + 1) * settings.outputs;
    const blocks: ParameterBlock[] = [];
    const allocate: ParameterAllocator = (name, shape) => {
      const encoder = name.startsWith('body.encoders.');
      const block = { name, offset: encoder ? encoderEnd : denseEnd, shape: [...shape] };
      if (encoder) encoderEnd += sizeOf(shape);
      else denseEnd += sizeOf(shape);
      blocks.push(block);
      return block;
    };
    this.body = new NetworkBody(allocate, 'body', layout, settings.network, settings.continuousActions);
    this.head = linearLayer(allocate, 'head', this.body.outputSize, settings.outputs, { kind: 'xavierUniform', gain: 1 });
    this.blocks = blocks;
    this.parameters = new Float32Array(encoderEnd);
    this.gradient = new Float32Array(encoderEnd);
    // As the actor-critic's: the dense layers draw first, then the encoders.
    this.body.bodyEncoder.initialize(this.parameters, random);
    this.body.memory?.initialize(this.parameters, random);
    this.head.initialize(this.parameters, random);
    this.body.initializeEncoders(this.parameters, random);
    this.usesTensors = this.body.bodyEncoder.multiplyAdds + this.head.multiplyAdds > TENSOR_WORK_PER_SAMPLE;
  }

  /** Tells the network that `parameters` changed (its layers keep their weights as tensors). */
  parametersChanged(): void {
    this.version++;
  }

  /**
   * The body's input without the actions (count x encodedWidth): `vectorRows` (count x the vector
   * observations' width, normalized) with each image's encoding in its place; `vectorRows` itself
   * when there are no images. With `keep`, the encoders keep what backward() needs.
   */
  encode(observations: readonly Float32Array[], vectorRows: Float32Array, count: number, keep: boolean): Float32Array {
    return runPass(this.encodePass(observations, vectorRows, count, keep));
  }

  /** encode() as a reading pass (tensor-io.ts), for SAC's update on WebGPU. */
  encodePass(observations: readonly Float32Array[], vectorRows: Float32Array, count: number, keep: boolean): ReadingPass<Float32Array> {
    return this.body.encodeObservations(observations, vectorRows, count, this.source, keep);
  }

  /**
   * Q values (count x outputs) of encoded observations (from encode()) and their continuous
   * actions (count x actions). With memory, the rows are whole sequences, each from zero memories.
   */
  forward(encoded: Float32Array, actions: Float32Array, count: number): Float32Array {
    return runPass(this.forwardPass(encoded, actions, count));
  }

  /** forward() as a reading pass: with tfjs, the head's output is read back once. */
  *forwardPass(encoded: Float32Array, actions: Float32Array, count: number): ReadingPass<Float32Array> {
    if (count % this.sequenceLength !== 0) {
      throw new Error(`The Q network with memory takes whole sequences of ${this.sequenceLength} rows; got ${count} rows.`);
    }
    this.passCount = count;
    const C = this.continuousActions;
    let rows = encoded;
    if (C > 0) {
      const width = this.encodedWidth;
      rows = new Float32Array(count * (width + C));
      copyColumns(encoded, width, 0, rows, width + C, 0, width, count);
      copyColumns(actions, C, 0, rows, width + C, width, C, count);
    }
    const { bodyEncoder, memory } = this.body;
    const p = this.parameters;
    // The LSTM's input projection is a tfjs product, which WebGPU reads back only within a reading pass.
    this.passInJavaScript = !this.usesTensors && (memory === null || readsSynchronously());
    if (this.passInJavaScript) {
      return this.head.forwardInJavaScript(this.recur(bodyEncoder.forwardInJavaScript(rows, count, p, true), count), count, p, true);
    }
    const source = this.source;
    let encoding = bodyEncoder.forward(tf.tensor2d(rows, [count, this.body.inputWidth]), source, true) as tf.Tensor2D;
    if (memory !== null) {
      // Each sequence from zero memories; the LSTM runs feature-major.
      const memories = new Float32Array((count / this.sequenceLength) * memory.memorySize);
      encoding = tf.transpose(yield* this.body.forwardMemoryColumns(tf.transpose(encoding), memories, this.sequenceLength, source, true));
    }
    return yield this.head.forward(encoding, source, true);
  }

  /** The LSTM over the LinearEncoder's rows (count x hidden) in JavaScript, keeping its pass; the rows themselves without memory. */
  private recur(encoding: Float32Array, count: number): Float32Array {
    const memory = this.body.memory;
    if (memory === null) return encoding;
    const sequences = count / this.sequenceLength;
    return memory.forward(encoding, new Float32Array(sequences * memory.memorySize), sequences, this.sequenceLength, this.parameters, true).output;
  }

  /** recur()'s backward: the gradient of the LinearEncoder's output from that of the LSTM's. */
  private recurBackward(outputGradient: Float32Array): Float32Array {
    const memory = this.body.memory;
    if (memory === null) return outputGradient;
    return memory.backward(outputGradient, null, this.parameters, this.gradient, true).input!;
  }

  /**
   * Backpropagates d loss / d outputs through the last forward(): writes the dense layers'
   * parameter gradient, and with `throughEncoders` the encoders' too (their encode() must have
   * kept its pass, in the same tf.tidy scope); returns d loss / d actions (count x actions).
   */
  backward(outputGradient: Float32Array, throughEncoders: boolean): Float32Array {
    return runPass(this.backwardPass(outputGradient, throughEncoders));
  }

  /** backward() as a reading pass: with tfjs, the input gradient is read back once (twice with memory). */
  *backwardPass(outputGradient: Float32Array, throughEncoders: boolean): ReadingPass<Float32Array> {
    const count = this.passCount;
    const width = this.body.inputWidth;
    const { bodyEncoder, encoders } = this.body;
    const source = this.source;
    let inputGradient: Float32Array;
    // With tfjs, the encoders take the input gradient as it is, without a round trip through JavaScript.
    let inputGradientTensor: tf.Tensor2D | null = null;
    if (this.passInJavaScript) {
      const encodingGradient = this.recurBackward(this.head.backwardInJavaScript(outputGradient, this.parameters, this.gradient, true)!);
      inputGradient = bodyEncoder.backwardInJavaScript(encodingGradient, this.parameters, this.gradient, true)!;
    } else {
      let encodingGradient = this.head.backward(tf.tensor2d(outputGradient, [count, this.head.outputs]), source, true)! as tf.Tensor2D;
      if (this.body.memory !== null) encodingGradient = tf.transpose(yield* this.body.backwardMemoryColumns(tf.transpose(encodingGradient), source));
      inputGradientTensor = bodyEncoder.backward(encodingGradient, source, true) as tf.Tensor2D;
      inputGradient = yield inputGradientTensor;
    }
    if (throughEncoders && this.body.hasEncoders) {
      this.body.backwardEncoders(inputGradientTensor ?? tf.tensor2d(inputGradient, [count, width]), 'rows', source);
    }
    const C = this.continuousActions;
    const actionGradient = new Float32Array(count * C);
    copyColumns(inputGradient, width, this.encodedWidth, actionGradient, C, 0, C, count);
    return actionGradient;
  }

  private get source(): ParameterSource {
    return { parameters: this.parameters, gradient: this.gradient, version: this.version };
  }
}
