/**
 * The shape most of upstream's visual encoders share: convolutions, each followed by an
 * activation, then the image flattened into one dense layer of `outputSize` with its own
 * activation. The dense layer is drawn as upstream's (KaimingHeNormal with the ReLU gain 1.41).
 */
import { Conv2d } from '../layers/conv2d';
import { linearLayer } from '../layers/dense';
import { Flatten } from '../layers/flatten';
import { Layer, ParameterAllocator } from '../layers/layer';
import { Sequential } from '../layers/sequential';

/** The gain upstream gives the dense layer of every visual encoder ("ReLU gain"). */
export const VISUAL_DENSE_GAIN = 1.41;

export interface ConvSpec {
  readonly channels: number;
  readonly kernel: number;
  readonly stride: number;
}

export type ImageShape = readonly [height: number, width: number, channels: number];

/** Convolutions (each then `activation()`), flatten, dense to outputSize, then `activation()`. */
export function convStack(
  allocate: ParameterAllocator,
  name: string,
  image: ImageShape,
  convolutions: readonly ConvSpec[],
  outputSize: number,
  activation: (shape: readonly number[]) => Layer,
): Sequential {
  const layers: Layer[] = [];
  let shape: ImageShape = image;
  convolutions.forEach(({ channels, kernel, stride }, i) => {
    const conv = new Conv2d(allocate, `${name}.conv_layers.${2 * i}`, { input: shape, outChannels: channels, kernel, stride, padding: 0 });
    shape = conv.outputShape;
    layers.push(conv, activation(shape));
  });
  const flatten = new Flatten(shape);
  const dense = linearLayer(allocate, `${name}.dense.0`, flatten.outputShape[0], outputSize, { kind: 'kaimingNormal', gain: VISUAL_DENSE_GAIN });
  layers.push(flatten, dense, activation(dense.outputShape));
  return new Sequential(layers);
}
