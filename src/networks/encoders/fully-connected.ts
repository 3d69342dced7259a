/** vis_encode_type: fully_connected — the image flattened into one dense layer, as upstream's FullyConnectedVisualEncoder. */
import { LeakyRelu } from '../layers/activations';
import { convStack } from './conv-stack';
import type { VisualEncoderKind } from './visual-encoder';

export const fullyConnectedEncoder: VisualEncoderKind = {
  minResolution: 1,
  build: (allocate, name, image, outputSize) => convStack(allocate, name, image, [], outputSize, (shape) => new LeakyRelu(shape)),
};
