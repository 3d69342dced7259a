/**
 * A dense layer's ways of running the same arithmetic (batch first with tfjs, feature-major with
 * tfjs, as an output layer read in JavaScript too, plain loops) give the same outputs and
 * gradients, with and without Swish and with several output parts, and so do the body encoders
 * built of them (LinearEncoder, ConditionalEncoder); the parts' blocks lie as one weight matrix
 * and one bias vector, each drawn with its own initialization. (The batch-first way is checked
 * against tfjs's autodiff in layers.test.ts.)
 */
import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../../../src/common/logger';
import { SeededRandom } from '../../../src/common/random';
import { selectBackend } from '../../../src/networks/backend';
import { Dense, DenseActivation, linearLayer } from '../../../src/networks/layers/dense';
import { BodyEncoder, LinearEncoder } from '../../../src/networks/layers/linear-encoder';
import { ConditionalEncoder } from '../../../src/networks/layers/conditional-encoder';
import { ParameterAllocator, ParameterSource, blockValues, sizeOf } from '../../../src/networks/layers/layer';
import { parameterStore } from '../../helpers/parameter-store';
import { runPass } from '../../../src/networks/tensor-io';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

const random = (seed: number, size: number) => {
  const r = new SeededRandom(seed);
  return Float32Array.from({ length: size }, () => r.gaussian());
};

function transpose(values: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(values.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = values[r * cols + c];
  return out;
}

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    if (Math.abs(actual[i] - expected[i]) > 1e-4 * (1 + Math.abs(expected[i]))) {
      throw new Error(`${what}[${i}]: ${actual[i]}, expected ${expected[i]}`);
    }
  }
}

/** A layer or a stack with its three ways: forward on count x inputs rows, backward from count x outputs. */
interface ThreeWays {
  readonly inputs: number;
  readonly outputs: number;
  rows(x: Float32Array, dy: Float32Array, count: number, source: ParameterSource): { y: Float32Array; dx: Float32Array };
  columns(x: Float32Array, dy: Float32Array, count: number, source: ParameterSource, withInputRows: boolean): { y: Float32Array; dx: Float32Array };
  javaScript(x: Float32Array, dy: Float32Array, count: number, source: ParameterSource): { y: Float32Array; dx: Float32Array };
  /** The feature-major way of an output layer the loss reads in JavaScript (linear layers). */
  outputColumns(x: Float32Array, dy: Float32Array, count: number, source: ParameterSource): { y: Float32Array; dx: Float32Array };
}

function threeWays(layer: Dense | BodyEncoder, inputs: number, outputs: number): ThreeWays {
  return {
    inputs,
    outputs,
    rows: (x, dy, count, source) =>
      tf.tidy(() => {
        const y = layer.forward(tf.tensor2d(x, [count, inputs]), source, true).dataSync() as Float32Array;
        const dx = layer.backward(tf.tensor2d(dy, [count, outputs]), source, true)!.dataSync() as Float32Array;
        return { y: y.slice(), dx: dx.slice() };
      }),
    columns: (x, dy, count, source, withInputRows) =>
      tf.tidy(() => {
        const y = layer.forwardColumns(tf.tensor2d(transpose(x, count, inputs), [inputs, count]), source, true).dataSync() as Float32Array;
        const inputRows = withInputRows ? tf.tensor2d(x, [count, inputs]) : undefined;
        const dx = layer.backwardColumns(tf.tensor2d(transpose(dy, count, outputs), [outputs, count]), source, true, inputRows)!;
        return { y: transpose(y as Float32Array, outputs, count), dx: transpose(dx.dataSync() as Float32Array, inputs, count) };
      }),
    javaScript: (x, dy, count, source) => ({
      y: layer.forwardInJavaScript(x, count, source.parameters, true),
      dx: layer.backwardInJavaScript(dy, source.parameters, source.gradient, true)!,
    }),
    outputColumns: (x, dy, count, source) =>
      tf.tidy(() => {
        if (!(layer instanceof Dense)) throw new Error('output layers are Dense');
        const y = runPass(layer.forwardOutputColumns(tf.tensor2d(transpose(x, count, inputs), [inputs, count]), source, true));
        const dx = layer.backwardOutputColumns(transpose(dy, count, outputs), source, true)!;
        return { y: transpose(y, outputs, count), dx: transpose(dx.dataSync() as Float32Array, inputs, count) };
      }),
  };
}

