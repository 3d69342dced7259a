/** vis_encode_type: nature_cnn — the DQN paper's three convolutions, as upstream's NatureVisualEncoder. */
import { LeakyRelu } from '../layers/activations';
import { convStack } from './conv-stack';
import type { VisualEncoderKind } from './visual-encoder';

export const natureCnnEncoder: VisualEncoderKind = {
  minResolution: 36,
  build: (allocate, name, image, outputSize) =>
    convStack(
      allocate,
      name,
      image,
      [
        { channels: 32, kernel: 8, stride: 4 },
        { channels: 64, kernel: 4, stride: 2 },
        { channels: 64, kernel: 3, stride: 1 },
      ],
      outputSize,
      (shape) => new LeakyRelu(shape),
    ),
};
