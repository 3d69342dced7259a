/**
 * Upstream's NetworkBody (torch_entities/networks.py): its observations encoded by an
 * ObservationEncoder (encoders/observation-encoder.ts: images, vector observations normalized
 * beforehand, the variable-length observations' attention), then the actions the network takes
 * (SAC's Q networks), then the body's
 * encoder: the LinearEncoder, or, when the behavior has goal signals and
 * network_settings.goal_conditioning_type is hyper, upstream's ConditionalEncoder (its last layer
 * a hypernetwork on the goal signals' encodings; with none, the goals are ordinary inputs); then,
 * with network_settings.memory, the LSTM (layers/lstm.ts) over sequences of encodings. The
 * actor's and critic's bodies, SAC's value network and Q networks, and the reward signals'
 * networks are each one.
 *
 * Recurrent rows come sequence after sequence: row s * sequenceLength + t is step t of sequence s,
 * and each sequence starts from its own memories ([h | c], memorySize values).
 */
import * as tf from '@tensorflow/tfjs';
import type { NetworkSettings } from '../config/settings';
import type { SeededRandom } from '../common/random';
import { BodyInputLayout } from './encoders/body-input';
import type { EntityAttentionEncoder } from './encoders/entity-attention';
import { ObservationEncoder, TracedEncoding } from './encoders/observation-encoder';
import type { VisualEncoder } from './encoders/visual-encoder';
import { ConditionalEncoder } from './layers/conditional-encoder';
import type { GraphWriter, ParameterAllocator, ParameterSource, TracedParameters } from './layers/layer';
import { BodyEncoder, LinearEncoder } from './layers/linear-encoder';
import { Lstm } from './layers/lstm';
import { ReadingPass, runPass, tensorValues, transposeInto } from './tensor-io';

/** A network body's traced pass (layers/layer.ts): the encoding, and d/d one observation from d/d encoding. */
export interface TracedBodyPass {
  readonly output: tf.Tensor2D;
  /**
   * d/d observation k: an image's in its shape ([count, ...]), a variable-length one's [count,
   * entities, entity size], a vector one's count x its size (of its normalized values).
   */
  observationGradient(outputGradient: tf.Tensor2D, observation: number): tf.Tensor;
}

export class NetworkBody {
  /** The observations' encoders (images, variable-length observations), upstream's observation_encoder. */
  readonly observationEncoder: ObservationEncoder;
  /** The LinearEncoder, or the ConditionalEncoder of a goal-conditioned body. */
  readonly bodyEncoder: BodyEncoder;
  /** Upstream's LSTM after the body encoder (network_settings.memory); null without memory. */
  readonly memory: Lstm | null;
  /** Values in the body encoder's input: the encoded observations (layout.width), then the actions. */
  readonly inputWidth: number;

  /**
   * Blocks `<name>.encoders.<observation>...` (and the attention's under `<name>.encoders.`),
   * then `<name>.layers.<l>...`, then `<name>.lstm...`.
   */
  constructor(
    allocate: ParameterAllocator,
    readonly name: string,
    readonly layout: BodyInputLayout,
    network: NetworkSettings,
    readonly actionInputs = 0,
  ) {
    this.observationEncoder = new ObservationEncoder(allocate, `${name}.encoders`, layout, network.vis_encode_type);
    this.inputWidth = layout.width + actionInputs;
    this.bodyEncoder = createBodyEncoder(allocate, `${name}.layers`, layout, network, this.inputWidth);
    this.memory = network.memory === null ? null : new Lstm(allocate, `${name}.lstm`, network.hidden_units, network.memory.memory_size);
  }

  /** One visual encoder per image, in observation order. */
  get encoders(): readonly VisualEncoder[] {
    return this.observationEncoder.visual;
  }

  /** The variable-length observations' attention; null without any. */
  get attention(): EntityAttentionEncoder | null {
    return this.observationEncoder.attention;
  }

  /** Whether anything below the body encoder (visual encoders, attention) needs the gradient of its input. */
  get hasEncoders(): boolean {
    return this.observationEncoder.hasEncoders;
  }

