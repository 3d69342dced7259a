/**
 * Upstream's ObservationEncoder (torch_entities/networks.py): one agent's observations encoded
 * side by side, as BodyInputLayout lays them out. Vector observations go in as given (their
 * owner normalizes them beforehand: the normalizer's statistics belong to the network that
 * updates them), every image through a visual encoder of its own (vis_encode_type), and, when
 * there are variable-length observations, their attention (entity-attention.ts) last, with the
 * columns before it as x_self. Goal signals are encoded like any other observation; a body that
 * conditions on them reads their columns (layout.goalColumns).
 *
 * Every network body (network-body.ts) starts with one, and so does each member's encoding in
 * POCA's critic (poca-critic.ts).
 *
 * Blocks `<name>.<observation>...` for each image, then the attention's under `<name>.`.
 */
import * as tf from '@tensorflow/tfjs';
import type { EncoderType } from '../../config/settings';
import type { SeededRandom } from '../../common/random';
import { GraphWriter, ParameterAllocator, ParameterSource, TracedParameters } from '../layers/layer';
import { ReadingPass, copyColumns } from '../tensor-io';
import { BodyInputLayout, observationLabel } from './body-input';
import { EntityAttentionEncoder } from './entity-attention';
import { VisualEncoder } from './visual-encoder';

/** The encoding of a batch as a traced pass (layers/layer.ts). */
export interface TracedEncoding {
  /** count x layout.width */
  readonly output: tf.Tensor2D;
  /**
   * d/d observation k from d/d the encoding (count x layout.width): an image's in its shape, a
   * variable-length one's [count, entities, entity size], a vector one's count x its size.
   */
  observationGradient(columnsGradient: tf.Tensor2D, observation: number): tf.Tensor;
}

export class ObservationEncoder {
  /** One per image, in observation order (upstream's processors). */
  readonly visual: readonly VisualEncoder[];
  /** The variable-length observations' attention; null without any. */
  readonly attention: EntityAttentionEncoder | null;

  constructor(
    allocate: ParameterAllocator,
    /** `<body>.encoders` */
    readonly name: string,
    readonly layout: BodyInputLayout,
    encoderType: EncoderType,
  ) {
    const { spec, encodingSize, entityObservations, selfWidth } = layout;
    this.visual = layout.visualObservations.map(
      (k) => new VisualEncoder(allocate, `${name}.${k}`, spec.observationSpecs[k], encoderType, encodingSize, observationLabel(spec, k)),
    );
    this.attention = entityObservations.length === 0 ? null : new EntityAttentionEncoder(allocate, name, selfWidth, entityObservations);
  }

  /** Whether anything here runs on tfjs and learns (images, variable-length observations). */
  get hasEncoders(): boolean {
    return this.visual.length > 0 || this.attention !== null;
  }

  /** Draws the initial weights: the visual encoders', then the attention's. */
  initialize(parameters: Float32Array, random: SeededRandom): void {
    for (const encoder of this.visual) encoder.initialize(parameters, random);
    this.attention?.initialize(parameters, random);
  }

  /**
   * The encoded observations (count x layout.width): `vectorRows` (count x layout.vectorWidth,
   * normalized when the owner normalizes) with each image's encoding in its place, then the
   * attention's output; `vectorRows` itself when there are neither. With `keep`, the encoders
   * keep what backward() needs, in the caller's scope. A reading pass (tensor-io.ts): the
   * encodings are read back to sit beside the vector values.
   */
  *encode(observations: readonly Float32Array[], vectorRows: Float32Array, count: number, source: ParameterSource, keep: boolean): ReadingPass<Float32Array> {
    if (!this.hasEncoders) return vectorRows;
    const { width, selfWidth, vectorWidth, encodingSize, observationSizes, visualObservations } = this.layout;
    const rows = new Float32Array(count * width);
    let column = 0;
    let vectorColumn = 0;
    for (const [k, size] of observationSizes.entries()) {
      const e = visualObservations.indexOf(k);
      if (e >= 0) {
        const encoding = yield this.visual[e].forward(observations[k], count, source, keep);
        copyColumns(encoding, encodingSize, 0, rows, width, column, encodingSize, count);
        column += encodingSize;
      } else if (this.layout.isVector(k)) {
        copyColumns(vectorRows, vectorWidth, vectorColumn, rows, width, column, size, count);
        vectorColumn += size;
        column += size;
      }
    }
    if (this.attention !== null) {
      const self = selfWidth === 0 ? null : tf.slice(tf.tensor2d(rows, [count, width]), [0, 0], [-1, selfWidth]);
      const attended = yield this.attention.forward(self, observations, count, source, keep);
      copyColumns(attended, this.attention.outputSize, 0, rows, width, selfWidth, this.attention.outputSize, count);
    }
    return rows;
  }

