/**
 * The GAIL reward provider: upstream's test_gail behaviours (after training on a policy batch
 * against demonstrations, the reward is higher on the demonstrations than on the policy's
 * experiences, with and without actions, with and without VAIL), its autodiff gradient (the
 * gradient penalty's second derivative included) against finite differences, the penalty on an
 * image (per pixel, over its channels) against finite differences, its checkpoint arrays (a
 * discriminator on images and on variable-length observations too), its tags, its refusals, and
 * learning on variable-length observations. gail-upstream.test.ts checks a loss and its gradients
 * on images, goal signals and variable-length observations against upstream's own.
 */
import * as tf from '@tensorflow/tfjs';
import { SeededRandom } from '../../../src/common/random';
import type { GAILSettings, NetworkSettings } from '../../../src/config/settings';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType, observationSize } from '../../../src/env/behavior-spec';
import { AgentBuffer, BufferKey, observationKey } from '../../../src/trainers/buffer';
import { GAIL_TAGS, GailRewardProvider } from '../../../src/trainers/reward-signals/gail';
import { createRewardProvider } from '../../../src/trainers/reward-signals/registry';
import { RewardBatch, rewardBatchOf } from '../../../src/trainers/reward-signals/reward-provider';
import { centralDifference } from '../../helpers/finite-differences';
import { selectBackend } from '../../../src/networks/backend';
import { memoryLogger } from '../../../src/common/logger';
import { behavior, entityObservation, network, vectorObservation, visualObservation } from '../../networks/model-fixtures';

function gailSettings(overrides: Partial<GAILSettings> = {}, hidden = 128): GAILSettings {
  return {
    gamma: 0.99,
    strength: 1,
    learning_rate: 3e-4,
    encoding_size: null,
    use_actions: false,
    use_vail: false,
    demo_path: '',
    network_settings: network({ hidden_units: hidden, num_layers: 2 }),
    ...overrides,
  };
}

/**
 * Upstream's create_agent_buffer: `count` rows of one random observation and one random action
 * (the same in every row), no dones.
 */
function agentBuffer(spec: BehaviorSpec, count: number, random: SeededRandom): AgentBuffer {
  const buffer = new AgentBuffer();
  const observations = spec.observationSpecs.map((obs) => Float32Array.from({ length: observationSize(obs) }, () => random.gaussian()));
  const continuous = Float32Array.from({ length: spec.actionSpec.continuousSize }, () => random.range(-1, 1));
  const discrete = spec.actionSpec.discreteBranches.map((size) => random.int(size));
  for (let i = 0; i < count; i++) {
    observations.forEach((obs, k) => buffer.get(observationKey(k)).append(obs));
    if (continuous.length > 0) buffer.get(BufferKey.CONTINUOUS_ACTION).append(continuous);
    if (discrete.length > 0) buffer.get(BufferKey.DISCRETE_ACTION).append(discrete);
    buffer.get(BufferKey.ENVIRONMENT_REWARDS).append(0);
    buffer.get(BufferKey.DONE).append(0);
  }
  return buffer;
}

