/**
 * The LSTM memory module: its forward pass and its backpropagation through time against tfjs's
 * autodiff of the same LSTM written with tensor ops (cpu backend); upstream's initialization;
 * its memory size checks.
 */
import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../../../src/common/logger';
import { SeededRandom } from '../../../src/common/random';
import { selectBackend } from '../../../src/networks/backend';
import { blockValues } from '../../../src/networks/layers/layer';
import { FORGET_BIAS, Lstm } from '../../../src/networks/layers/lstm';
import { parameterStore } from '../../helpers/parameter-store';

beforeAll(async () => {
  await selectBackend('cpu', memoryLogger());
});

const INPUTS = 5;
const MEMORY = 8;
const H = MEMORY / 2;

function randomArray(size: number, random: SeededRandom, scale = 1): Float32Array {
  return Float32Array.from({ length: size }, () => scale * random.gaussian());
}

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    if (Math.abs(actual[i] - expected[i]) > 1e-4 * (1 + Math.abs(expected[i]))) {
      throw new Error(`${what}[${i}]: ${actual[i]}, expected ${expected[i]}`);
    }
  }
}

/** torch.nn.LSTM's equations in tensor ops, batch first: [batch, steps, in] and [batch, 2H] -> outputs and final [h | c]. */
function referenceLstm(x: tf.Tensor, memories: tf.Tensor, wIh: tf.Tensor, wHh: tf.Tensor, bIh: tf.Tensor, bHh: tf.Tensor, steps: number) {
  let h = tf.slice(memories, [0, 0], [-1, H]);
  let c = tf.slice(memories, [0, H], [-1, H]);
  const outputs: tf.Tensor[] = [];
  for (let t = 0; t < steps; t++) {
    const xt = tf.squeeze(tf.slice(x, [0, t, 0], [-1, 1, -1]), [1]);
    const z = tf.add(tf.add(tf.matMul(xt, wIh, false, true), tf.matMul(h, wHh, false, true)), tf.add(bIh, bHh));
    const [zi, zf, zg, zo] = tf.split(z, 4, 1);
    c = tf.add(tf.mul(tf.sigmoid(zf), c), tf.mul(tf.sigmoid(zi), tf.tanh(zg)));
    h = tf.mul(tf.sigmoid(zo), tf.tanh(c));
    outputs.push(h);
  }
  return { output: tf.stack(outputs, 1), memories: tf.concat([h, c], 1) };
}

describe('Lstm', () => {
  it.each([
    [1, 1],
    [3, 6],
  ])('forward and backward through time (%d sequences of %d steps) match autodiff', (batch, steps) => {
    const store = parameterStore();
    const lstm = new Lstm(store.allocate, 'memory', INPUTS, MEMORY);
    const { parameters, gradient } = store.source();
    const random = new SeededRandom(batch * 10 + steps);
    lstm.initialize(parameters, random);
    // Biases start at 0 and 1: give them values so that their gradients are tested.
    blockValues(parameters, lstm.biasIh).set(randomArray(4 * H, random, 0.3));
    blockValues(parameters, lstm.biasHh).set(randomArray(4 * H, random, 0.3));
    const input = randomArray(batch * steps * INPUTS, random);
    const memories = randomArray(batch * MEMORY, random, 0.5);
    const outputGradient = randomArray(batch * steps * H, random);
    const memoryGradient = randomArray(batch * MEMORY, random);

    const ours = lstm.forward(input, memories, batch, steps, parameters, true);
    const back = lstm.backward(outputGradient, memoryGradient, parameters, gradient, true);

    const blocks = [lstm.weightIh, lstm.weightHh, lstm.biasIh, lstm.biasHh];
    tf.tidy(() => {
      const x = tf.tensor3d(input, [batch, steps, INPUTS]);
      const m = tf.tensor2d(memories, [batch, MEMORY]);
      const weights = blocks.map((block) => tf.tensor(blockValues(parameters, block), [...block.shape]));
      const reference = referenceLstm(x, m, weights[0], weights[1], weights[2], weights[3], steps);
      expectClose(ours.output, reference.output.dataSync(), 'output');
      expectClose(ours.memories, reference.memories.dataSync(), 'final memories');
      // The loss whose gradient we backpropagated: sum(output * dOutput) + sum(final memories * dMemories).
      const loss = (xs: tf.Tensor, ms: tf.Tensor, a: tf.Tensor, b: tf.Tensor, c: tf.Tensor, d: tf.Tensor) => {
        const r = referenceLstm(xs, ms, a, b, c, d, steps);
        return tf.add(tf.sum(tf.mul(r.output, tf.tensor3d(outputGradient, [batch, steps, H]))), tf.sum(tf.mul(r.memories, tf.tensor2d(memoryGradient, [batch, MEMORY]))));
      };
      const grads = tf.grads(loss)([x, m, ...weights]);
      expectClose(back.input!, grads[0].dataSync(), 'input gradient');
      expectClose(back.memories, grads[1].dataSync(), 'initial memories gradient');
      blocks.forEach((block, k) => expectClose(blockValues(gradient, block), grads[k + 2].dataSync(), `${block.name} gradient`));
    });
  });

  it('is initialized as upstream\'s lstm_layer: Xavier-uniform gate blocks, forget gate biases at forget_bias', () => {
    const store = parameterStore();
    const lstm = new Lstm(store.allocate, 'memory', 40, 64);
    expect(store.blocks.map((b) => `${b.name} ${b.shape.join('x')}`)).toEqual([
      'memory.weight_ih 128x40',
      'memory.weight_hh 128x32',
      'memory.bias_ih 128',
      'memory.bias_hh 128',
    ]);
    const { parameters } = store.source();
    lstm.initialize(parameters, new SeededRandom(1));
    for (const block of [lstm.biasIh, lstm.biasHh]) {
      const bias = blockValues(parameters, block);
      expect(Array.from(bias.subarray(0, 32))).toEqual(new Array(32).fill(0));
      expect(Array.from(bias.subarray(32, 64))).toEqual(new Array(32).fill(FORGET_BIAS));
      expect(Array.from(bias.subarray(64))).toEqual(new Array(64).fill(0));
    }
    for (const [block, fanIn] of [[lstm.weightIh, 40], [lstm.weightHh, 32]] as const) {
      const bound = Math.sqrt(6 / (fanIn + 32));
      const values = blockValues(parameters, block);
      for (let gate = 0; gate < 4; gate++) {
        const gateValues = values.subarray(gate * 32 * fanIn, (gate + 1) * 32 * fanIn);
        expect(Math.max(...gateValues.map(Math.abs))).toBeLessThanOrEqual(bound);
        expect(Math.max(...gateValues.map(Math.abs))).toBeGreaterThan(0.9 * bound);
      }
    }
  });

  it('refuses an odd memory size and inputs of the wrong size, saying what it takes', () => {
    const store = parameterStore();
    expect(() => new Lstm(store.allocate, 'odd', 3, 7)).toThrow('memory_size must be even (got 7)');
    const lstm = new Lstm(store.allocate, 'memory', 3, 4);
    const { parameters } = store.source();
    expect(() => lstm.forward(new Float32Array(5), new Float32Array(4), 1, 2, parameters, false)).toThrow(
      'The LSTM takes 1 x 2 x 3 inputs and 1 x 4 memories; got 5 and 4 values.',
    );
  });
});
