/**
 * vis_encode_type: match3 — two 3x3 convolutions of stride 1 (35 then 144 filters) for small
 * board-like grids, as upstream's SmallVisualEncoder.
 */
import { LeakyRelu } from '../layers/activations';
import { convStack } from './conv-stack';
import type { VisualEncoderKind } from './visual-encoder';

export const match3Encoder: VisualEncoderKind = {
  minResolution: 5,
  build: (allocate, name, image, outputSize) =>
    convStack(
      allocate,
      name,
      image,
      [
        { channels: 35, kernel: 3, stride: 1 },
        { channels: 144, kernel: 3, stride: 1 },
      ],
      outputSize,
      (shape) => new LeakyRelu(shape),
    ),
};
