/**
 * POCA's critic (src/networks/poca-critic.ts): every parameter block's gradient of a loss on the
 * values and the baselines against finite differences (vector observations, an image, a
 * variable-length observation), absent groupmates masked (their slots, whatever they hold,
 * change nothing), groupmates' order irrelevant, goal signals as ordinary inputs, memory (through
 * time, and a trajectory run sequence after sequence), the member count's scaling, and the
 * checkpoint arrays.
 */
import { ActionSpec, BehaviorSpec, ObservationType } from '../../src/env/behavior-spec';
import { SeededRandom } from '../../src/common/random';
import { selectBackend } from '../../src/networks/backend';
import { memoryLogger } from '../../src/common/logger';
import { GroupActionBatch, PocaCritic } from '../../src/networks/poca-critic';
import { UnsupportedModelError } from '../../src/networks/unsupported-model';
import type { NetworkSettings } from '../../src/config/settings';
import {
  behavior,
  entityObservation,
  estimateLoss,
  expectGradientsAsFiniteDifferences,
  groupBatch,
  network,
  observations,
  vectorObservation,
  visualObservation,
} from './model-fixtures';

const SPEC = behavior([3, 2], new ActionSpec(2, [3, 2]));

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

function critic(overrides: Partial<NetworkSettings> = {}, spec: BehaviorSpec = SPEC): PocaCritic {
  return new PocaCritic(spec, network({ hidden_units: 8, num_layers: 2, ...overrides }), ['extrinsic', 'curiosity'], 3);
}

/** Moves every bias off 0 (where they start), so that every block has a gradient worth checking. */
function shakeBiases(net: PocaCritic): void {
  const random = new SeededRandom(11);
  for (const block of net.blocks) {
    if (block.name.endsWith('.bias')) for (let j = 0; j < block.shape[0]; j++) net.parameters[block.offset + j] = 0.3 * random.gaussian();
  }
  net.parametersChanged();
}

/**
 * Checks every block's gradient against finite differences on a batch of 6 samples of 3 slots,
 * 4 of them empty. A key bias adds the same score to every key of a query, which the softmax
 * takes away: its gradient is 0, and it is left out.
 */
function expectEveryBlockAsFiniteDifferences(net: PocaCritic, spec: BehaviorSpec): void {
  shakeBiases(net);
  const batch = groupBatch(spec, 6, 3, [[0, 2], [1, 1], [1, 2], [4, 0]], 2);
  const loss = estimateLoss(9);
  const checked = net.blocks.filter((block) => !block.name.endsWith('fc_k.bias'));
  expectGradientsAsFiniteDifferences(net, () => net.computeGradient(batch, loss), checked, 1e-2);
}