function expectSameThreeWays(build: (allocate: ParameterAllocator) => Dense | BodyEncoder, inputs: number, outputs: number): void {
  const { allocate, blocks, source } = parameterStore();
  const layer = build(allocate);
  const s = source();
  layer.initialize(s.parameters, new SeededRandom(3));
  for (const block of blocks) if (block.name.endsWith('.bias')) blockValues(s.parameters, block).set(random(9, sizeOf(block.shape)));
  const ways = threeWays(layer, inputs, outputs);
  for (const count of [1, 6]) {
    const x = random(count, count * inputs);
    const dy = random(count + 100, count * outputs);
    const reference = ways.rows(x, dy, count, s);
    const referenceGradient = s.gradient.slice();
    expect(referenceGradient.some((g) => g !== 0)).toBe(true);
    const results = {
      'columns': ways.columns(x, dy, count, s, false),
      'columns given the input rows': ways.columns(x, dy, count, s, true),
      'JavaScript': ways.javaScript(x, dy, count, s),
      ...(layer instanceof Dense && layer.activation === 'linear' ? { 'output columns': ways.outputColumns(x, dy, count, s) } : {}),
    };
    for (const [way, run] of Object.entries(results)) {
      // Each way writes the whole gradient: the next one starts from garbage.
      const gradient = s.gradient.slice();
      s.gradient.fill(Number.NaN);
      expectClose(run.y, reference.y, `${way} output`);
      expectClose(run.dx, reference.dx, `${way} input gradient`);
      expectClose(gradient, referenceGradient, `${way} parameter gradient`);
    }
  }
}

describe('Dense, three ways', () => {
  it.each<[string, DenseActivation, number, number]>([
    ['linear, fewer outputs than inputs (a head)', 'linear', 7, 3],
    ['linear, more outputs than inputs', 'linear', 3, 7],
    ['Swish', 'swish', 5, 5],
  ])('%s', (_, activation, inputs, outputs) => {
    expectSameThreeWays((allocate) => linearLayer(allocate, 'dense', inputs, outputs, { kind: 'kaimingNormal', gain: 1 }, activation), inputs, outputs);
  });

  it('with output parts', () => {
    const parts = [
      { name: 'mu', size: 2, init: { kind: 'kaimingNormal', gain: 0.2 } as const },
      { name: 'value', size: 1, init: { kind: 'xavierUniform', gain: 1 } as const },
    ];
    expectSameThreeWays((allocate) => new Dense(allocate, 6, parts), 6, 3);
  });

  it('LinearEncoder, a stack of them', () => {
    expectSameThreeWays((allocate) => new LinearEncoder(allocate, 'layers', 4, 6, 3), 4, 6);
  });

  it('ConditionalEncoder: a dense layer, then a hypernetwork on input columns 0 and 2', () => {
    expectSameThreeWays((allocate) => new ConditionalEncoder(allocate, 'layers', 4, [0, 2], 6, 2), 4, 6);
  });
});

describe('Dense output parts', () => {
  it('lie as one weight matrix then one bias vector, each part drawn with its own initialization', () => {
    const { allocate, blocks, source } = parameterStore();
    const layer = new Dense(allocate, 64, [
      { name: 'heads.a', size: 3, init: { kind: 'kaimingNormal', gain: 0.1 } },
      { name: 'heads.b', size: 2, init: { kind: 'xavierUniform', gain: 1 } },
    ]);
    expect(blocks.map((b) => `${b.name}@${b.offset}`)).toEqual(['heads.a.weight@0', 'heads.b.weight@192', 'heads.a.bias@320', 'heads.b.bias@323']);
    expect([layer.weightOffset, layer.biasOffset, layer.outputs]).toEqual([0, 320, 5]);
    expect(layer.parts.map((p) => p.row)).toEqual([0, 3]);
    const s = source();
    layer.initialize(s.parameters, new SeededRandom(1));
    const a = blockValues(s.parameters, blocks[0]);
    const b = blockValues(s.parameters, blocks[1]);
    const std = Math.sqrt(a.reduce((t, v) => t + v * v, 0) / a.length);
    expect(std).toBeGreaterThan(0.1 / 8 / 1.5);
    expect(std).toBeLessThan(0.1 / 8 * 1.5);
    const bound = Math.sqrt(6 / (64 + 2));
    expect(Math.max(...b.map(Math.abs))).toBeLessThanOrEqual(bound);
    expect(Math.max(...b.map(Math.abs))).toBeGreaterThan(bound * 0.8);
  });

  it('refuses an allocator that does not keep the parts together, naming the part', () => {
    let offset = 0;
    const scattered: ParameterAllocator = (name, shape) => {
      offset += sizeOf(shape) + 1;
      return { name, offset, shape };
    };
    expect(() => new Dense(scattered, 4, [{ name: 'x', size: 1, init: { kind: 'kaimingNormal', gain: 1 } }, { name: 'y', size: 1, init: { kind: 'kaimingNormal', gain: 1 } }])).toThrow(
      "The allocator must place y's blocks after the other parts'",
    );
  });
});
