/**
 * The variable-length observations' encoder (upstream's x_self encoder, EntityEmbedding, zero
 * entity masks and ResidualSelfAttention, composed as its ObservationEncoder does) against
 * upstream's own (torch_entities/attention.py, release_21): on the weights of
 * fixtures/entity-attention.json (recorded with torch by the script beside it), ours gives
 * upstream's masks, output and the gradients torch's autograd gave, of every weight and of
 * x_self. Its initialization is upstream's.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../../../src/common/logger';
import { SeededRandom } from '../../../src/common/random';
import { selectBackend } from '../../../src/networks/backend';
import { EntityAttentionEncoder, EntityObservation } from '../../../src/networks/encoders/entity-attention';
import { blockValues, sizeOf } from '../../../src/networks/layers/layer';
import { parameterStore } from '../../helpers/parameter-store';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

interface Fixture {
  self: number[];
  entities: number[][];
  mask: number[];
  parameters: Record<string, number[]>;
  shapes: Record<string, number[]>;
  output: number[];
  output_gradient: number[];
  self_gradient: number[];
  gradients: Record<string, number[]>;
}

const fixture = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'entity-attention.json'), 'utf8')) as Fixture;
const SELF = 6;
const EMBEDDING = 8;
const COUNT = fixture.self.length / SELF;
const OBSERVATIONS: EntityObservation[] = [
  { observation: 0, maxEntities: 4, entitySize: 5 },
  { observation: 1, maxEntities: 3, entitySize: 5 },
];

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
  const encoder = new EntityAttentionEncoder(store.allocate, 'enc', SELF, OBSERVATIONS, EMBEDDING);
  const source = store.source();
  const torchName = (name: string) => name.replace(/^enc\./, '');
  expect(store.blocks.map((b) => torchName(b.name)).sort()).toEqual(Object.keys(fixture.parameters).sort());
  for (const block of store.blocks) {
    expect(block.shape).toEqual(fixture.shapes[torchName(block.name)]);
    blockValues(source.parameters, block).set(fixture.parameters[torchName(block.name)]);
  }
  return { encoder, source, blocks: store.blocks, torchName };
}

describe('EntityAttentionEncoder against upstream\'s (torch)', () => {
  it('masks the entities upstream masks: all squares summing under 0.01', () => {
    const { encoder } = upstreamEncoder();
    expect(Array.from(encoder.zeroEntityMask(fixture.entities.map((e) => Float32Array.from(e)), COUNT))).toEqual(fixture.mask);
  });

  it('gives upstream\'s output and gradients, of every weight and of x_self', () => {
    const { encoder, source, blocks, torchName } = upstreamEncoder();
    const observations = fixture.entities.map((e) => Float32Array.from(e));
    const { output, selfGradient } = tf.tidy(() => {
      const out = encoder.forward(tf.tensor2d(fixture.self, [COUNT, SELF]), observations, COUNT, source, true);
      const gradient = encoder.backward(tf.tensor2d(fixture.output_gradient, [COUNT, EMBEDDING]), source, true)!;
      return { output: out.dataSync().slice(), selfGradient: gradient.dataSync().slice() };
    });
    expectClose(output, fixture.output, 'output');
    expectClose(selfGradient, fixture.self_gradient, 'x_self gradient');
    for (const block of blocks) expectClose(blockValues(source.gradient, block), fixture.gradients[torchName(block.name)], `${block.name} gradient`);
    encoder.dispose();
  });

  it('an agent whose entities are all padding gets zeros, as upstream\'s pooling over no entity', () => {
    const { encoder, source } = upstreamEncoder();
    const observations = fixture.entities.map((e) => new Float32Array(e.length));
    const output = tf.tidy(() => encoder.forward(tf.tensor2d(fixture.self, [COUNT, SELF]), observations, COUNT, source, false).dataSync().slice());
    expect(Array.from(output).every((v) => v === 0)).toBe(true);
    encoder.dispose();
  });
});

describe('EntityAttentionEncoder on batches padded at the end', () => {
  it('runs the entity columns some agent fills with the numbers of a pass over every column', () => {
    // Agents 0 and 1 leave the first observation's last entity empty (upstream's mask says so);
    // agent 2 fills it, so a pass over all three runs every column. With agent 2's output
    // gradient zero, both passes must give agents 0 and 1 the same output, x_self gradient and
    // weight gradients.
    expect([fixture.mask[3], fixture.mask[7 + 3], fixture.mask[14 + 3]]).toEqual([1, 1, 0]);
    const run = (count: number) => {
      const { encoder, source, blocks } = upstreamEncoder();
      const observations = fixture.entities.map((e) => Float32Array.from(e.slice(0, (e.length / COUNT) * count)));
      const outputGradient = fixture.output_gradient.map((g, i) => (i < 2 * EMBEDDING ? g : 0)).slice(0, count * EMBEDDING);
      const result = tf.tidy(() => {
        const out = encoder.forward(tf.tensor2d(fixture.self.slice(0, count * SELF), [count, SELF]), observations, count, source, true);
        const gradient = encoder.backward(tf.tensor2d(outputGradient, [count, EMBEDDING]), source, true)!;
        return { output: out.dataSync().slice(0, 2 * EMBEDDING), selfGradient: gradient.dataSync().slice(0, 2 * SELF) };
      });
      const gradients = blocks.map((block) => blockValues(source.gradient, block).slice());
      encoder.dispose();
      return { ...result, gradients };
    };
    const all = run(3);
    const firstTwo = run(2);
    expectClose(firstTwo.output, all.output, 'output');
    expectClose(firstTwo.selfGradient, all.selfGradient, 'x_self gradient');
    firstTwo.gradients.forEach((gradient, b) => expectClose(gradient, all.gradients[b], `block ${b} gradient`));
  });
});

describe('EntityAttentionEncoder initialization', () => {
  it('draws as upstream: every weight from a normal of std sqrt(0.125 / 128), biases 0', () => {
    const store = parameterStore();
    const encoder = new EntityAttentionEncoder(store.allocate, 'enc', 40, [{ observation: 1, maxEntities: 10, entitySize: 5 }]);
    const source = store.source();
    source.parameters.fill(Number.NaN);
    encoder.initialize(source.parameters, new SeededRandom(3));
    expect(store.blocks.map((b) => [b.name, b.shape])).toEqual([
      ['enc.x_self_encoder.seq_layers.0.weight', [128, 40]],
      ['enc.x_self_encoder.seq_layers.0.bias', [128]],
      ['enc.1.self_ent_encoder.seq_layers.0.weight', [128, 133]],
      ['enc.1.self_ent_encoder.seq_layers.0.bias', [128]],
      ...['fc_q', 'fc_k', 'fc_v', 'fc_out'].flatMap((fc) => [
        [`enc.rsa.${fc}.weight`, [128, 128]],
        [`enc.rsa.${fc}.bias`, [128]],
      ]),
    ]);
    for (const block of store.blocks) {
      const values = blockValues(source.parameters, block);
      if (block.name.endsWith('bias')) {
        expect(values.every((v) => v === 0)).toBe(true);
        continue;
      }
      const std = Math.sqrt(values.reduce((t, x) => t + x * x, 0) / sizeOf(block.shape));
      expect(std).toBeGreaterThan(0.95 * Math.sqrt(0.125 / 128));
      expect(std).toBeLessThan(1.05 * Math.sqrt(0.125 / 128));
    }
  });
});
