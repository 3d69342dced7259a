/**
 * SAC's Q network with images: its backward pass (the MLP's, then each visual encoder's from its
 * columns of the MLP's input gradient) against finite differences of a weighted sum of its
 * outputs, for every parameter block and the actions; the layout without images is the MLP's.
 * With memory: the LSTM after the MLP, over whole sequences from zero memories, checked the same way.
 * With a goal signal (goal_conditioning_type hyper): the body's last layer a hypernetwork on the
 * goal, its blocks with the dense layers', checked the same way in plain loops and with tfjs.
 */
import * as tf from '@tensorflow/tfjs';
import type { EncoderType } from '../../src/config/settings';
import { memoryLogger } from '../../src/common/logger';
import { SeededRandom } from '../../src/common/random';
import { ActionSpec, BehaviorSpec, ObservationType } from '../../src/env/behavior-spec';
import { selectBackend } from '../../src/networks/backend';
import { sizeOf } from '../../src/networks/layers/layer';
import { QNetwork } from '../../src/networks/q-network';
import { network, observations, vectorObservation, visualObservation } from './model-fixtures';
import { centralDifference } from '../helpers/finite-differences';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

const COUNT = 3;
const ACTIONS = 2;
const OUTPUTS = 3;

/** A vector, an image, another vector: the encodings sit between the vector values. */
function imageBehavior(side: number): BehaviorSpec {
  return {
    observationSpecs: [vectorObservation(2), visualObservation(2, side, side), vectorObservation(1)],
    actionSpec: ActionSpec.createContinuous(ACTIONS),
  };
}

function qNetwork(spec: BehaviorSpec, encoder: EncoderType, hidden: number): QNetwork {
  const settings = { network: network({ hidden_units: hidden, num_layers: 2, vis_encode_type: encoder }), continuousActions: ACTIONS, outputs: OUTPUTS };
  return new QNetwork(spec, settings, new SeededRandom(4));
}

/** The vector observations side by side, as ActorCritic.networkInputs gives them (unnormalized here). */
function vectorRows(spec: BehaviorSpec, obs: Float32Array[]): Float32Array {
  const vectors = spec.observationSpecs.map((s, k) => [s, obs[k]] as const).filter(([s]) => s.shape.length === 1);
  const width = vectors.reduce((total, [s]) => total + s.shape[0], 0);
  const rows = new Float32Array(COUNT * width);
  for (let i = 0; i < COUNT; i++) {
    let column = 0;
    for (const [s, values] of vectors) {
      for (let f = 0; f < s.shape[0]; f++) rows[i * width + column + f] = values[i * s.shape[0] + f];
      column += s.shape[0];
    }
  }
  return rows;
}

