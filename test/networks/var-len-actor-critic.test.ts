/**
 * The actor-critic on a behavior with variable-length observations ([entities, size] described
 * (VARIABLE_SIZE, NONE)): each body encodes them as upstream's ObservationEncoder (x_self encoder,
 * entity embeddings, residual self-attention, 128 values after the other observations'
 * encodings). Building, refusals, acting, training (every block's gradient, as finite
 * differences say, with a shared or separate critic, an image in x_self, memory), SAC's Q
 * networks, and checkpoints.
 */
import { memoryLogger } from '../../src/common/logger';
import { SeededRandom } from '../../src/common/random';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType } from '../../src/env/behavior-spec';
import type { ActorCritic, SequenceMemories } from '../../src/networks/actor-critic';
import { selectBackend } from '../../src/networks/backend';
import { blockValues } from '../../src/networks/layers/layer';
import { QNetwork } from '../../src/networks/q-network';
import { centralDifference } from '../helpers/finite-differences';
import {
  entityObservation as entities,
  expectBlockGradientsAsFiniteDifferences,
  model,
  network,
  observations,
  vectorObservation,
  visualObservation,
} from './model-fixtures';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

/** A vector observation of 3 between two variable-length ones, hybrid actions. */
const spec: BehaviorSpec = {
  observationSpecs: [entities(4, 3), vectorObservation(3), entities(2, 3)],
  actionSpec: new ActionSpec(2, [3]),
};

/** Observations with some entities zero (padding): every one of agent 0's first observation's, and about a third of the others. */
function paddedObservations(behavior: BehaviorSpec, count: number, random: SeededRandom): Float32Array[] {
  const obs = observations(behavior, count, random);
  behavior.observationSpecs.forEach((o, k) => {
    if (o.shape.length !== 2) return;
    const [n, size] = o.shape;
    for (let i = 0; i < count; i++) {
      for (let j = 0; j < n; j++) if ((k === 0 && i === 0) || random.next() < 0.3) obs[k].fill(0, (i * n + j) * size, (i * n + j + 1) * size);
    }
  });
  return obs;
}

describe('building', () => {
  it('gives each body upstream\'s attention blocks, its input the 3 vector values then 128 attention values', () => {
    const net = model(spec, { network: { hidden_units: 8, num_layers: 1 } });
    expect(net.inputSize).toBe(3 + 128);
    expect(net.blocks.filter((b) => b.name.startsWith('actor.encoders.')).map((b) => `${b.name} ${b.shape.join('x')}`)).toEqual([
      'actor.encoders.x_self_encoder.seq_layers.0.weight 128x3',
      'actor.encoders.x_self_encoder.seq_layers.0.bias 128',
      'actor.encoders.0.self_ent_encoder.seq_layers.0.weight 128x131',
      'actor.encoders.0.self_ent_encoder.seq_layers.0.bias 128',
      'actor.encoders.2.self_ent_encoder.seq_layers.0.weight 128x131',
      'actor.encoders.2.self_ent_encoder.seq_layers.0.bias 128',
      ...['fc_q', 'fc_k', 'fc_v', 'fc_out'].flatMap((fc) => [`actor.encoders.rsa.${fc}.weight 128x128`, `actor.encoders.rsa.${fc}.bias 128`]),
    ]);
    expect(net.blocks.some((b) => b.name === 'critic.encoders.rsa.fc_q.weight')).toBe(true);
    expect(net.describe().variableLengthObservations).toEqual([
      { observation: 0, maxEntities: 4, entitySize: 3, encoder: 'attention' },
      { observation: 2, maxEntities: 2, entitySize: 3, encoder: 'attention' },
    ]);
  });

  it('refuses a rank-2 observation not described (VARIABLE_SIZE, NONE), naming it and the fix', () => {
    const odd: BehaviorSpec = { observationSpecs: [{ ...entities(4, 3), dimensionProperty: [DimensionProperty.NONE, DimensionProperty.NONE] }], actionSpec: new ActionSpec(1, []) };
    expect(() => model(odd)).toThrow('Observation 0 (buffer4x3) has shape [4, 3] with dimension properties [NONE, NONE]: a rank-2 observation is taken only as a variable-length one, described [VARIABLE_SIZE, NONE]');
  });

  it('as upstream, a variable-length goal alone makes no hypernetwork; beside another goal it is refused under hyper', () => {
    const alone: BehaviorSpec = { observationSpecs: [entities(4, 3, ObservationType.GOAL_SIGNAL), vectorObservation(1)], actionSpec: new ActionSpec(1, []) };
    expect(model(alone).actorBody.goalConditioned).toBe(false);
    const both: BehaviorSpec = { ...alone, observationSpecs: [entities(4, 3, ObservationType.GOAL_SIGNAL), vectorObservation(1, ObservationType.GOAL_SIGNAL)] };
    expect(() => model(both)).toThrow('Observation 0 (buffer4x3) is a variable-length goal signal beside other goal signals');
    expect(model(both, { network: { goal_conditioning_type: 'none' } }).actorBody.goalConditioned).toBe(false);
  });
});