  /** Draws the encoders' initial weights: the visual encoders', then the attention's. */
  initializeEncoders(parameters: Float32Array, random: SeededRandom): void {
    this.observationEncoder.initialize(parameters, random);
  }

  /** Whether a hypernetwork conditions the body on the goal signals. */
  get goalConditioned(): boolean {
    return this.bodyEncoder instanceof ConditionalEncoder;
  }

  /** The encoding's width: the LSTM's hidden size (memory_size / 2) with memory, else hidden_units. */
  get outputSize(): number {
    return this.memory?.hiddenSize ?? this.bodyEncoder.outputShape[0];
  }

  /** Values in one sequence's memories; 0 without memory. */
  get memorySize(): number {
    return this.memory?.memorySize ?? 0;
  }

  /**
   * The LSTM over a feature-major body encoder output (hidden x count, count = sequences x
   * sequenceLength), each sequence from its row of `memories`; returns its output, feature-major
   * (memorySize / 2 x count). Without memory, the encoding itself. With `keep`, the LSTM keeps
   * what backwardMemoryColumns() needs. A reading pass (tensor-io.ts): the recurrence runs in
   * JavaScript.
   */
  *forwardMemoryColumns(encoding: tf.Tensor2D, memories: Float32Array, sequenceLength: number, source: ParameterSource, keep: boolean): ReadingPass<tf.Tensor2D> {
    if (this.memory === null) return encoding;
    const count = encoding.shape[1];
    return yield* this.memory.forwardColumns(encoding, memories, count / sequenceLength, sequenceLength, source, keep);
  }

  /** forwardMemoryColumns()'s backward: the gradient of the body encoder's output, feature-major; a reading pass. */
  *backwardMemoryColumns(outputGradient: tf.Tensor2D, source: ParameterSource): ReadingPass<tf.Tensor2D> {
    if (this.memory === null) return outputGradient;
    return (yield* this.memory.backwardColumns(outputGradient, source, true))!;
  }

  /**
   * One step of the LSTM for acting: `encoding` (count x hidden) from each agent's `memories`
   * (count x memorySize); returns the output (count x memorySize / 2) and the memories after.
   */
  stepMemory(encoding: Float32Array, memories: Float32Array, count: number, parameters: Float32Array): { output: Float32Array; memories: Float32Array } {
    if (this.memory === null) throw new Error(`The network ${this.name} has no memory.`);
    return this.memory.forward(encoding, memories, count, 1, parameters, false);
  }

  /** The encoded observations (count x layout.width): ObservationEncoder.encode(), a reading pass. */
  encodeObservations(
    observations: readonly Float32Array[],
    vectorRows: Float32Array,
    count: number,
    source: ParameterSource,
    keep: boolean,
  ): ReadingPass<Float32Array> {
    return this.observationEncoder.encode(observations, vectorRows, count, source, keep);
  }

  /**
   * The encoding (hidden x count, feature-major) of the observations, `vectorRows` their vector
   * values as encodeObservations() takes them; no memory. A reading pass (tensor-io.ts), run in
   * one scope (tf.tidy, scoped()); with `keep`, backwardColumns() may follow in the same scope.
   */
  *forwardColumns(observations: readonly Float32Array[], vectorRows: Float32Array, count: number, source: ParameterSource, keep: boolean): ReadingPass<tf.Tensor2D> {
    const rows = yield* this.encodeObservations(observations, vectorRows, count, source, keep);
    const columns = new Float32Array(this.inputWidth * count);
    transposeInto(rows, count, this.inputWidth, columns);
    return this.bodyEncoder.forwardColumns(tf.tensor2d(columns, [this.inputWidth, count]), source, keep);
  }

  /** forwardColumns()'s backward from d loss / d encoding (hidden x count): writes the gradient of every block. */
  backwardColumns(encodingGradient: tf.Tensor2D, source: ParameterSource): void {
    const inputGradient = this.bodyEncoder.backwardColumns(encodingGradient, source, this.hasEncoders);
    if (inputGradient !== null) this.backwardEncoders(inputGradient, 'columns', source);
  }

