/**
 * transposeMerged against tf.transpose itself, on the wasm backend the encoders run on: the same
 * values in the same shape for the permutations the image layers use, and for ones whose merged
 * groups land in other orders.
 */
import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../../src/common/logger';
import { selectBackend } from '../../src/networks/backend';
import { transposeMerged } from '../../src/networks/transpose';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe('transposeMerged', () => {
  it.each([
    [[2, 3, 4, 5], [3, 1, 2, 0]],
    [[2, 3, 4, 5], [1, 2, 0, 3]],
    [[2, 3, 4, 5], [0, 3, 1, 2]],
    [[2, 3, 4, 5], [0, 2, 3, 1]],
    [[2, 3, 4, 5], [1, 2, 3, 0]],
    [[2, 3, 4, 5], [2, 3, 0, 1]],
    [[2, 3, 4, 5], [3, 2, 1, 0]],
    [[2, 3, 4, 5], [0, 1, 2, 3]],
    [[4, 6], [1, 0]],
    [[2, 3, 2, 3, 2], [4, 0, 1, 3, 2]],
  ])('of a %j tensor by %j gives tf.transpose\'s values and shape', (shape, perm) => {
    const size = shape.reduce((a, b) => a * b, 1);
    const x = tf.tensor(Float32Array.from({ length: size }, (_, i) => i), shape);
    const expected = tf.transpose(x, perm);
    const actual = transposeMerged(x, perm);
    expect(actual.shape).toEqual(expected.shape);
    expect(Array.from(actual.dataSync())).toEqual(Array.from(expected.dataSync()));
  });
});
