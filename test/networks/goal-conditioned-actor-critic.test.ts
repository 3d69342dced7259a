/**
 * The actor-critic on a behavior with goal signals: with goal_conditioning_type hyper (upstream's
 * default) every body ends in upstream's ConditionalEncoder, its last layer a hypernetwork on the
 * goals' values or encodings; with none, the goal is an ordinary input and the bodies are as
 * without goals. Acting, training (every block's gradient, as finite differences say, with a
 * shared or separate critic, with memory, with an image as the goal) and checkpoints.
 */
import { memoryLogger } from '../../src/common/logger';
import { SeededRandom } from '../../src/common/random';
import { ActionSpec, BehaviorSpec, ObservationType } from '../../src/env/behavior-spec';
import type { ActorCritic, SequenceMemories } from '../../src/networks/actor-critic';
import { selectBackend } from '../../src/networks/backend';
import { expectBlockGradientsAsFiniteDifferences, model, observations, vectorObservation, visualObservation } from './model-fixtures';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

/** A vector observation of 3 and a goal of 2 (as GridWorld's one-hot), hybrid actions. */
const spec: BehaviorSpec = {
  observationSpecs: [vectorObservation(3), vectorObservation(2, ObservationType.GOAL_SIGNAL)],
  actionSpec: new ActionSpec(2, [3]),
};

const blockList = (net: ActorCritic) => net.blocks.map((b) => `${b.name} ${b.shape.join('x')}`);

describe('building a goal-conditioned actor-critic', () => {
  it('ends each body in a hypernetwork on the goal with hyper: upstream\'s blocks, the goal also among the inputs', () => {
    const net = model(spec, { network: { hidden_units: 8, num_layers: 2 } });
    expect(blockList(net).filter((b) => b.startsWith('actor.layers'))).toEqual([
      'actor.layers.0.weight 8x5',
      'actor.layers.0.bias 8',
      'actor.layers.1.hypernet.0.weight 8x2',
      'actor.layers.1.hypernet.0.bias 8',
      'actor.layers.1.hypernet.2.weight 8x8',
      'actor.layers.1.hypernet.2.bias 8',
      'actor.layers.1.hypernet.5.weight 8x8x8',
      'actor.layers.1.hypernet.5.bias 8x8',
      'actor.layers.1.bias 8',
    ]);
    expect(net.blocks.some((b) => b.name.startsWith('critic.layers.1.hypernet.'))).toBe(true);
    expect(net.describe().goalConditioning).toEqual({ type: 'hyper', goalObservations: [1] });
  });

  it('with none, or without goal signals, builds the bodies it builds without goals', () => {
    const none = model(spec, { network: { hidden_units: 8, num_layers: 2, goal_conditioning_type: 'none' } });
    const plainSpec: BehaviorSpec = { ...spec, observationSpecs: [vectorObservation(3), vectorObservation(2)] };
    const plain = model(plainSpec, { network: { hidden_units: 8, num_layers: 2 } });
    expect(none.actorBody.goalConditioned).toBe(false);
    expect(blockList(none)).toEqual(blockList(plain));
    expect(none.describe()).toEqual(plain.describe());
    const obs = observations(spec, 5, new SeededRandom(3));
    expect(none.act(obs, 5, null, { values: true })).toEqual(plain.act(obs, 5, null, { values: true }));
  });
});

