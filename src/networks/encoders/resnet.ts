/**
 * vis_encode_type: resnet — the IMPALA network, as upstream's ResNetVisualEncoder: three stacks
 * (16, 32, 32 channels) of a padded 3x3 convolution, a 3x3 max pooling of stride 2 and two
 * residual blocks (Swish, convolution, Swish, convolution, plus the input), then Swish, a dense
 * layer and ReLU.
 */
import { Relu, Swish } from '../layers/activations';
import { Conv2d } from '../layers/conv2d';
import { linearLayer } from '../layers/dense';
import { Flatten } from '../layers/flatten';
import { Layer, ParameterAllocator } from '../layers/layer';
import { MaxPool2d } from '../layers/max-pool';
import { Residual, Sequential } from '../layers/sequential';
import { ImageShape, VISUAL_DENSE_GAIN } from './conv-stack';
import type { VisualEncoderKind } from './visual-encoder';

const STACK_CHANNELS = [16, 32, 32];
const BLOCKS_PER_STACK = 2;

function residualBlock(allocate: ParameterAllocator, name: string, shape: ImageShape): Residual {
  const conv = (i: number) =>
    new Conv2d(allocate, `${name}.layers.${i}`, { input: shape, outChannels: shape[2], kernel: 3, stride: 1, padding: 1 });
  return new Residual(new Sequential([new Swish(shape), conv(1), new Swish(shape), conv(3)]));
}

export const resnetEncoder: VisualEncoderKind = {
  minResolution: 15,
  build: (allocate, name, image, outputSize) => {
    const layers: Layer[] = [];
    let shape: ImageShape = image;
    for (const channels of STACK_CHANNELS) {
      const conv = new Conv2d(allocate, `${name}.sequential.${layers.length}`, { input: shape, outChannels: channels, kernel: 3, stride: 1, padding: 1 });
      const pool = new MaxPool2d(conv.outputShape, 3, 2);
      layers.push(conv, pool);
      shape = pool.outputShape;
      for (let b = 0; b < BLOCKS_PER_STACK; b++) layers.push(residualBlock(allocate, `${name}.sequential.${layers.length}`, shape));
    }
    layers.push(new Swish(shape));
    const flatten = new Flatten(shape);
    const dense = linearLayer(allocate, `${name}.dense`, flatten.outputShape[0], outputSize, { kind: 'kaimingNormal', gain: VISUAL_DENSE_GAIN });
    layers.push(flatten, dense, new Relu(dense.outputShape));
    return new Sequential(layers);
  },
};