/** Rows of random observations, actions and dones (a batch worth differentiating: no two rows alike). */
function randomBatch(spec: BehaviorSpec, count: number, random: SeededRandom): RewardBatch {
  const buffer = new AgentBuffer();
  for (let i = 0; i < count; i++) {
    spec.observationSpecs.forEach((obs, k) => buffer.get(observationKey(k)).append(Float32Array.from({ length: observationSize(obs) }, () => random.gaussian())));
    if (spec.actionSpec.continuousSize > 0) {
      buffer.get(BufferKey.CONTINUOUS_ACTION).append(Float32Array.from({ length: spec.actionSpec.continuousSize }, () => random.range(-1, 1)));
    }
    if (spec.actionSpec.discreteSize > 0) buffer.get(BufferKey.DISCRETE_ACTION).append(spec.actionSpec.discreteBranches.map((size) => random.int(size)));
    buffer.get(BufferKey.ENVIRONMENT_REWARDS).append(0);
    buffer.get(BufferKey.DONE).append(random.int(2));
  }
  return rewardBatchOf(buffer);
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

/**
 * Upstream's test draws 1000 rows; every row of its buffers is the same, so that fewer rows change
 * nothing but how many mixed inputs the gradient penalty averages over.
 */
const ROWS = 64;

const SPECS: Array<[string, BehaviorSpec]> = [
  ['8 observations, 2 continuous actions', behavior([8], new ActionSpec(2, []))],
  ['50 observations, branches 2 3 3 3', behavior([50], new ActionSpec(0, [2, 3, 3, 3]))],
  ['10 observations, one branch of 20', behavior([10], new ActionSpec(0, [20]))],
];

describe('the GAIL reward provider, as upstream\'s test_gail', () => {
  for (const [label, spec] of SPECS) {
    for (const useActions of [false, true]) {
      it(`learns to reward the demonstrations above the policy (${label}, use_actions ${useActions})`, () => {
        const random = new SeededRandom(42);
        const expert = agentBuffer(spec, ROWS, random);
        const policy = rewardBatchOf(agentBuffer(spec, ROWS, random));
        const provider = new GailRewardProvider(gailSettings({ learning_rate: 0.005, use_actions: useActions }), spec, 42, { behavior: '1D', demonstrations: expert });
        const expertBatch = rewardBatchOf(expert);
        const initialExpert = provider.evaluate(expertBatch)[0];
        const initialPolicy = provider.evaluate(policy)[0];
        for (let i = 0; i < 20; i++) {
          provider.update(policy);
          expect(provider.evaluate(expertBatch)[0]).toBeGreaterThanOrEqual(0);
          expect(provider.evaluate(policy)[0]).toBeGreaterThanOrEqual(0);
        }
        const expertReward = provider.evaluate(expertBatch)[0];
        const policyReward = provider.evaluate(policy)[0];
        expect(expertReward).toBeGreaterThan(policyReward);
        expect(expertReward).toBeGreaterThan(initialExpert);
        expect(policyReward).toBeLessThan(initialPolicy);
      });

      it(`with VAIL, learns to reward the demonstrations above the policy (${label}, use_actions ${useActions})`, () => {
        const random = new SeededRandom(42);
        const expert = agentBuffer(spec, ROWS, random);
        const policy = rewardBatchOf(agentBuffer(spec, ROWS, random));
        const provider = new GailRewardProvider(gailSettings({ learning_rate: 0.005, use_vail: true, use_actions: useActions }), spec, 42, { behavior: '1D', demonstrations: expert });
        let stats: Record<string, number> = {};
        for (let i = 0; i < 20; i++) {
          stats = provider.update(policy);
          expect(provider.evaluate(rewardBatchOf(expert))[0]).toBeGreaterThanOrEqual(0);
          expect(provider.evaluate(policy)[0]).toBeGreaterThanOrEqual(0);
        }
        expect(provider.evaluate(rewardBatchOf(expert))[0]).toBeGreaterThan(provider.evaluate(policy)[0]);
        expect(stats[GAIL_TAGS.beta]).toBe(provider.beta);
        expect(provider.beta).toBeGreaterThan(0);
      });
    }
  }
});

describe('the GAIL discriminator\'s gradient', () => {
  const spec = behavior([3, 2], new ActionSpec(1, [3]));

  for (const [label, overrides, normalize] of [
    ['plain', {}, false],
    ['use_actions, normalize', { use_actions: true }, true],
    ['use_vail, use_actions', { use_vail: true, use_actions: true }, false],
  ] as Array<[string, Partial<GAILSettings>, boolean]>) {
    it(`agrees with finite differences, the gradient penalty's included (${label})`, () => {
      const random = new SeededRandom(7);
      const settings = gailSettings({ ...overrides, network_settings: network({ hidden_units: 6, num_layers: 2, normalize }) });
      const demonstrations = agentBuffer(spec, 4, random);
      const provider = new GailRewardProvider(settings, spec, 3, { behavior: '1D', demonstrations });
      // Move the weights off their initial values, so that every term has a gradient worth checking.
      for (let i = 0; i < provider.parameters.length; i++) provider.parameters[i] += 0.3 * random.gaussian();
      if (normalize) provider.normalizer!.update(Float32Array.from({ length: 6 * 5 }, () => 2 * random.gaussian()), 6);
      const policy = randomBatch(spec, 6, random);
      const expert = randomBatch(spec, 6, random);
      const draws = provider.draw(6);
      const beta = () => 0.7;
      const { gradient, stats } = provider.discriminatorLoss(policy, expert, draws, beta);
      expect(stats[GAIL_TAGS.gradientPenalty]).toBeGreaterThan(0);
      const analytic = Float32Array.from(gradient);
      const loss = () => provider.discriminatorLoss(policy, expert, draws, beta).loss;
      const scale = Math.max(...analytic.map(Math.abs));
      let checked = 0;
      const stride = Math.max(2, Math.floor(analytic.length / 60));
      for (let index = 0; index < analytic.length; index += stride) {
        const numeric = centralDifference(provider.parameters, index, 1e-2, loss);
        expect(Math.abs(numeric - analytic[index])).toBeLessThan(2e-3 * scale + 2e-2 * Math.abs(analytic[index]));
        checked++;
      }
      expect(checked).toBeGreaterThan(25);
    });
  }

  it('the penalty is 10 mean((|dD/d obs 0| - 1)^2), dD/d obs 0 measured by finite differences', () => {
    const oneObservation = behavior([2], new ActionSpec(2, []));
    const random = new SeededRandom(5);
    const provider = new GailRewardProvider(gailSettings({}, 8), oneObservation, 5, { behavior: '1D', demonstrations: agentBuffer(oneObservation, 3, random) });
    const policy = randomBatch(oneObservation, 3, random);
    const expert = randomBatch(oneObservation, 3, random);
    // Mixing weights of 1: x~ is the policy's rows.
    const { stats } = provider.discriminatorLoss(policy, expert, { mixing: { images: [], entities: [], rows: new Float32Array(3 * 2).fill(1) }, noise: null }, () => 0);
    const estimate = (observation: Float32Array) => {
      const rewards = provider.evaluate({ ...policy, count: 1, observations: [observation] });
      return (1 - Math.exp(-rewards[0])) / (1 - 1e-7); // D, back from -log(1 - D (1 - eps))
    };
    let penalty = 0;
    for (let i = 0; i < 3; i++) {
      const row = policy.observations[0].slice(i * 2, i * 2 + 2);
      let squared = 0;
      for (let f = 0; f < 2; f++) {
        const slope = centralDifference(row, f, 1e-2, () => estimate(row));
        squared += slope * slope;
      }
      penalty += (Math.sqrt(squared + 1e-7) - 1) ** 2 / 3;
    }
    expect(stats[GAIL_TAGS.gradientPenalty]).toBeCloseTo(10 * penalty, 3);
  });

  // Upstream sums dD/d obs 0 squared over its second axis, an image's channels, and averages over
  // rows and pixels. D made steep (the estimator's weights scaled up) for the penalty to be far
  // from 10; a fully connected encoder, whose kinks central differences seldom cross.
  it.each([
    ['channel first', [3, 4, 5], [DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE]],
    ['channel last', [4, 5, 3], [DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.NONE]],
  ] as Array<[string, number[], DimensionProperty[]]>)(
    'the penalty on an image (%s) is 10 mean over rows and pixels of (|dD/d its channels| - 1)^2, by finite differences',
    (_, shape, dimensionProperty) => {
      const spec: BehaviorSpec = {
        observationSpecs: [{ ...visualObservation(1, 1, 1), shape, dimensionProperty }, visualObservation(2, 3, 3)],
        actionSpec: new ActionSpec(0, [2]),
      };
      const channelFirst = dimensionProperty[0] === DimensionProperty.NONE;
      const [channels, pixels] = channelFirst ? [shape[0], shape[1] * shape[2]] : [shape[2], shape[0] * shape[1]];
      const size = channels * pixels;
      const random = new SeededRandom(3);
      const settings = gailSettings({ network_settings: network({ hidden_units: 8, num_layers: 2, vis_encode_type: 'fully_connected' }) });
      const provider = new GailRewardProvider(settings, spec, 1, { behavior: '1D', demonstrations: new AgentBuffer() });
      const estimator = provider.blocks.find((block) => block.name === 'gail.estimator.weight')!;
      for (let i = estimator.offset; i < estimator.offset + 8; i++) provider.parameters[i] *= 30;
      const count = 2;
      const policy = randomBatch(spec, count, random);
      const draws = provider.draw(count);
      // Mixing weights of 1: x~ is the policy's inputs.
      draws.mixing.images.forEach((weights) => weights.fill(1));
      draws.mixing.rows.fill(1);
      const { stats } = provider.discriminatorLoss(policy, randomBatch(spec, count, random), draws, () => 0);

      let penalty = 0;
      const h = 1e-2;
      for (let i = 0; i < count; i++) {
        // Every value of row i's image moved by +h and -h, as one batch of 2 size rows.
        const image = policy.observations[0].subarray(i * size, (i + 1) * size);
        const moved = new Float32Array(2 * size * size);
        for (let j = 0; j < 2 * size; j++) {
          moved.set(image, j * size);
          moved[j * size + (j >> 1)] += j % 2 === 0 ? h : -h;
        }
        const other = policy.observations[1].subarray(i * 18, (i + 1) * 18);
        const batch = { count: 2 * size, observations: [moved, Float32Array.from({ length: 2 * size * 18 }, (__, j) => other[j % 18])], environmentRewards: new Float32Array(2 * size) };
        const estimates = Array.from(provider.evaluate(batch), (reward) => (1 - Math.exp(-reward)) / (1 - 1e-7));
        const slope = (value: number) => (estimates[2 * value] - estimates[2 * value + 1]) / (2 * h);
        for (let pixel = 0; pixel < pixels; pixel++) {
          let squared = 0;
          for (let c = 0; c < channels; c++) squared += slope(channelFirst ? c * pixels + pixel : pixel * channels + c) ** 2;
          penalty += (Math.sqrt(squared + 1e-7) - 1) ** 2 / (count * pixels);
        }
      }
      expect(10 - 10 * penalty).toBeGreaterThan(0.5);
      expect(stats[GAIL_TAGS.gradientPenalty]).toBeCloseTo(10 * penalty, 3);
    },
  );
});

describe('the GAIL reward provider\'s state and settings', () => {
  const spec = behavior([4], new ActionSpec(0, [3]));

  it('reports upstream\'s tags, with VAIL its beta and KL loss besides', () => {
    const random = new SeededRandom(1);
    const plain = new GailRewardProvider(gailSettings({}, 16), spec, 1, { behavior: '1D', demonstrations: agentBuffer(spec, 10, random) });
    expect(Object.keys(plain.update(randomBatch(spec, 8, random))).sort()).toEqual(
      ['Losses/GAIL Loss', 'Policy/GAIL Expert Estimate', 'Policy/GAIL Grad Mag Loss', 'Policy/GAIL Policy Estimate'],
    );
    const vail = new GailRewardProvider(gailSettings({ use_vail: true }, 16), spec, 1, { behavior: '1D', demonstrations: agentBuffer(spec, 10, random) });
    const tensors = tf.memory().numTensors;
    const stats = vail.update(randomBatch(spec, 8, random));
    vail.evaluate(randomBatch(spec, 8, random));
    expect(tf.memory().numTensors).toBe(tensors);
    expect(Object.keys(stats).sort()).toEqual([
      'Losses/GAIL KL Loss',
      'Losses/GAIL Loss',
      'Policy/GAIL Beta',
      'Policy/GAIL Expert Estimate',
      'Policy/GAIL Grad Mag Loss',
      'Policy/GAIL Policy Estimate',
    ]);
    expect(vail.name).toBe('GAIL');
    expect(vail.ignoreDone).toBe(false);
  });

  it.each([
    ['vector observations', spec, network({ hidden_units: 16, normalize: true })],
    [
      'an image (simple) and a goal signal (hyper)',
      { observationSpecs: [visualObservation(3, 20, 20), vectorObservation(2, ObservationType.GOAL_SIGNAL)], actionSpec: new ActionSpec(1, [3]) },
      network({ hidden_units: 16, normalize: true, goal_conditioning_type: 'hyper' }),
    ],
    [
      'a vector and a variable-length observation',
      { observationSpecs: [vectorObservation(3), entityObservation(4, 2)], actionSpec: new ActionSpec(0, [3]) },
      network({ hidden_units: 16, normalize: true }),
    ],
  ] as Array<[string, BehaviorSpec, NetworkSettings]>)('restores its weights, Adam state, beta and normalizer from its checkpoint arrays (%s)', (_, behaviorSpec, networkSettings) => {
    const random = new SeededRandom(2);
    const settings = gailSettings({ use_vail: true, use_actions: true, network_settings: networkSettings });
    const demonstrations = agentBuffer(behaviorSpec, 10, random);
    const trained = new GailRewardProvider(settings, behaviorSpec, 1, { behavior: '1D', demonstrations });
    const batch = randomBatch(behaviorSpec, 8, random);
    for (let i = 0; i < 3; i++) trained.update(batch);
    const restored = new GailRewardProvider(settings, behaviorSpec, 99, { behavior: '1D', demonstrations });
    expect(Array.from(restored.evaluate(batch))).not.toEqual(Array.from(trained.evaluate(batch)));
    restored.loadStateArrays(trained.stateArrays());
    expect(Array.from(restored.evaluate(batch))).toEqual(Array.from(trained.evaluate(batch)));
    expect(restored.beta).toBe(trained.beta);
    expect(restored.adam.step).toBe(3);
    expect(restored.normalizer!.steps).toBe(trained.normalizer!.steps);
    expect(() => restored.loadStateArrays(new Map([...trained.stateArrays()].filter(([key]) => key !== 'beta')))).toThrow(/beta/);
  });

  it('is built by the registry under reward_signals.gail, and refuses missing demonstrations clearly', () => {
    expect(() => createRewardProvider('gail', gailSettings({ demo_path: '/nowhere/expert.demo' }), '1D', spec, 1)).toThrow(/\/nowhere\/expert\.demo does not exist/);
  });

  it('takes variable-length observations: learns to reward the demonstrations above the policy, padded entities and all, leaking no tensor', () => {
    const withEntities: BehaviorSpec = { observationSpecs: [vectorObservation(3), entityObservation(4, 2)], actionSpec: new ActionSpec(1, []) };
    const random = new SeededRandom(3);
    const rows = 16;
    const buffers = [agentBuffer(withEntities, rows, random), agentBuffer(withEntities, rows, random)];
    // The policy's rows see two entities, the demonstrations' three; the rest is padding.
    buffers.forEach((buffer, b) => {
      const entities = buffer.get(observationKey(1)).rows;
      for (let i = 0; i < rows; i++) entities.fill(0, i * 8 + (b === 0 ? 6 : 4), (i + 1) * 8);
    });
    const [expert, policyBuffer] = buffers;
    const policy = rewardBatchOf(policyBuffer);
    const provider = new GailRewardProvider(gailSettings({ learning_rate: 0.005, use_actions: true }, 16), withEntities, 3, { behavior: '1D', demonstrations: expert });
    const tensors = tf.memory().numTensors;
    for (let i = 0; i < 20; i++) provider.update(policy);
    expect(provider.evaluate(rewardBatchOf(expert))[0]).toBeGreaterThan(provider.evaluate(policy)[0]);
    expect(tf.memory().numTensors).toBe(tensors);
  });
});