describe.each<[EncoderType, number, number, boolean]>([
  ['simple', 20, 6, false],
  ['fully_connected', 3, 6, false],
  ['fully_connected', 3, 40, true],
])('QNetwork with a %s-encoded image (%d-pixel sides), %d hidden units', (encoder, side, hidden, usesTensors) => {
  it(`backpropagates to every parameter block and to the actions as finite differences say (${usesTensors ? 'tfjs' : 'plain loops'})`, () => {
    const spec = imageBehavior(side);
    const q = qNetwork(spec, encoder, hidden);
    expect(q.usesTensors).toBe(usesTensors);
    const random = new SeededRandom(9);
    // Biases start at zero: give them values so that their gradients are tested.
    for (const block of q.blocks) {
      if (!block.name.endsWith('.bias')) continue;
      for (let k = 0; k < sizeOf(block.shape); k++) q.parameters[block.offset + k] = 0.1 * random.gaussian();
    }
    q.parametersChanged();
    const obs = observations(spec, COUNT, random);
    const vectors = vectorRows(spec, obs);
    const actions = new Float32Array(COUNT * ACTIONS).map(() => random.range(-1, 1));
    const weights = new Float32Array(COUNT * OUTPUTS).map(() => random.gaussian());
    const loss = (): number =>
      tf.tidy(() => {
        const out = q.forward(q.encode(obs, vectors, COUNT, false), actions, COUNT);
        return out.reduce((total, value, k) => total + value * weights[k], 0);
      });

    let actionGradient!: Float32Array;
    tf.tidy(() => {
      const encoded = q.encode(obs, vectors, COUNT, true);
      const width = 2 + hidden + 1;
      expect(encoded.length).toBe(COUNT * width);
      // The vector values keep their columns around the image's encoding.
      for (let i = 0; i < COUNT; i++) {
        expect(encoded[i * width]).toBe(vectors[i * 3]);
        expect(encoded[i * width + width - 1]).toBe(vectors[i * 3 + 2]);
      }
      q.forward(encoded, actions, COUNT);
      actionGradient = q.backward(weights, true);
    });
    const gradient = Float32Array.from(q.gradient);

    // Small: a step of a convolution's bias moves every position of its channel, and a larger one
    // would take some across the leaky ReLU's kink.
    const numeric = (values: Float32Array, index: number, changed: () => void): number => centralDifference(values, index, 1e-3, loss, changed);
    const expectMatches = (values: Float32Array, analytic: Float32Array, indices: number[], changed: () => void, what: string): void => {
      const largest = [...indices].sort((a, b) => Math.abs(analytic[b]) - Math.abs(analytic[a])).slice(0, 4);
      expect(Math.abs(analytic[largest[0]])).toBeGreaterThan(1e-4);
      for (const index of largest) {
        const expected = numeric(values, index, changed);
        if (Math.abs(expected - analytic[index]) > 2e-3 + 0.03 * Math.abs(expected)) {
          throw new Error(`${what}[${index}]: backward gives ${analytic[index]}, finite differences ${expected}`);
        }
      }
    };
    const range = (start: number, length: number) => Array.from({ length }, (_, k) => start + k);

    // The dense layers' blocks first, the encoder's after them (the layout Q checkpoints have).
    const inputs = 2 + hidden + 1 + ACTIONS;
    const denseSize = (inputs + 1) * hidden + (hidden + 1) * hidden + (hidden + 1) * OUTPUTS;
    const encoderBlocks = q.blocks.filter((block) => block.name.startsWith('body.encoders.1.'));
    expect(encoderBlocks.length).toBeGreaterThan(0);
    expect(Math.min(...encoderBlocks.map((block) => block.offset))).toBe(denseSize);
    expect(q.parameters.length).toBe(q.blocks.reduce((total, block) => total + sizeOf(block.shape), 0));
    const changed = () => q.parametersChanged();
    for (const block of q.blocks) expectMatches(q.parameters, gradient, range(block.offset, sizeOf(block.shape)), changed, block.name);
    expectMatches(actions, actionGradient, range(0, actions.length), () => undefined, 'the actions');
  });
});

describe('QNetwork without images', () => {
  it('is its dense layers, laid out and drawn as always: Swish layers, then a Xavier-drawn head', () => {
    const spec: BehaviorSpec = { observationSpecs: [vectorObservation(3)], actionSpec: ActionSpec.createContinuous(1) };
    const settings = { network: network({ hidden_units: 8, num_layers: 1 }), continuousActions: 1, outputs: 1 };
    const q = new QNetwork(spec, settings, new SeededRandom(2));
    expect(q.blocks.map((b) => `${b.name}@${b.offset}`)).toEqual(['body.layers.0.weight@0', 'body.layers.0.bias@32', 'head.weight@40', 'head.bias@48']);
    // The draws in order: the layer's 32 weights (normal, std 1/2), then the head's 8 (uniform in +-sqrt(6/9)).
    const draws = new SeededRandom(2);
    const layerWeights = Array.from({ length: 32 }, () => 0.5 * draws.gaussian());
    const headWeights = Array.from({ length: 8 }, () => draws.range(-Math.sqrt(6 / 9), Math.sqrt(6 / 9)));
    expectArrayClose(q.parameters.subarray(0, 32), layerWeights);
    expectArrayClose(q.parameters.subarray(40, 48), headWeights);
    const rows = Float32Array.from([0.5, -1, 2, 1, 0, -0.5]);
    const action = Float32Array.from([0.3, -0.7]);
    expect(q.encode([rows], rows, 2, true)).toBe(rows);
    const expected = [0, 1].map((i) => {
      const x = [...rows.subarray(3 * i, 3 * i + 3), action[i]];
      let q = 0;
      for (let h = 0; h < 8; h++) {
        const z = x.reduce((t, v, k) => t + v * layerWeights[h * 4 + k], 0);
        q += headWeights[h] * (z / (1 + Math.exp(-z)));
      }
      return q;
    });
    expectArrayClose(q.forward(rows, action, 2), expected);
  });
});