describe('acting', () => {
  it('gives a few agents the outputs they get within a large batch, and ignores padded entities\' order', () => {
    const net = model(spec, { network: { hidden_units: 16, num_layers: 1, deterministic: true } });
    const random = new SeededRandom(4);
    const many = paddedObservations(spec, 40, random);
    const firstTwo = many.map((obs, k) => obs.subarray(0, 2 * [12, 3, 6][k]));
    const batched = net.act(many, 40, null, { values: true });
    const small = net.act(firstTwo, 2, null, { values: true });
    for (let i = 0; i < 4; i++) expect(small.action.continuous[i]).toBeCloseTo(batched.action.continuous[i], 5);
    for (let i = 0; i < 2; i++) expect(small.values!.extrinsic[i]).toBeCloseTo(batched.values!.extrinsic[i], 5);
    // Attention is a set operation: swapping two entities of an agent changes nothing.
    const swapped = firstTwo.map((obs) => obs.slice());
    swapped[0].set(firstTwo[0].subarray(3, 6), 0);
    swapped[0].set(firstTwo[0].subarray(0, 3), 3);
    const again = net.act(swapped, 2, null, { values: true });
    for (let i = 0; i < 4; i++) expect(again.action.continuous[i]).toBeCloseTo(small.action.continuous[i], 5);
  });
});

/** Checks the 2 largest gradient entries of each block matching `pattern` against central differences. */
function expectGradientAsFiniteDifferences(net: ActorCritic, behavior: BehaviorSpec, count: number, pattern: RegExp, sequences?: SequenceMemories): void {
  const obs = paddedObservations(behavior, count, new SeededRandom(7));
  // The keys' bias adds the same q . b to every key's score of a query: softmax cancels it, its gradient is 0.
  const blocks = net.blocks.filter((b) => pattern.test(b.name) && !b.name.endsWith('fc_k.bias'));
  expectBlockGradientsAsFiniteDifferences(net, obs, count, blocks, 1e-2, sequences);
}

describe('training', () => {
  it.each([false, true])('backpropagates into every block (shared critic: %s), as finite differences say', (sharedCritic) => {
    const net = model(spec, { network: { hidden_units: 6, num_layers: 1, normalize: true }, sharedCritic });
    net.updateNormalization(observations(spec, 20, new SeededRandom(1)), 20);
    expectGradientAsFiniteDifferences(net, spec, 5, /encoders|layers|mu|value_heads/);
  });

  it('with an image beside: its encoder gets the gradient of both its uses (the body\'s input and x_self)', () => {
    const visualSpec: BehaviorSpec = { observationSpecs: [visualObservation(2, 3, 3), entities(3, 2)], actionSpec: ActionSpec.createContinuous(1) };
    const net = model(visualSpec, { network: { hidden_units: 4, num_layers: 1, vis_encode_type: 'fully_connected' } });
    expectGradientAsFiniteDifferences(net, visualSpec, 4, /actor\.encoders\.(0|x_self|1)/);
  });

  it('with memory: the LSTM after the body, through time', () => {
    const memory = { sequence_length: 3, memory_size: 6 };
    const net = model(spec, { network: { hidden_units: 6, num_layers: 1, memory } });
    const random = new SeededRandom(2);
    const memories = () => new Float32Array(2 * 6).map(() => 0.5 * random.gaussian());
    expectGradientAsFiniteDifferences(net, spec, 6, /rsa|lstm|mu/, { length: 3, actor: memories(), critic: memories() });
  });
});

describe('SAC\'s Q network', () => {
  it('backpropagates into its attention, as finite differences say', () => {
    const q = new QNetwork(spec, { network: network({ hidden_units: 6, num_layers: 1 }), continuousActions: 2, outputs: 3 }, new SeededRandom(3));
    const random = new SeededRandom(5);
    const count = 4;
    const obs = paddedObservations(spec, count, random);
    const vectorRows = obs[1];
    const actions = new Float32Array(count * 2).map(() => random.gaussian());
    const weights = new Float32Array(count * 3).map(() => random.gaussian());
    const lossOf = (values: Float32Array) => values.reduce((total, v, i) => total + weights[i] * v, 0);
    const loss = () => lossOf(q.forward(q.encode(obs, vectorRows, count, false), actions, count));
    q.forward(q.encode(obs, vectorRows, count, true), actions, count);
    q.backward(weights, true);
    const gradient = Float32Array.from(q.gradient);
    for (const block of q.blocks.filter((b) => /encoders/.test(b.name))) {
      const values = blockValues(gradient, block);
      const k = [...values.keys()].sort((a, b) => Math.abs(values[b]) - Math.abs(values[a]))[0];
      const expected = centralDifference(q.parameters, block.offset + k, 1e-2, loss, () => q.parametersChanged());
      if (Math.abs(expected - values[k]) > 2e-3 + 0.03 * Math.abs(expected)) throw new Error(`${block.name}[${k}]: backward gives ${values[k]}, finite differences ${expected}`);
    }
  });
});

describe('checkpoint state', () => {
  it('round-trips, and refuses weights of a body without the variable-length observation, naming the difference', () => {
    const source = model(spec, { network: { deterministic: true }, seed: 1 });
    const target = model(spec, { network: { deterministic: true }, seed: 2 });
    const obs = paddedObservations(spec, 5, new SeededRandom(2));
    expect(target.act(obs, 5).action.continuous).not.toEqual(source.act(obs, 5).action.continuous);
    target.loadStateArrays(source.describe(), source.stateArrays());
    expect(target.act(obs, 5)).toEqual(source.act(obs, 5));
    const fewer: BehaviorSpec = { ...spec, observationSpecs: [entities(4, 3), vectorObservation(3)] };
    expect(() => model(fewer).loadStateArrays(source.describe(), source.stateArrays())).toThrow(
      "The checkpoint holds a different network: its variableLengthObservations are 0 [4, 3], 2 [2, 3] and this behavior's 0 [4, 3]",
    );
  });
});