describe('acting', () => {
  it('gives a few agents (plain loops) the outputs they get within a large batch (tfjs)', () => {
    const net = model(spec, { network: { hidden_units: 16, num_layers: 1, deterministic: true } });
    const random = new SeededRandom(4);
    const many = observations(spec, 300, random);
    const firstTwo = many.map((obs, k) => obs.subarray(0, 2 * [3, 2][k]));
    const batched = net.act(many, 300, null, { values: true });
    const small = net.act(firstTwo, 2, null, { values: true });
    for (let i = 0; i < 4; i++) expect(small.action.continuous[i]).toBeCloseTo(batched.action.continuous[i], 5);
    expect([...small.action.discrete]).toEqual([...batched.action.discrete.subarray(0, 2)]);
    for (let i = 0; i < 2; i++) expect(small.values!.extrinsic[i]).toBeCloseTo(batched.values!.extrinsic[i], 5);
  });

  it('acts differently for different goals on the same observation', () => {
    const net = model(spec, { network: { hidden_units: 16, num_layers: 1, deterministic: true } });
    const observation = Float32Array.from([0.3, -0.2, 0.5, 0.3, -0.2, 0.5]);
    const goals = Float32Array.from([1, 0, 0, 1]);
    const acted = net.act([observation, goals], 2);
    expect(acted.action.continuous[0]).not.toBeCloseTo(acted.action.continuous[2], 4);
  });
});


/** Checks the 2 largest gradient entries of each block matching `pattern` against central differences. */
function expectGradientAsFiniteDifferences(net: ActorCritic, behaviorSpec: BehaviorSpec, count: number, pattern: RegExp, sequences?: SequenceMemories): void {
  const obs = observations(behaviorSpec, count, new SeededRandom(7));
  expectBlockGradientsAsFiniteDifferences(net, obs, count, net.blocks.filter((b) => pattern.test(b.name)), 1e-3, sequences);
}

describe('training a goal-conditioned actor-critic', () => {
  it.each([false, true])('backpropagates into every block (shared critic: %s), as finite differences say', (sharedCritic) => {
    const net = model(spec, { network: { hidden_units: 6, num_layers: 2, normalize: true }, sharedCritic });
    net.updateNormalization(observations(spec, 20, new SeededRandom(1)), 20);
    expectGradientAsFiniteDifferences(net, spec, 5, /layers|mu|branches|value_heads/);
  });

  it('with memory: the LSTM after the conditional encoder, through time', () => {
    const memory = { sequence_length: 3, memory_size: 6 };
    const net = model(spec, { network: { hidden_units: 6, num_layers: 1, memory } });
    const random = new SeededRandom(2);
    const memories = () => new Float32Array(2 * 6).map(() => 0.5 * random.gaussian());
    expectGradientAsFiniteDifferences(net, spec, 6, /hypernet|lstm|mu/, { length: 3, actor: memories(), critic: memories() });
  });

  it('with an image as the goal: its encoder gets the gradient of both its uses', () => {
    const goalImage = { ...visualObservation(2, 3, 3), observationType: ObservationType.GOAL_SIGNAL };
    const visualSpec: BehaviorSpec = { observationSpecs: [vectorObservation(2), goalImage], actionSpec: ActionSpec.createContinuous(1) };
    const net = model(visualSpec, { network: { hidden_units: 4, num_layers: 1, vis_encode_type: 'fully_connected' } });
    expect(blockList(net).filter((b) => b.startsWith('actor.layers.0.hypernet.0.weight'))).toEqual(['actor.layers.0.hypernet.0.weight 4x4']);
    expectGradientAsFiniteDifferences(net, visualSpec, 4, /encoders|hypernet\.0/);
  });
});

describe('checkpoint state', () => {
  it('round-trips, and refuses weights of the other goal_conditioning_type, naming the setting', () => {
    const source = model(spec, { network: { deterministic: true }, seed: 1 });
    const target = model(spec, { network: { deterministic: true }, seed: 2 });
    const obs = observations(spec, 5, new SeededRandom(2));
    expect(target.act(obs, 5).action.continuous).not.toEqual(source.act(obs, 5).action.continuous);
    target.loadStateArrays(source.describe(), source.stateArrays());
    expect(target.act(obs, 5)).toEqual(source.act(obs, 5));
    const none = model(spec, { network: { goal_conditioning_type: 'none' } });
    const refusal =
      'The checkpoint holds a different network: its bodies have a hypernetwork on observations 1 and this one no hypernetwork ' +
      "(network_settings.goal_conditioning_type and the behavior's goal signals must be those the checkpoint was trained with)";
    expect(() => none.loadStateArrays(source.describe(), source.stateArrays())).toThrow(refusal);
  });
});