describe.each<[number, boolean]>([
  [6, false],
  [48, true],
])('QNetwork with memory, %d hidden units', (hidden, usesTensors) => {
  const SEQUENCE = 3;
  const ROWS = 2 * SEQUENCE;
  const spec: BehaviorSpec = { observationSpecs: [vectorObservation(3)], actionSpec: ActionSpec.createContinuous(ACTIONS) };
  const memory = { memory_size: 8, sequence_length: SEQUENCE };
  const make = () =>
    new QNetwork(spec, { network: network({ hidden_units: hidden, num_layers: 2, memory }), continuousActions: ACTIONS, outputs: OUTPUTS }, new SeededRandom(6));

  it(`ends its body in an LSTM whose blocks sit between the layers and the head (${usesTensors ? 'tfjs' : 'plain loops'})`, () => {
    const q = make();
    expect(q.usesTensors).toBe(usesTensors);
    expect(q.sequenceLength).toBe(SEQUENCE);
    const names = q.blocks.map((block) => block.name);
    expect(names.slice(-6)).toEqual(['body.lstm.weight_ih', 'body.lstm.weight_hh', 'body.lstm.bias_ih', 'body.lstm.bias_hh', 'head.weight', 'head.bias']);
    expect(q.blocks.find((block) => block.name === 'head.weight')!.shape).toEqual([OUTPUTS, memory.memory_size / 2]);
    expect(q.parameters.length).toBe(q.blocks.reduce((total, block) => total + sizeOf(block.shape), 0));
    // Contiguous and in order: a checkpoint's vector is the blocks one after another.
    q.blocks.reduce((offset, block) => {
      expect(block.offset).toBe(offset);
      return offset + sizeOf(block.shape);
    }, 0);
    expect(() => q.forward(new Float32Array(4 * 3), new Float32Array(4 * ACTIONS), 4)).toThrow(/whole sequences of 3 rows/);
  });

  it('runs each sequence from zero memories: a sequence gives the same Q values alone or after another', () => {
    const q = make();
    const random = new SeededRandom(3);
    const rows = new Float32Array(ROWS * 3).map(() => random.gaussian());
    const actions = new Float32Array(ROWS * ACTIONS).map(() => random.range(-1, 1));
    const both = tf.tidy(() => q.forward(rows, actions, ROWS));
    const second = tf.tidy(() => q.forward(rows.slice(SEQUENCE * 3), actions.slice(SEQUENCE * ACTIONS), SEQUENCE));
    expectArrayClose(both.subarray(SEQUENCE * OUTPUTS), Array.from(second));
  });

  it('backpropagates through time to every block and to the actions as finite differences say', () => {
    const q = make();
    const random = new SeededRandom(8);
    for (const block of q.blocks) {
      if (!block.name.includes('bias')) continue;
      for (let k = 0; k < sizeOf(block.shape); k++) q.parameters[block.offset + k] = 0.1 * random.gaussian();
    }
    q.parametersChanged();
    const rows = new Float32Array(ROWS * 3).map(() => random.gaussian());
    const actions = new Float32Array(ROWS * ACTIONS).map(() => random.range(-1, 1));
    const weights = new Float32Array(ROWS * OUTPUTS).map(() => random.gaussian());
    const loss = (): number => tf.tidy(() => q.forward(rows, actions, ROWS).reduce((total, value, k) => total + value * weights[k], 0));
    let actionGradient!: Float32Array;
    tf.tidy(() => {
      q.forward(rows, actions, ROWS);
      actionGradient = q.backward(weights, true);
    });
    const gradient = Float32Array.from(q.gradient);
    const check = (values: Float32Array, analytic: Float32Array, start: number, length: number, changed: () => void, what: string): void => {
      const indices = Array.from({ length }, (_, k) => start + k);
      const largest = indices.sort((a, b) => Math.abs(analytic[b]) - Math.abs(analytic[a])).slice(0, 5);
      expect(Math.abs(analytic[largest[0]])).toBeGreaterThan(1e-4);
      for (const index of largest) {
        const expected = centralDifference(values, index, 1e-2, loss, changed);
        if (Math.abs(expected - analytic[index]) > 2e-3 + 0.03 * Math.abs(expected)) {
          throw new Error(`${what}[${index}]: backward gives ${analytic[index]}, finite differences ${expected}`);
        }
      }
    };
    for (const block of q.blocks) check(q.parameters, gradient, block.offset, sizeOf(block.shape), () => q.parametersChanged(), block.name);
    check(actions, actionGradient, 0, actions.length, () => undefined, 'the actions');
  });
});

