/**
 * Upstream's NetworkBody (torch_entities/networks.py): each observation encoded (every image by a
 * visual encoder of its own, vector observations as given, normalized beforehand), side by side
 * in observation order, then the actions the network takes (SAC's Q networks), then the
 * LinearEncoder. The actor's and critic's bodies, SAC's value network and Q networks are each one.
 */
import * as tf from '@tensorflow/tfjs';
import type { NetworkSettings } from '../config/settings';
import { BodyInputLayout, observationLabel } from './encoders/body-input';
import { VisualEncoder } from './encoders/visual-encoder';
import type { GraphWriter, ParameterAllocator, ParameterSource } from './layers/layer';
import { LinearEncoder } from './layers/linear-encoder';
import { copyColumns, copyTensorInto } from './tensor-io';

export class NetworkBody {
  /** One per image, in observation order (upstream's processors). */
  readonly encoders: readonly VisualEncoder[];
  readonly linearEncoder: LinearEncoder;
  /** Values in the LinearEncoder's input: the encoded observations (layout.width), then the actions. */
  readonly inputWidth: number;

  /** Blocks `<name>.encoders.<observation>...`, then `<name>.layers.<l>...`. */
  constructor(
    allocate: ParameterAllocator,
    readonly name: string,
    readonly layout: BodyInputLayout,
    network: NetworkSettings,
    readonly actionInputs = 0,
  ) {
    const { spec, encodingSize } = layout;
    this.encoders = layout.visualObservations.map(
      (k) =>
        new VisualEncoder(allocate, `${name}.encoders.${k}`, spec.observationSpecs[k], network.vis_encode_type, encodingSize, observationLabel(spec, k)),
    );
    this.inputWidth = layout.width + actionInputs;
    this.linearEncoder = new LinearEncoder(allocate, `${name}.layers`, this.inputWidth, network.hidden_units, network.num_layers);
  }

  /** The encoding's width. */
  get outputSize(): number {
    return this.linearEncoder.outputShape[0];
  }

  /**
   * The encoded observations (count x layout.width): `vectorRows` (count x layout.vectorWidth)
   * with each image's encoding in its place; `vectorRows` itself when there are no images. With
   * `keep`, the encoders keep what backwardEncoders() needs, in the caller's tf.tidy scope.
   */
  encodeObservations(
    observations: readonly Float32Array[],
    vectorRows: Float32Array,
    count: number,
    source: ParameterSource,
    keep: boolean,
  ): Float32Array {
    if (this.encoders.length === 0) return vectorRows;
    const { width, vectorWidth, encodingSize, observationSizes, visualObservations } = this.layout;
    const rows = new Float32Array(count * width);
    const encoding = new Float32Array(count * encodingSize);
    let column = 0;
    let vectorColumn = 0;
    observationSizes.forEach((size, k) => {
      const e = visualObservations.indexOf(k);
      if (e >= 0) {
        copyTensorInto(this.encoders[e].forward(observations[k], count, source, keep), encoding);
        copyColumns(encoding, encodingSize, 0, rows, width, column, encodingSize, count);
        column += encodingSize;
      } else {
        copyColumns(vectorRows, vectorWidth, vectorColumn, rows, width, column, size, count);
        vectorColumn += size;
        column += size;
      }
    });
    return rows;
  }

  /**
   * Hands each visual encoder the gradient of its encoding, out of the gradient of the
   * LinearEncoder's input: count x inputWidth (`rows`) or inputWidth x count (`columns`).
   */
  backwardEncoders(inputGradient: tf.Tensor2D, orientation: 'rows' | 'columns', source: ParameterSource): void {
    this.encoders.forEach((encoder, e) => {
      const column = this.layout.encodingColumns[e];
      const size = encoder.outputSize;
      const encodingGradient =
        orientation === 'rows'
          ? tf.slice(inputGradient, [0, column], [-1, size])
          : tf.transpose(tf.slice(inputGradient, [column, 0], [size, -1]));
      encoder.backward(encodingGradient as tf.Tensor2D, source);
    });
  }

  /** An image observation's exported input shape (channels, height, width); null for other observations. */
  imageInput(observation: number): [number, number, number] | null {
    const e = this.layout.visualObservations.indexOf(observation);
    if (e < 0) return null;
    const { channels, height, width } = this.encoders[e].layout;
    return [channels, height, width];
  }

  /**
   * Its ONNX nodes: `observations` holds each observation's node (an image as [batch, C, H, W],
   * a vector one normalized); returns the encoding's name. Without actions: the exported actor takes none.
   */
  exportOnnx(graph: GraphWriter, observations: readonly string[], parameters: Float32Array): string {
    const visual = this.layout.visualObservations;
    const encoded = observations.map((node, k) => {
      const e = visual.indexOf(k);
      return e < 0 ? node : this.encoders[e].exportOnnx(graph, node, parameters);
    });
    const input = graph.node('Concat', encoded, `${this.name}.observations`, { axis: { int: 1 } });
    return this.linearEncoder.exportOnnx(graph, input, `${this.name}.layers`, parameters);
  }

  dispose(): void {
    this.linearEncoder.dispose();
  }
}
