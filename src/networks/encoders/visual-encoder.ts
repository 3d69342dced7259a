/**
 * The encoder of one visual observation: upstream's five kinds (vis_encode_type), chosen by name,
 * each with the smallest image side it takes. A new kind is one file with a VisualEncoderKind and
 * one entry in VISUAL_ENCODERS.
 *
 * Images arrive as the environment sends them, channel first (C, H, W: com.unity.ml-agents 2 and
 * later) or, when the dimension properties say so, channel last (H, W, C: older packages); they
 * run channel last. The exported model takes them channel first, [batch, C, H, W], as upstream's.
 */
import * as tf from '@tensorflow/tfjs';
import type { EncoderType } from '../../config/settings';
import { DimensionProperty, ObservationSpec } from '../../env/behavior-spec';
import type { SeededRandom } from '../../common/random';
import { GraphWriter, Layer, ParameterAllocator, ParameterBlock, ParameterSource, TracedParameters, TracedPass } from '../layers/layer';
import { transposeMerged } from '../transpose';
import { UnsupportedModelError } from '../unsupported-model';
import { ImageShape } from './conv-stack';
import { fullyConnectedEncoder } from './fully-connected';
import { match3Encoder } from './match3';
import { natureCnnEncoder } from './nature-cnn';
import { resnetEncoder } from './resnet';
import { simpleEncoder } from './simple';

export interface VisualEncoderKind {
  /** The smallest height and width it takes (upstream's MIN_RESOLUTION_FOR_ENCODER). */
  readonly minResolution: number;
  /** Its layers for images of `image` (height, width, channels), ending in `outputSize` features. */
  build(allocate: ParameterAllocator, name: string, image: ImageShape, outputSize: number): Layer;
}

export const VISUAL_ENCODERS: Readonly<Record<EncoderType, VisualEncoderKind>> = {
  simple: simpleEncoder,
  nature_cnn: natureCnnEncoder,
  resnet: resnetEncoder,
  match3: match3Encoder,
  fully_connected: fullyConnectedEncoder,
};

/** An observation's image layout and size, read from its shape and dimension properties. */
export interface ImageLayout {
  readonly channelFirst: boolean;
  readonly height: number;
  readonly width: number;
  readonly channels: number;
}

/**
 * Channel last only when the dimension properties say so (translational, translational, none);
 * otherwise channel first, as upstream reads every image since com.unity.ml-agents 2.
 */
export function imageLayout(spec: ObservationSpec): ImageLayout {
  const [a, b, c] = spec.shape;
  const [pa, pb, pc] = spec.dimensionProperty;
  const image = DimensionProperty.TRANSLATIONAL_EQUIVARIANCE;
  if (pa === image && pb === image && pc === DimensionProperty.NONE) return { channelFirst: false, height: a, width: b, channels: c };
  return { channelFirst: true, height: b, width: c, channels: a };
}

export class VisualEncoder {
  readonly layers: Layer;
  readonly layout: ImageLayout;
  readonly outputSize: number;

  constructor(
    allocate: ParameterAllocator,
    readonly name: string,
    spec: ObservationSpec,
    readonly encoderType: EncoderType,
    outputSize: number,
    label: string,
  ) {
    this.layout = imageLayout(spec);
    const { height, width, channels } = this.layout;
    const kind = VISUAL_ENCODERS[encoderType];
    if (height < kind.minResolution || width < kind.minResolution) {
      throw new UnsupportedModelError(
        `${label}: visual observation resolution (${width}x${height}) is too small for the provided EncoderType ` +
          `(${encoderType}). The min dimension is ${kind.minResolution}. Set network_settings.vis_encode_type to an ` +
          `encoder that takes it (${smallEnoughEncoders(Math.min(width, height))}), or send larger images.`,
      );
    }
    this.layers = kind.build(allocate, name, [height, width, channels], outputSize);
    this.outputSize = outputSize;
  }

  get blocks(): readonly ParameterBlock[] {
    return this.layers.blocks;
  }

  initialize(parameters: Float32Array, random: SeededRandom): void {
    this.layers.initialize(parameters, random);
  }

  /** The encodings (count x outputSize) of `count` images given as the environment sends them. */
  forward(observations: Float32Array, count: number, source: ParameterSource, keep: boolean): tf.Tensor2D {
    const { channelFirst, height, width, channels } = this.layout;
    const images = channelFirst
      ? transposeMerged(tf.tensor4d(observations, [count, channels, height, width]), [0, 2, 3, 1])
      : tf.tensor4d(observations, [count, height, width, channels]);
    return this.layers.forward(images, source, keep) as tf.Tensor2D;
  }

  /** Writes the parameters' gradient from the encodings' gradient (count x outputSize). */
  backward(encodingGradient: tf.Tensor2D, source: ParameterSource): void {
    this.layers.backward(encodingGradient, source, false);
  }

  /**
   * The encodings of `images` ([count, ...the observation's shape], as the environment sends them)
   * as a traced pass (layer.ts); the input gradient comes in the images' shape.
   */
  tracedPass(images: tf.Tensor4D, parameters: TracedParameters): TracedPass<tf.Tensor2D, tf.Tensor4D> {
    const { channelFirst } = this.layout;
    const pass = this.layers.tracedPass(channelFirst ? transposeMerged(images, [0, 2, 3, 1]) : images, parameters);
    return {
      output: pass.output as tf.Tensor2D,
      inputGradient: (dy) => {
        const gradient = pass.inputGradient(dy) as tf.Tensor4D;
        return channelFirst ? transposeMerged(gradient, [0, 3, 1, 2]) : gradient;
      },
    };
  }

  /** Its ONNX nodes after `input` ([batch, C, H, W]); returns the encoding's name. */
  exportOnnx(graph: GraphWriter, input: string, parameters: Float32Array): string {
    return this.layers.exportOnnx(graph, input, this.name, parameters);
  }
}

function smallEnoughEncoders(side: number): string {
  const fitting = (Object.keys(VISUAL_ENCODERS) as EncoderType[]).filter((type) => VISUAL_ENCODERS[type].minResolution <= side);
  return fitting.length > 0 ? fitting.join(', ') : 'none does';
}
