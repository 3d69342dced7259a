/**
 * The ConditionalEncoder against upstream's own (torch_entities/conditioning.py, release_21): on
 * the weights of fixtures/conditional-encoder.json (recorded with torch by the script beside it),
 * ours gives upstream's output and the gradients torch's autograd gave, of every weight and of
 * the input (reached both as the input and as the goal), batch first with tfjs and in plain loops.
 * Its initialization is upstream's.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../../../src/common/logger';
import { SeededRandom } from '../../../src/common/random';
import { selectBackend } from '../../../src/networks/backend';
import { ConditionalEncoder } from '../../../src/networks/layers/conditional-encoder';
import { ParameterBlock, blockValues, sizeOf } from '../../../src/networks/layers/layer';
import { parameterStore } from '../../helpers/parameter-store';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

interface Fixture {
  goal_columns: number[];
  input: number[];
  parameters: Record<string, number[]>;
  shapes: Record<string, number[]>;
  output: number[];
  output_gradient: number[];
  input_gradient: number[];
  gradients: Record<string, number[]>;
}

const fixture = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'conditional-encoder.json'), 'utf8')) as Fixture;
const INPUTS = 5;
const HIDDEN = 4;
const COUNT = fixture.input.length / INPUTS;

/** Upstream's name for our block: its ModuleList puts a Swish after each layer, so layer l is module 2l. */
function torchName(block: string): string {
  return block.replace(/^body\.(\d+)\./, (_, l: string) => `layers.${2 * Number(l)}.`);
}

/**
 * A torch tensor's values in our block's layout: the same, but for the hypernetwork's last
 * weight, which torch keeps as [I O, H] and we as [H, I, O].
 */
function inOurLayout(block: ParameterBlock, values: number[]): Float32Array {
  if (!block.name.endsWith('hypernet.5.weight')) return Float32Array.from(values);
  const [h, inputs, outputs] = block.shape;
  const ours = new Float32Array(values.length);
  for (let k = 0; k < h; k++) for (let j = 0; j < inputs * outputs; j++) ours[k * inputs * outputs + j] = values[j * h + k];
  return ours;
}

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    if (!(Math.abs(actual[i] - expected[i]) <= 1e-5 + 1e-4 * Math.abs(expected[i]))) {
      throw new Error(`${what}[${i}]: ${actual[i]}, upstream ${expected[i]}`);
    }
  }
}

function upstreamEncoder() {
  const store = parameterStore();
  const encoder = new ConditionalEncoder(store.allocate, 'body', INPUTS, fixture.goal_columns, HIDDEN, 2);
  const source = store.source();
  expect(store.blocks.map((b) => torchName(b.name)).sort()).toEqual(Object.keys(fixture.parameters).sort());
  for (const block of store.blocks) {
    const name = torchName(block.name);
    expect(sizeOf(block.shape)).toBe(sizeOf(fixture.shapes[name]));
    blockValues(source.parameters, block).set(inOurLayout(block, fixture.parameters[name]));
  }
  return { encoder, source, blocks: store.blocks };
}

describe('ConditionalEncoder against upstream\'s (torch)', () => {
  it.each(['tfjs, batch first', 'plain loops'])('gives upstream\'s output and gradients: %s', (way) => {
    const { encoder, source, blocks } = upstreamEncoder();
    const input = Float32Array.from(fixture.input);
    const outputGradient = Float32Array.from(fixture.output_gradient);
    const { output, inputGradient } =
      way === 'plain loops'
        ? {
            output: encoder.forwardInJavaScript(input, COUNT, source.parameters, true),
            inputGradient: encoder.backwardInJavaScript(outputGradient, source.parameters, source.gradient, true)!,
          }
        : tf.tidy(() => ({
            output: encoder.forward(tf.tensor2d(input, [COUNT, INPUTS]), source, true).dataSync().slice() as Float32Array,
            inputGradient: encoder.backward(tf.tensor2d(outputGradient, [COUNT, HIDDEN]), source, true)!.dataSync().slice() as Float32Array,
          }));
    expectClose(output, fixture.output, 'output');
    expectClose(inputGradient, fixture.input_gradient, 'input gradient');
    for (const block of blocks) {
      expectClose(blockValues(source.gradient, block), inOurLayout(block, fixture.gradients[torchName(block.name)]), `${block.name} gradient`);
    }
    encoder.dispose();
  });
});

describe('ConditionalEncoder initialization', () => {
  it('draws as upstream: dense and hypernetwork MLP layers KaimingHeNormal, the generating layer uniform in +-sqrt(1 / (H I)), biases 0', () => {
    const store = parameterStore();
    const inputs = 40;
    const hidden = 32;
    const encoder = new ConditionalEncoder(store.allocate, 'body', inputs, [0, 1, 2], hidden, 2);
    const source = store.source();
    source.parameters.fill(Number.NaN);
    encoder.initialize(source.parameters, new SeededRandom(5));
    const values = (name: string) => blockValues(source.parameters, store.blocks.find((b) => b.name === name)!);
    const std = (v: Float32Array) => Math.sqrt(v.reduce((t, x) => t + x * x, 0) / v.length);

    for (const [name, fanIn] of [['body.0.weight', inputs], ['body.1.hypernet.0.weight', 3], ['body.1.hypernet.2.weight', hidden]] as const) {
      expect(std(values(name))).toBeGreaterThan(0.85 / Math.sqrt(fanIn));
      expect(std(values(name))).toBeLessThan(1.15 / Math.sqrt(fanIn));
    }
    const generating = values('body.1.hypernet.5.weight');
    expect(generating.length).toBe(hidden * hidden * hidden);
    const bound = Math.sqrt(1 / (hidden * hidden));
    expect(Math.max(...generating.map(Math.abs))).toBeLessThanOrEqual(bound);
    expect(Math.max(...generating.map(Math.abs))).toBeGreaterThan(0.99 * bound);
    // A uniform's standard deviation is its bound / sqrt(3).
    expect(std(generating)).toBeCloseTo(bound / Math.sqrt(3), 3);
    for (const block of store.blocks.filter((b) => b.name.endsWith('bias'))) expect(blockValues(source.parameters, block).every((v) => v === 0)).toBe(true);
    expect(store.blocks.map((b) => b.name)).toEqual([
      'body.0.weight',
      'body.0.bias',
      'body.1.hypernet.0.weight',
      'body.1.hypernet.0.bias',
      'body.1.hypernet.2.weight',
      'body.1.hypernet.2.bias',
      'body.1.hypernet.5.weight',
      'body.1.hypernet.5.bias',
      'body.1.bias',
    ]);
  });
});