describe('POCA critic', () => {
  it('has upstream\'s blocks, and every one\'s gradient matches finite differences (normalized, with absent groupmates)', () => {
    const net = critic({ normalize: true });
    expect(net.blocks.map((b) => b.name)).toEqual([
      'critic.obs_encoder.self_ent_encoder.seq_layers.0.weight',
      'critic.obs_encoder.self_ent_encoder.seq_layers.0.bias',
      'critic.obs_action_encoder.self_ent_encoder.seq_layers.0.weight',
      'critic.obs_action_encoder.self_ent_encoder.seq_layers.0.bias',
      ...['fc_q', 'fc_k', 'fc_v', 'fc_out'].flatMap((fc) => [`critic.self_attn.${fc}.weight`, `critic.self_attn.${fc}.bias`]),
      'critic.linear_encoder.0.weight',
      'critic.linear_encoder.0.bias',
      'critic.linear_encoder.1.weight',
      'critic.linear_encoder.1.bias',
      'critic.value_heads.extrinsic.weight',
      'critic.value_heads.curiosity.weight',
      'critic.value_heads.extrinsic.bias',
      'critic.value_heads.curiosity.bias',
    ]);
    expect(net.block('critic.obs_action_encoder.self_ent_encoder.seq_layers.0.weight').shape).toEqual([8, 5 + 2 + 5]);
    expect(net.block('critic.value_heads.extrinsic.weight').shape).toEqual([1, 9]);
    net.updateNormalization(observations(SPEC, 20, new SeededRandom(5)), 20);
    shakeBiases(net);
    const batch = groupBatch(SPEC, 6, 3, [[0, 2], [1, 1], [1, 2], [4, 0]], 2);
    const loss = estimateLoss(9);
    // A key bias adds the same score to every key of a query, which the softmax takes away: its gradient is 0.
    const keyBias = net.block('critic.self_attn.fc_k.bias');
    const checked = net.blocks.filter((block) => block !== keyBias);
    expectGradientsAsFiniteDifferences(net, () => net.computeGradient(batch, loss), checked, 1e-2);
    const keyBiasGradient = net.computeGradient(batch, loss).gradient.subarray(keyBias.offset, keyBias.offset + 8);
    for (const g of keyBiasGradient) expect(Math.abs(g)).toBeLessThan(1e-7);
  });

  it('encodes each member\'s image with vis_encode_type\'s encoder (upstream\'s processors); every block as finite differences say', () => {
    const spec: BehaviorSpec = { observationSpecs: [visualObservation(2, 20, 20), vectorObservation(3)], actionSpec: new ActionSpec(1, [2]) };
    const net = critic({ normalize: true }, spec);
    const encoderBlocks = net.blocks.filter((b) => b.name.startsWith('critic.observation_encoder.')).map((b) => `${b.name} ${b.shape.join('x')}`);
    expect(encoderBlocks).toEqual([
      'critic.observation_encoder.0.conv_layers.0.weight 16x8x8x2',
      'critic.observation_encoder.0.conv_layers.0.bias 16',
      'critic.observation_encoder.0.conv_layers.2.weight 32x4x4x16',
      'critic.observation_encoder.0.conv_layers.2.bias 32',
      'critic.observation_encoder.0.dense.0.weight 8x32',
      'critic.observation_encoder.0.dense.0.bias 8',
    ]);
    // Each member's entity: the image's 8 encoded values, then the 3 vector values; then the action.
    expect(net.block('critic.obs_action_encoder.self_ent_encoder.seq_layers.0.weight').shape).toEqual([8, 8 + 3 + 1 + 2]);
    net.updateNormalization(observations(spec, 20, new SeededRandom(5)), 20);
    expectEveryBlockAsFiniteDifferences(net, spec);
  });

  it('encodes each member\'s variable-length observation with the entity attention, x_self its other observations; every block as finite differences say', () => {
    const spec: BehaviorSpec = { observationSpecs: [vectorObservation(3), entityObservation(4, 3)], actionSpec: new ActionSpec(2, []) };
    const net = critic({ normalize: true }, spec);
    const encoderBlocks = net.blocks.filter((b) => b.name.startsWith('critic.observation_encoder.')).map((b) => `${b.name} ${b.shape.join('x')}`);
    expect(encoderBlocks).toEqual([
      'critic.observation_encoder.x_self_encoder.seq_layers.0.weight 128x3',
      'critic.observation_encoder.x_self_encoder.seq_layers.0.bias 128',
      'critic.observation_encoder.1.self_ent_encoder.seq_layers.0.weight 128x131',
      'critic.observation_encoder.1.self_ent_encoder.seq_layers.0.bias 128',
      ...['fc_q', 'fc_k', 'fc_v', 'fc_out'].flatMap((fc) => [`critic.observation_encoder.rsa.${fc}.weight 128x128`, `critic.observation_encoder.rsa.${fc}.bias 128`]),
    ]);
    expect(net.block('critic.obs_encoder.self_ent_encoder.seq_layers.0.weight').shape).toEqual([8, 3 + 128]);
    net.updateNormalization(observations(spec, 20, new SeededRandom(5)), 20);
    // Drawn T-Fixup small, the entities' queries and keys barely move the scores: make them count.
    for (const name of ['critic.observation_encoder.rsa.fc_q.weight', 'critic.observation_encoder.rsa.fc_k.weight']) {
      const { offset, shape } = net.block(name);
      for (let j = offset; j < offset + shape[0] * shape[1]; j++) net.parameters[j] *= 10;
    }
    expectEveryBlockAsFiniteDifferences(net, spec);
  });

  it('takes a goal signal as an ordinary input (upstream\'s MultiAgentNetworkBody has no hypernetwork)', () => {
    const goal = vectorObservation(2, ObservationType.GOAL_SIGNAL);
    const spec: BehaviorSpec = { observationSpecs: [vectorObservation(3), goal], actionSpec: new ActionSpec(2, []) };
    const conditioned = critic({ goal_conditioning_type: 'hyper' }, spec);
    const plain = critic({ goal_conditioning_type: 'none' }, spec);
    expect(conditioned.blocks).toEqual(plain.blocks);
    expect(conditioned.block('critic.obs_encoder.self_ent_encoder.seq_layers.0.weight').shape).toEqual([8, 3 + 2]);
    const batch = groupBatch(spec, 4, 2, [[1, 1]], 3);
    expect(conditioned.estimate(batch)).toEqual(plain.estimate(batch));
    // The goal's values do reach the estimates.
    const otherGoal = { ...batch, observations: [batch.observations[0], batch.observations[1].map((v) => -v)] };
    expect(conditioned.estimate(otherGoal).values[0][0]).not.toBeCloseTo(conditioned.estimate(batch).values[0][0], 4);
  });

  it('with memory: the LSTM after the linear encoder, each pass from its own memories; every block through time as finite differences say', () => {
    const net = critic({ memory: { memory_size: 6, sequence_length: 3 } });
    expect(net.block('critic.lstm.weight_ih').shape).toEqual([12, 8]);
    expect(net.block('critic.value_heads.extrinsic.weight').shape).toEqual([1, 3 + 1]);
    shakeBiases(net);
    const random = new SeededRandom(4);
    const memories = () => new Float32Array(2 * 6).map(() => 0.5 * random.gaussian());
    const sequences = { length: 3, value: memories(), baseline: memories() };
    const batch = groupBatch(SPEC, 6, 2, [[1, 1], [4, 0]], 2);
    const loss = estimateLoss(9);
    const checked = net.blocks.filter((block) => !block.name.endsWith('fc_k.bias'));
    expectGradientsAsFiniteDifferences(net, () => net.computeGradient(batch, loss, sequences), checked, 1e-2);
    expect(() => net.estimate(batch)).toThrow(/with memory runs on whole sequences/);
  });

  it('runs a trajectory sequence after sequence, each from the memories the one before ended with (upstream\'s _evaluate_by_sequence_team)', () => {
    const net = critic({ memory: { memory_size: 6, sequence_length: 2 } });
    const random = new SeededRandom(8);
    const initial = { value: new Float32Array(6).map(() => random.gaussian()), baseline: new Float32Array(6).map(() => random.gaussian()) };
    const trajectory = groupBatch(SPEC, 5, 2, [[3, 1]], 5);
    const inSequences = net.estimateInSequences(trajectory, initial, 2);
    // One sequence of all 5 steps from the same memories: an LSTM's steps only look back, so the
    // first sequence agrees, and the third step's memories are the first pass's memories after.
    const whole = net.estimate(trajectory, { length: 5, ...initial });
    const firstTwo = net.estimate({ ...trajectory, count: 2 }, { length: 2, ...initial });
    for (let t = 0; t < 2; t++) expect(inSequences.values[0][t]).toBeCloseTo(whole.values[0][t], 5);
    expect(Array.from(inSequences.stepMemories.value.subarray(0, 6))).toEqual(Array.from(initial.value));
    expect(Array.from(inSequences.stepMemories.baseline.subarray(6, 12))).toEqual(Array.from(initial.baseline));
    expect(Array.from(inSequences.stepMemories.value.subarray(12, 18))).toEqual(Array.from(firstTwo.memories.value));
    expect(Array.from(inSequences.stepMemories.baseline.subarray(18, 24))).toEqual(Array.from(firstTwo.memories.baseline));
    // Past the first sequence, the second starts again from the carried memories: one pass over all 5 steps agrees.
    for (let t = 2; t < 5; t++) {
      expect(inSequences.values[0][t]).toBeCloseTo(whole.values[0][t], 5);
      expect(inSequences.baselines[1][t]).toBeCloseTo(whole.baselines[1][t], 5);
    }
    expect(inSequences.finalMemories.value[0]).toBeCloseTo(whole.memories.value[0], 5);
  });

  it('ignores absent groupmates whatever their slots hold, and the order of the groupmates', () => {
    const net = critic();
    const full = groupBatch(SPEC, 4, 2, [], 4);
    const withEmptySlot: GroupActionBatch = {
      ...full,
      slots: 3,
      groupObservations: full.groupObservations.map((obs, k) => {
        const size = SPEC.observationSpecs[k].shape[0];
        const wider = new Float32Array(4 * 3 * size).fill(NaN);
        for (let i = 0; i < 4; i++) wider.set(obs.subarray(i * 2 * size, (i + 1) * 2 * size), i * 3 * size);
        return wider;
      }),
      groupContinuousActions: spread(full.groupContinuousActions, 4, 2, 3, 2, 5),
      groupDiscreteActions: spread(Float32Array.from(full.groupDiscreteActions), 4, 2, 3, 2, 1),
    };
    const swapped: GroupActionBatch = {
      ...full,
      groupObservations: full.groupObservations.map((obs, k) => swapSlots(obs, 4, SPEC.observationSpecs[k].shape[0])),
      groupContinuousActions: swapSlots(full.groupContinuousActions, 4, 2),
      groupDiscreteActions: swapSlots(Float32Array.from(full.groupDiscreteActions), 4, 2),
    };
    const expected = net.estimate(full);
    for (const other of [withEmptySlot, swapped]) {
      const got = net.estimate(other);
      for (const kind of ['values', 'baselines'] as const) {
        got[kind].forEach((column, s) => column.forEach((v, i) => expect(v).toBeCloseTo(expected[kind][s][i], 5)));
      }
    }
    expect(net.values(full).map((column) => Array.from(column))).toEqual(expected.values.map((column) => Array.from(column)));
  });

  it('scales the members present by the most ever seen (upstream\'s _current_max_agents), and keeps that count in its checkpoint', () => {
    const net = critic();
    const alone = groupBatch(SPEC, 1, 1, [[0, 0]], 6);
    const before = net.values(alone)[0][0];
    expect(net.maxAgents).toBe(1);
    net.values(groupBatch(SPEC, 2, 3, [], 7));
    expect(net.maxAgents).toBe(4);
    // One member of at most 4: the count input goes from 1 to -0.5, and the value with it.
    const after = net.values(alone)[0][0];
    expect(after).not.toBeCloseTo(before, 4);

    const copy = critic();
    copy.loadStateArrays('critic.', net.describe(), new Map(net.stateArrays('critic.')));
    expect(copy.maxAgents).toBe(4);
    expect(copy.values(alone)[0][0]).toBe(after);
    const other = new PocaCritic(SPEC, network({ hidden_units: 12, num_layers: 2 }), ['extrinsic', 'curiosity'], 3);
    expect(() => other.loadStateArrays('critic.', net.describe(), new Map(net.stateArrays('critic.')))).toThrow(/different POCA critic: its hiddenUnits is 8 and this one's 12/);
  });

  it('refuses what it does not build yet, naming it and the way out', () => {
    const camera = { observationSpecs: [visualObservation(3, 10, 10)], actionSpec: new ActionSpec(1, []) };
    expect(() => new PocaCritic(camera, network(), ['extrinsic'], 1)).toThrow(UnsupportedModelError);
    expect(() => new PocaCritic(camera, network(), ['extrinsic'], 1)).toThrow(/Observation 0 \(camera3x10x10\): visual observation resolution \(10x10\) is too small .*simple.*vis_encode_type/);
    expect(() => critic({ hidden_units: 10 })).toThrow(/hidden_units is 10.*multiple of 4/);
  });
});

/** Rows of `slots` slots of `width` values widened to `wider` slots, the new ones filled with `fill`. */
function spread(values: Float32Array, count: number, slots: number, wider: number, width: number, fill: number): Float32Array {
  const out = new Float32Array(count * wider * width).fill(fill);
  for (let i = 0; i < count; i++) out.set(values.subarray(i * slots * width, (i + 1) * slots * width), i * wider * width);
  return out;
}

/** Two slots of `width` values per sample, exchanged. */
function swapSlots(values: Float32Array, count: number, width: number): Float32Array {
  const out = new Float32Array(values.length);
  for (let i = 0; i < count; i++) {
    out.set(values.subarray((2 * i + 1) * width, (2 * i + 2) * width), 2 * i * width);
    out.set(values.subarray(2 * i * width, (2 * i + 1) * width), (2 * i + 1) * width);
  }
  return out;
}