  /**
   * encode()'s backward: hands the attention and each visual encoder the gradient of its
   * encoding, out of `inputGradient`, count x (layout.width or more) (`rows`) or its transpose
   * (`columns`); columns past layout.width (a body's action inputs) are not read. The
   * attention's x_self gradient adds to the images' encodings before theirs.
   */
  backward(inputGradient: tf.Tensor2D, orientation: 'rows' | 'columns', source: ParameterSource): void {
    if (this.attention !== null) {
      const rows = orientation === 'rows' ? inputGradient : tf.transpose(inputGradient);
      const { selfWidth } = this.layout;
      const attendedGradient = tf.slice(rows, [0, selfWidth], [-1, this.attention.outputSize]);
      const selfGradient = this.attention.backward(attendedGradient, source, this.visual.length > 0);
      if (selfGradient === null) return;
      inputGradient = tf.add(tf.slice(rows, [0, 0], [-1, selfWidth]), selfGradient);
      orientation = 'rows';
    }
    this.visual.forEach((encoder, e) => {
      const column = this.layout.encodingColumns[e];
      const size = encoder.outputSize;
      const encodingGradient =
        orientation === 'rows'
          ? tf.slice(inputGradient, [0, column], [-1, size])
          : tf.transpose(tf.slice(inputGradient, [column, 0], [size, -1]));
      encoder.backward(encodingGradient as tf.Tensor2D, source);
    });
  }

  /**
   * The encoding as a traced pass: `images` one tensor per image observation ([count, ...its
   * shape]), `vectorRows` the vector observations side by side (count x layout.vectorWidth,
   * normalized beforehand), `observations` every observation's values by index (the attention
   * reads the variable-length ones; none needed without them).
   */
  tracedPass(images: readonly tf.Tensor4D[], vectorRows: tf.Tensor2D, parameters: TracedParameters, observations: readonly Float32Array[] = []): TracedEncoding {
    const { observationSizes, visualObservations, columns, encodingSize, selfWidth } = this.layout;
    const count = vectorRows.shape[0];
    const imagePasses = this.visual.map((encoder, e) => encoder.tracedPass(images[e], parameters));
    const parts: tf.Tensor2D[] = [];
    let vectorColumn = 0;
    observationSizes.forEach((size, k) => {
      const e = visualObservations.indexOf(k);
      if (e >= 0) {
        parts.push(imagePasses[e].output);
      } else if (this.layout.isVector(k)) {
        parts.push(tf.slice(vectorRows, [0, vectorColumn], [-1, size]));
        vectorColumn += size;
      }
    });
    const self = parts.length === 0 ? null : parts.length === 1 ? parts[0] : tf.concat(parts, 1);
    const attention = this.attention?.tracedPass(self, observations, count, parameters) ?? null;
    const output = attention === null ? self! : self === null ? attention.output : tf.concat([self, attention.output], 1);
    return {
      output,
      observationGradient: (gradient, k) => {
        let selfGradient = gradient;
        if (attention !== null) {
          const attended = attention.inputGradient(tf.slice(gradient, [0, selfWidth], [-1, this.attention!.outputSize]));
          const entity = this.layout.entityObservations.findIndex((o) => o.observation === k);
          if (entity >= 0) return attended.entities[entity];
          // x_self's gradient: its own columns' and what the attention passes back to it.
          selfGradient = attended.self === null ? gradient : tf.add(tf.slice(gradient, [0, 0], [-1, selfWidth]), attended.self);
        }
        const e = visualObservations.indexOf(k);
        if (e >= 0) return imagePasses[e].inputGradient(tf.slice(selfGradient, [0, columns[k]], [-1, encodingSize]));
        return tf.slice(selfGradient, [0, columns[k]], [-1, observationSizes[k]]);
      },
    };
  }

  /** An image observation's exported input shape (channels, height, width); null for other observations. */
  imageInput(observation: number): [number, number, number] | null {
    const e = this.layout.visualObservations.indexOf(observation);
    if (e < 0) return null;
    const { channels, height, width } = this.visual[e].layout;
    return [channels, height, width];
  }

  /** A variable-length observation's exported input shape (entities, entity size); null for other observations. */
  entityInput(observation: number): [number, number] | null {
    const found = this.layout.entityObservations.find((e) => e.observation === observation);
    return found === undefined ? null : [found.maxEntities, found.entitySize];
  }

  /**
   * Its ONNX nodes: `observations` holds each observation's node (an image as [batch, C, H, W],
   * a vector one normalized, a variable-length one [batch, entities, entity size]); returns the
   * encodings in input order (their concatenation is the encoding). `label` names x_self's node.
   */
  exportOnnx(graph: GraphWriter, observations: readonly string[], parameters: Float32Array, label: string): string[] {
    const encoded: string[] = [];
    observations.forEach((node, k) => {
      const e = this.layout.visualObservations.indexOf(k);
      if (e >= 0) encoded.push(this.visual[e].exportOnnx(graph, node, parameters));
      else if (this.layout.isVector(k)) encoded.push(node);
    });
    if (this.attention !== null) {
      const self = encoded.length === 0 ? null : graph.node('Concat', encoded, `${label}.x_self`, { axis: { int: 1 } });
      encoded.push(this.attention.exportOnnx(graph, self, observations, parameters));
    }
    return encoded;
  }

  dispose(): void {
    this.attention?.dispose();
  }
}
