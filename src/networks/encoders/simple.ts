/** vis_encode_type: simple — two convolutions (16 filters 8x8 stride 4, 32 filters 4x4 stride 2), as upstream's SimpleVisualEncoder. */
import { LeakyRelu } from '../layers/activations';
import { convStack } from './conv-stack';
import type { VisualEncoderKind } from './visual-encoder';

export const simpleEncoder: VisualEncoderKind = {
  minResolution: 20,
  build: (allocate, name, image, outputSize) =>
    convStack(
      allocate,
      name,
      image,
      [
        { channels: 16, kernel: 8, stride: 4 },
        { channels: 32, kernel: 4, stride: 2 },
      ],
      outputSize,
      (shape) => new LeakyRelu(shape),
    ),
};