  /**
   * Hands the encoders the gradient of the body encoder's input, count x inputWidth (`rows`) or
   * inputWidth x count (`columns`): ObservationEncoder.backward().
   */
  backwardEncoders(inputGradient: tf.Tensor2D, orientation: 'rows' | 'columns', source: ParameterSource): void {
    this.observationEncoder.backward(inputGradient, orientation, source);
  }

  /**
   * The encoding (count x hidden) as a traced pass: `images` one tensor per image observation
   * ([count, ...its shape]), `rows` the vector observations side by side (count x
   * layout.vectorWidth, normalized beforehand) followed by the actions (actionInputs columns),
   * `observations` every observation's values by index (the variable-length ones are read).
   * No memory. Without images or variable-length observations, `rows` is the body encoder's input as it is.
   */
  tracedPass(images: readonly tf.Tensor4D[], rows: tf.Tensor2D, parameters: TracedParameters, observations: readonly Float32Array[] = []): TracedBodyPass {
    const { vectorWidth, width, observationSizes, columns } = this.layout;
    let input = rows;
    let encoded: TracedEncoding | null = null;
    if (this.hasEncoders) {
      encoded = this.observationEncoder.tracedPass(images, tf.slice(rows, [0, 0], [-1, vectorWidth]), parameters, observations);
      input = this.actionInputs > 0 ? tf.concat([encoded.output, tf.slice(rows, [0, vectorWidth], [-1, this.actionInputs])], 1) : encoded.output;
    }
    const body = this.bodyEncoder.tracedPass(input, parameters);
    return {
      output: body.output,
      observationGradient: (dy, k) => {
        const inputGradient = body.inputGradient(dy);
        if (encoded === null) return tf.slice(inputGradient, [0, columns[k]], [-1, observationSizes[k]]);
        return encoded.observationGradient(tf.slice(inputGradient, [0, 0], [-1, width]), k);
      },
    };
  }

  /** An image observation's exported input shape (channels, height, width); null for other observations. */
  imageInput(observation: number): [number, number, number] | null {
    return this.observationEncoder.imageInput(observation);
  }

  /** A variable-length observation's exported input shape (entities, entity size); null for other observations. */
  entityInput(observation: number): [number, number] | null {
    return this.observationEncoder.entityInput(observation);
  }

  /**
   * Its ONNX nodes: `observations` holds each observation's node (an image as [batch, C, H, W],
   * a vector one normalized, a variable-length one [batch, entities, entity size]); returns the
   * encoding's name. Without actions: the exported actor takes none.
   */
  exportOnnx(graph: GraphWriter, observations: readonly string[], parameters: Float32Array): string {
    const encoded = this.observationEncoder.exportOnnx(graph, observations, parameters, this.name);
    const input = graph.node('Concat', encoded, `${this.name}.observations`, { axis: { int: 1 } });
    return this.bodyEncoder.exportOnnx(graph, input, `${this.name}.layers`, parameters);
  }

  dispose(): void {
    this.bodyEncoder.dispose();
    this.observationEncoder.dispose();
  }
}

/**
 * The encoder after a body's observation encoders, of `inputWidth` inputs (blocks `<name>.<l>...`):
 * upstream's ConditionalEncoder, its last layer (upstream's num_conditional_layers, 1) a
 * hypernetwork, when the behavior has goal signals and goal_conditioning_type is hyper; the
 * LinearEncoder otherwise.
 */
export function createBodyEncoder(allocate: ParameterAllocator, name: string, layout: BodyInputLayout, network: NetworkSettings, inputWidth: number): BodyEncoder {
  const { hidden_units: hidden, num_layers: numLayers } = network;
  if (network.goal_conditioning_type === 'hyper' && layout.goalColumns.length > 0) {
    // Only an image goal's encoder learns from the gradient of the goal itself.
    const goalGradient = layout.goalObservations.some((k) => layout.visualObservations.includes(k));
    return new ConditionalEncoder(allocate, name, inputWidth, layout.goalColumns, hidden, numLayers, 1, goalGradient);
  }
  return new LinearEncoder(allocate, name, inputWidth, hidden, numLayers);
}