function expectArrayClose(actual: ArrayLike<number>, expected: readonly number[]): void {
  expect(actual.length).toBe(expected.length);
  expected.forEach((value, k) => expect(actual[k]).toBeCloseTo(value, 5));
}

describe.each([
  [4, false],
  [24, true],
])('QNetwork conditioned on a goal signal, %d hidden units', (hidden, usesTensors) => {
  it(`backpropagates to every block and to the actions as finite differences say (${usesTensors ? 'tfjs' : 'plain loops'})`, () => {
    const spec: BehaviorSpec = { observationSpecs: [vectorObservation(2), vectorObservation(2, ObservationType.GOAL_SIGNAL)], actionSpec: ActionSpec.createContinuous(ACTIONS) };
    const q = new QNetwork(spec, { network: network({ hidden_units: hidden, num_layers: 2 }), continuousActions: ACTIONS, outputs: OUTPUTS }, new SeededRandom(4));
    expect(q.usesTensors).toBe(usesTensors);
    expect(q.blocks.filter((b) => b.name.startsWith('body.layers.1.hypernet.')).map((b) => b.name)).toHaveLength(6);
    expect(q.parameters.length).toBe(q.blocks.reduce((total, block) => total + sizeOf(block.shape), 0));
    const random = new SeededRandom(8);
    for (const block of q.blocks) {
      if (!block.name.endsWith('bias')) continue;
      for (let k = 0; k < sizeOf(block.shape); k++) q.parameters[block.offset + k] = 0.1 * random.gaussian();
    }
    q.parametersChanged();
    const rows = new Float32Array(COUNT * 4).map(() => random.gaussian());
    const actions = new Float32Array(COUNT * ACTIONS).map(() => random.range(-1, 1));
    const weights = new Float32Array(COUNT * OUTPUTS).map(() => random.gaussian());
    const loss = (): number => tf.tidy(() => q.forward(rows, actions, COUNT).reduce((total, value, k) => total + value * weights[k], 0));
    let actionGradient!: Float32Array;
    tf.tidy(() => {
      q.forward(rows, actions, COUNT);
      actionGradient = q.backward(weights, true);
    });
    const gradient = Float32Array.from(q.gradient);
    const check = (values: Float32Array, analytic: Float32Array, start: number, length: number, changed: () => void, what: string): void => {
      const indices = Array.from({ length }, (_, k) => start + k);
      const largest = indices.sort((a, b) => Math.abs(analytic[b]) - Math.abs(analytic[a])).slice(0, 4);
      expect(Math.abs(analytic[largest[0]])).toBeGreaterThan(1e-4);
      for (const index of largest) {
        const expected = centralDifference(values, index, 1e-3, loss, changed);
        if (Math.abs(expected - analytic[index]) > 2e-3 + 0.03 * Math.abs(expected)) {
          throw new Error(`${what}[${index}]: backward gives ${analytic[index]}, finite differences ${expected}`);
        }
      }
    };
    for (const block of q.blocks) check(q.parameters, gradient, block.offset, sizeOf(block.shape), () => q.parametersChanged(), block.name);
    check(actions, actionGradient, 0, actions.length, () => undefined, 'the actions');
  });
});
