import { memoryLogger } from '../../src/common/logger';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../src/env/behavior-spec';
import * as tf from '@tensorflow/tfjs';
import { ActorCritic, UnsupportedModelError } from '../../src/networks/actor-critic';
import { allowedActions } from '../../src/env/steps';
import { selectBackend } from '../../src/networks/backend';
import { categoricalLogProb, clipAction, gaussianEntropy, gaussianLogProb, maskedSoftmax } from '../../src/networks/distributions';
import { SeededRandom } from '../../src/common/random';
import { behavior, model, observations, vectorObservation } from './model-fixtures';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

function standardDeviation(values: Float32Array): number {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((a, b) => a + (b - mean) * (b - mean), 0) / values.length);
}

describe('building the networks', () => {
  it('refuses what is not built yet, naming it', () => {
    const visual: BehaviorSpec = {
      observationSpecs: [
        vectorObservation(4),
        { shape: [84, 84, 3], dimensionProperty: [2, 2, 1], observationType: ObservationType.DEFAULT, name: 'camera' },
      ],
      actionSpec: ActionSpec.createContinuous(1),
    };
    // Visual observations build; one smaller than the encoder takes is refused as upstream refuses it.
    expect(model(visual).visualObservationCount).toBe(1);
    const small: BehaviorSpec = { ...visual, observationSpecs: [{ ...visual.observationSpecs[1], shape: [3, 16, 16], dimensionProperty: [1, 2, 2] }] };
    expect(() => model(small)).toThrow(UnsupportedModelError);
    expect(() => model(small)).toThrow(
      'Observation 0 (camera): visual observation resolution (16x16) is too small for the provided EncoderType (simple). The min dimension is 20. ' +
        'Set network_settings.vis_encode_type to an encoder that takes it (resnet, match3, fully_connected), or send larger images.',
    );
    const entities: BehaviorSpec = {
      observationSpecs: [{ shape: [20, 6], dimensionProperty: [DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'buffer' }],
      actionSpec: ActionSpec.createContinuous(1),
    };
    // A variable-length observation: the entity attention encodes it (var-len-actor-critic.test.ts).
    expect(model(entities).actorBody.attention).not.toBeNull();
    const goal: BehaviorSpec = { observationSpecs: [vectorObservation(4), vectorObservation(2, ObservationType.GOAL_SIGNAL)], actionSpec: ActionSpec.createContinuous(1) };
    // Goal signals condition the bodies through a hypernetwork (hyper) or are ordinary inputs (none).
    expect(model(goal).actorBody.goalConditioned).toBe(true);
    expect(model(goal, { network: { goal_conditioning_type: 'none' } }).actorBody.goalConditioned).toBe(false);
  });

  it('lays out upstream modules: an actor and a critic body, or one shared body', () => {
    const spec = behavior([5, 3], new ActionSpec(2, [3, 2]));
    const separate = model(spec, { network: { hidden_units: 16, num_layers: 2 } });
    expect(separate.blocks.map((b) => `${b.name} ${b.shape.join('x')}`)).toEqual([
      'actor.layers.0.weight 16x8',
      'actor.layers.0.bias 16',
      'actor.layers.1.weight 16x16',
      'actor.layers.1.bias 16',
      'actor.mu.weight 2x16',
      'actor.branches.0.weight 3x16',
      'actor.branches.1.weight 2x16',
      'actor.mu.bias 2',
      'actor.branches.0.bias 3',
      'actor.branches.1.bias 2',
      'critic.layers.0.weight 16x8',
      'critic.layers.0.bias 16',
      'critic.layers.1.weight 16x16',
      'critic.layers.1.bias 16',
      'critic.value_heads.extrinsic.weight 1x16',
      'critic.value_heads.extrinsic.bias 1',
      'actor.log_sigma 2',
    ]);
    const shared = model(spec, { sharedCritic: true, network: { num_layers: 1 } });
    const names = shared.blocks.map((b) => b.name);
    expect(names).toContain('actor.value_heads.extrinsic.weight');
    expect(names.some((n) => n.startsWith('critic.'))).toBe(false);
    expect(names.filter((n) => n.includes('.layers.'))).toEqual(['actor.layers.0.weight', 'actor.layers.0.bias']);
  });

  it('initializes as upstream: Kaiming normal bodies, gains 0.2 and 0.1 on the policy heads, Xavier value heads, zero biases', () => {
    const spec = behavior([8], new ActionSpec(2, [4]));
    const net = model(spec, { network: { hidden_units: 128 } });
    const values = (name: string) => {
      const b = net.block(name);
      return net.parameters.subarray(b.offset, b.offset + b.shape.reduce((x, y) => x * y, 1));
    };
    expect(standardDeviation(values('actor.layers.0.weight'))).toBeCloseTo(1 / Math.sqrt(8), 1);
    expect(standardDeviation(values('critic.layers.1.weight')) * Math.sqrt(128)).toBeCloseTo(1, 1);
    expect(standardDeviation(values('actor.mu.weight')) * Math.sqrt(128)).toBeGreaterThan(0.15);
    expect(standardDeviation(values('actor.mu.weight')) * Math.sqrt(128)).toBeLessThan(0.25);
    expect(standardDeviation(values('actor.branches.0.weight')) * Math.sqrt(128)).toBeCloseTo(0.1, 1);
    const bound = Math.sqrt(6 / 129);
    const head = values('critic.value_heads.extrinsic.weight');
    expect(Math.max(...head.map(Math.abs))).toBeLessThanOrEqual(bound);
    expect(standardDeviation(head)).toBeCloseTo(bound / Math.sqrt(3), 1);
    for (const block of net.blocks.filter((b) => !b.name.endsWith('.weight'))) {
      expect(values(block.name).every((v) => v === 0)).toBe(true);
    }
  });
});

describe('acting', () => {
  it('samples Gaussian actions, clips what the environment gets, and reports log probs, entropy and values', () => {
    const spec = behavior([6], ActionSpec.createContinuous(3));
    const net = model(spec);
    const random = new SeededRandom(3);
    const obs = observations(spec, 50, random);
    const out = net.act(obs, 50);
    expect(out.action.continuous.length).toBe(150);
    expect(out.action.discrete.length).toBe(0);
    expect(out.envAction.continuous).toEqual(out.action.continuous.map(clipAction));
    // With log std 0 the samples spread with unit deviation around the (small) means.
    expect(standardDeviation(out.action.continuous)).toBeGreaterThan(0.7);
    const means = model(spec, { network: { deterministic: true } }).act(obs, 50).action.continuous;
    for (let i = 0; i < 150; i++) {
      expect(out.logProbs.continuous[i]).toBeCloseTo(gaussianLogProb(out.action.continuous[i], means[i], 0), 5);
    }
    expect(out.entropy.every((e) => Math.abs(e - gaussianEntropy(0)) < 1e-6)).toBe(true);
    // Value estimates: from values(), or from act() when asked for.
    expect(out.values).toBeUndefined();
    const values = net.values(obs, 50).extrinsic;
    expect(values.length).toBe(50);
    expect([...(net.act(obs, 50, null, { values: true }).values?.extrinsic ?? [])]).toEqual([...values]);
  });

  it('gives a few agents (a JavaScript pass) the outputs they get within a large batch (a tfjs pass)', () => {
    const spec = behavior([5, 3], new ActionSpec(2, [3]));
    const net = model(spec, { network: { hidden_units: 32, normalize: true } });
    const random = new SeededRandom(4);
    const many = observations(spec, 400, random);
    net.updateNormalization(many, 400);
    const deterministic = model(spec, { network: { hidden_units: 32, normalize: true, deterministic: true } });
    deterministic.parameters.set(net.parameters);
    deterministic.updateNormalization(many, 400);
    deterministic.parametersChanged();
    const firstTwo = many.map((obs, k) => obs.subarray(0, 2 * [5, 3][k]));
    const batched = deterministic.act(many, 400, null, { values: true });
    const small = deterministic.act(firstTwo, 2, null, { values: true });
    for (let i = 0; i < 4; i++) expect(small.action.continuous[i]).toBeCloseTo(batched.action.continuous[i], 5);
    expect([...small.action.discrete]).toEqual([...batched.action.discrete.subarray(0, 2)]);
    for (let i = 0; i < 2; i++) expect(small.values!.extrinsic[i]).toBeCloseTo(batched.values!.extrinsic[i], 5);
  });

  it('never picks a masked action and reports the log probability of the choice', () => {
    const spec = behavior([4], ActionSpec.createDiscrete([3, 5]));
    const net = model(spec);
    const count = 400;
    const random = new SeededRandom(5);
    const obs = observations(spec, count, random);
    const allowed = new Float32Array(count * 8).fill(1);
    for (let i = 0; i < count; i++) {
      allowed[i * 8 + (i % 3)] = 0; // one of branch 0's three actions
      for (let k = 0; k < 5; k++) if (k !== i % 5) allowed[i * 8 + 3 + k] = 0; // all but one of branch 1's
    }
    const out = net.act(obs, count, allowed);
    for (let i = 0; i < count; i++) {
      expect(out.action.discrete[i * 2]).not.toBe(i % 3);
      expect(out.action.discrete[i * 2 + 1]).toBe(i % 5);
      expect(out.logProbs.discrete[i * 2 + 1]).toBeCloseTo(Math.log(1 + 1e-7), 6);
    }
    // The log probability of branch 0's choice is that of the masked softmax of the logits.
    const logits = new Float64Array(3);
    const probs = new Float64Array(3);
    const choice = out.action.discrete[0];
    const logitsOfAgent0 = logitsOf(net, obs[0].subarray(0, 4));
    logits.set(logitsOfAgent0.subarray(0, 3));
    maskedSoftmax(logits, allowed.subarray(0, 3), 3, probs);
    expect(out.logProbs.discrete[0]).toBeCloseTo(categoricalLogProb(probs, choice), 5);
    expect(() => net.act(obs, count, new Float32Array(3))).toThrow('action mask of 3 values for 400 agents x 8 actions');
  });

  it('normalizes the concatenated observations with running statistics', () => {
    const spec = behavior([2, 3], ActionSpec.createContinuous(2));
    const normalizing = model(spec, { network: { normalize: true, deterministic: true } });
    const plain = model(spec, { network: { normalize: false, deterministic: true } });
    const random = new SeededRandom(9);
    const obs = observations(spec, 20, random);
    normalizing.updateNormalization(obs, 20);
    const normalizer = normalizing.normalizer!;
    expect(normalizer.steps).toBe(21);
    expect(normalizer.mean[3]).toBeCloseTo(obs[1].filter((_, i) => i % 3 === 1).reduce((a, b) => a + b, 0) / 21, 5);
    // The normalizing model on raw observations = the plain one (same weights) on normalized ones.
    const normalized = obs.map((o, k) =>
      o.map((x, i) => normalizer.normalize(x, (k === 0 ? 0 : 2) + (i % (k === 0 ? 2 : 3)))),
    );
    const a = normalizing.act(obs, 20);
    const b = plain.act(normalized, 20);
    for (let i = 0; i < 40; i++) expect(a.action.continuous[i]).toBeCloseTo(b.action.continuous[i], 5);
  });

  it('answers an empty batch with empty arrays', () => {
    const spec = behavior([4], new ActionSpec(2, [3]));
    const out = model(spec).act([new Float32Array(0)], 0, new Float32Array(0), { values: true });
    expect(out.action.continuous.length + out.action.discrete.length + out.entropy.length).toBe(0);
    expect(out.values?.extrinsic.length).toBe(0);
  });

  it('keeps no tensors beyond its weights between calls', () => {
    const spec = behavior([4], new ActionSpec(2, [3]));
    const net = model(spec);
    const obs = observations(spec, 8, new SeededRandom(1));
    net.computeGradient(obs, 8, () => undefined); // uploads the weights
    const settled = tf.memory().numTensors;
    for (let i = 0; i < 5; i++) {
      net.act(obs, 8);
      net.values(obs, 8);
      net.computeGradient(obs, 8, () => undefined);
      net.parametersChanged();
    }
    expect(tf.memory().numTensors).toBe(settled);
    net.dispose();
    expect(tf.memory().numTensors).toBe(settled - 24); // 2 bodies x (2 layers + head) x 4 layouts
  });

  it('converts the environment masks (1 = forbidden, per branch) into allowed actions', () => {
    const forbidden = [new Uint8Array([0, 1, 0, 1, 1, 0]), new Uint8Array([1, 0, 0, 0])];
    expect([...allowedActions(forbidden, 2, [3, 2])]).toEqual([1, 0, 1, 0, 1, 0, 0, 1, 1, 1]);
    expect([...allowedActions(null, 2, [1, 2])]).toEqual([1, 1, 1, 1, 1, 1]);
  });

  it('refuses observations of the wrong size', () => {
    const spec = behavior([4], ActionSpec.createContinuous(1));
    const net = model(spec);
    expect(() => net.act([new Float32Array(7)], 2)).toThrow('Observation 0 holds 7 values, not 2 agents x 4.');
    expect(() => net.act([], 2)).toThrow('takes 1 observations per agent but got 0');
  });
});

describe('state', () => {
  it('round-trips weights and normalizer, and refuses another architecture', () => {
    const spec = behavior([4], new ActionSpec(1, [2]));
    const source = model(spec, { network: { normalize: true, deterministic: true }, seed: 1 });
    source.updateNormalization(observations(spec, 10, new SeededRandom(1)), 10);
    const target = model(spec, { network: { normalize: true, deterministic: true }, seed: 2 });
    const obs = observations(spec, 5, new SeededRandom(2));
    expect(target.act(obs, 5).action.continuous).not.toEqual(source.act(obs, 5).action.continuous);
    target.loadStateArrays(source.describe(), source.stateArrays());
    expect(target.act(obs, 5)).toEqual(source.act(obs, 5));
    const wider = model(spec, { network: { normalize: true, hidden_units: 32 } });
    expect(() => wider.loadStateArrays(source.describe(), source.stateArrays())).toThrow(
      'The checkpoint holds a different network: hiddenUnits is 16 in the checkpoint and 32 here',
    );
  });
});

/** The logits of one agent, as the training pass reads them off the network. */
function logitsOf(net: ActorCritic, agentObservation: Float32Array): Float32Array {
  let logits = new Float32Array(0);
  net.computeGradient([agentObservation], 1, (outputs) => {
    logits = outputs.logits.slice();
  });
  return logits;
}
