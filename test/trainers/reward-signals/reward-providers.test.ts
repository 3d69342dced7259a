/**
 * The reward providers (src/trainers/reward-signals): the registry, the extrinsic signal, and
 * RND: upstream's test_rnd behaviour (the reward falls on what is seen again and again, vector
 * observations, images and variable-length observations), its hand-derived predictor gradient
 * against finite differences (through the entity attention too), and its checkpoint arrays. Curiosity has its own file (./curiosity.test.ts).
 */
import { SeededRandom } from '../../../src/common/random';
import type { RNDSettings, RewardSignals } from '../../../src/config/settings';
import { ActionSpec, BehaviorSpec, ObservationType } from '../../../src/env/behavior-spec';
import { createRewardProvider, createRewardProviders, BUILT_REWARD_SIGNALS } from '../../../src/trainers/reward-signals/registry';
import { RewardBatch } from '../../../src/trainers/reward-signals/reward-provider';
import { RND_LOSS_TAG, RndRewardProvider } from '../../../src/trainers/reward-signals/rnd';
import { ExtrinsicRewardProvider } from '../../../src/trainers/reward-signals/extrinsic';
import { settingsForBehavior } from '../../../src/config';
import { memoryLogger } from '../../../src/common/logger';
import { selectBackend } from '../../../src/networks/backend';
import { createPpoNetworks } from '../../../src/trainers/ppo/update';
import type { PpoTrainerSettings } from '../../../src/trainers/ppo/trainer';
import { load } from '../../config/config-helpers';
import { centralDifference, directionalDifference } from '../../helpers/finite-differences';
import { behavior, entityObservation, network, observations, vectorObservation, visualObservation } from '../../networks/model-fixtures';
import { blockValues } from '../../../src/networks/layers/layer';

const spec = behavior([6, 4], new ActionSpec(2, []));

function rndSettings(overrides: Partial<RNDSettings> = {}, normalize = false): RNDSettings {
  return {
    gamma: 0.99,
    strength: 0.01,
    learning_rate: 1e-3,
    encoding_size: null,
    network_settings: network({ hidden_units: 16, num_layers: 2, normalize }),
    ...overrides,
  };
}

function batchOf(count: number, seed: number): RewardBatch {
  return { count, observations: observations(spec, count, new SeededRandom(seed)), environmentRewards: new Float32Array(count) };
}

function mean(values: Float32Array): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe('the reward-provider registry', () => {
  it('builds extrinsic, rnd, curiosity and gail by their reward_signals keys, in order', () => {
    expect(BUILT_REWARD_SIGNALS).toEqual(['extrinsic', 'rnd', 'gail', 'curiosity']);
    const providers = createRewardProviders({ extrinsic: { gamma: 0.99, strength: 1, network_settings: network() }, rnd: rndSettings() }, '1D', spec, 1);
    expect([...providers.keys()]).toEqual(['extrinsic', 'rnd']);
    expect(providers.get('extrinsic')!.name).toBe('Extrinsic');
    expect(providers.get('rnd')!).toBeInstanceOf(RndRewardProvider);
    expect(providers.get('rnd')!.ignoreDone).toBe(true);
    expect(providers.get('extrinsic')!.ignoreDone).toBe(false);
  });

  it('refuses a signal it does not know, naming it', () => {
    expect(() => createRewardProvider('pyramids' as keyof RewardSignals, rndSettings(), '1D', spec, 1)).toThrow(/pyramids/);
  });
});

describe('the extrinsic reward provider', () => {
  it('gives the environment rewards and trains nothing', () => {
    const provider = createRewardProvider('extrinsic', { gamma: 0.9, strength: 0.5, network_settings: network() }, '1D', spec, 1);
    const rewards = Float32Array.from([1, -0.5, 0, 2]);
    expect(Array.from(provider.evaluate({ ...batchOf(4, 1), environmentRewards: rewards }))).toEqual([1, -0.5, 0, 2]);
    expect(provider.update(batchOf(4, 1))).toEqual({});
    expect(provider.gamma).toBe(0.9);
    expect(provider.strength).toBe(0.5);
    expect(provider.stateArrays().size).toBe(0);
  });

  it('adds the group reward always and the groupmates\' rewards when POCA asks for them, as upstream', () => {
    const provider = new ExtrinsicRewardProvider({ gamma: 0.99, strength: 1, network_settings: network() });
    const batch = {
      ...batchOf(2, 1),
      environmentRewards: Float32Array.from([1, -0.5]),
      groupRewards: Float32Array.from([0, 2]),
      groupmateRewards: Float32Array.from([0.25, 0, 1, -1.5]),
    };
    expect(Array.from(provider.evaluate(batch))).toEqual([1, 1.5]);
    provider.addGroupmateRewards = true;
    expect(Array.from(provider.evaluate(batch))).toEqual([1.25, 1]);
    expect(Array.from(batch.environmentRewards)).toEqual([1, -0.5]);
  });
});

describe('the RND reward provider', () => {
  it('its reward falls on observations seen again and again, and stays higher on unseen ones', () => {
    for (const normalize of [false, true]) {
      const provider = new RndRewardProvider(rndSettings({ learning_rate: 3e-3 }, normalize), spec, 3);
      const seen = batchOf(32, 10);
      const unseen = batchOf(32, 11);
      const before = mean(provider.evaluate(seen));
      expect(mean(provider.evaluate(unseen))).toBeGreaterThan(0);
      let loss = Infinity;
      for (let i = 0; i < 200; i++) loss = provider.update(seen)[RND_LOSS_TAG];
      const after = mean(provider.evaluate(seen));
      expect(after).toBeLessThan(before / 2);
      expect(loss).toBeCloseTo(after, 1);
      expect(mean(provider.evaluate(unseen))).toBeGreaterThan(after);
    }
  });

  it('derives the predictor gradient by hand as finite differences find it', () => {
    const provider = new RndRewardProvider(rndSettings(), spec, 5);
    const batch = batchOf(7, 2);
    const { gradient } = provider.lossAndGradient(batch);
    const analytic = gradient.slice();
    const parameters = provider.predictor.parameters;
    const random = new SeededRandom(9);
    for (let k = 0; k < 40; k++) {
      const index = Math.floor(random.next() * parameters.length);
      const numeric = centralDifference(parameters, index, 1e-2, () => provider.lossAndGradient(batch).loss, () => provider.predictor.parametersChanged());
      expect(analytic[index]).toBeCloseTo(numeric, 2);
    }
  });

  it('with a goal signal: its networks are conditioned on it, and the predictor gradient is the one finite differences find', () => {
    const goalSpec: BehaviorSpec = { observationSpecs: [vectorObservation(4), vectorObservation(2, ObservationType.GOAL_SIGNAL)], actionSpec: new ActionSpec(1, []) };
    const provider = new RndRewardProvider(rndSettings(), goalSpec, 5);
    expect(provider.predictor.body.goalConditioned).toBe(true);
    const batch: RewardBatch = { count: 7, observations: observations(goalSpec, 7, new SeededRandom(2)), environmentRewards: new Float32Array(7) };
    const analytic = provider.lossAndGradient(batch).gradient.slice();
    const parameters = provider.predictor.parameters;
    for (const block of provider.predictor.body.bodyEncoder.blocks.filter((b) => b.name.includes('hypernet'))) {
      const values = blockValues(analytic, block);
      const largest = [...values.keys()].sort((a, b) => Math.abs(values[b]) - Math.abs(values[a]))[0];
      const numeric = centralDifference(parameters, block.offset + largest, 1e-2, () => provider.lossAndGradient(batch).loss, () => provider.predictor.parametersChanged());
      expect(Math.abs(values[largest] - numeric)).toBeLessThan(2e-3 + 2e-2 * Math.abs(numeric));
    }
  });

  it('with a camera: its reward falls on images seen again and again, and its gradient reaches the image encoder', () => {
    const camera: BehaviorSpec = { observationSpecs: [visualObservation(3, 20, 20), vectorObservation(4)], actionSpec: new ActionSpec(1, []) };
    const imageBatch = (count: number, seed: number): RewardBatch => ({
      count,
      observations: observations(camera, count, new SeededRandom(seed)),
      environmentRewards: new Float32Array(count),
    });
    const provider = new RndRewardProvider(rndSettings({ learning_rate: 3e-3 }, true), camera, 3);
    expect(provider.predictor.body.encoders).toHaveLength(1);
    const seen = imageBatch(16, 10);
    const unseen = imageBatch(16, 11);
    const before = mean(provider.evaluate(seen));
    for (let i = 0; i < 60; i++) provider.update(seen);
    const after = mean(provider.evaluate(seen));
    expect(after).toBeLessThan(before / 2);
    expect(mean(provider.evaluate(unseen))).toBeGreaterThan(after);

    // The predictor's gradient in every block of its image encoder (see directionalDifference).
    const batch = imageBatch(6, 12);
    const analytic = provider.lossAndGradient(batch).gradient.slice();
    const lossAt = () => provider.lossAndGradient(batch).loss;
    for (const block of provider.predictor.body.encoders[0].blocks) {
      const blockGradient = blockValues(analytic, block);
      const norm = Math.hypot(...blockGradient);
      if (block.name.endsWith('rsa.fc_k.bias')) {
        // The keys' bias moves every score of a query alike, which the softmax ignores: no gradient.
        expect(norm).toBeLessThan(1e-6);
        continue;
      }
      expect(norm).toBeGreaterThan(1e-3);
      const numeric = directionalDifference(blockValues(provider.predictor.parameters, block), blockGradient.map((g) => g / norm), 1e-3, lossAt, () => provider.predictor.parametersChanged());
      expect(Math.abs(numeric - norm)).toBeLessThan(0.05 * norm);
    }
  });

  it('with variable-length observations: its reward falls on what it sees again and again, and the predictor gradient through the attention, padded entities among them, is the one finite differences find', () => {
    const entities: BehaviorSpec = { observationSpecs: [vectorObservation(4), entityObservation(5, 3)], actionSpec: new ActionSpec(1, []) };
    // Row i shows i mod 6 of the 5 entities, the rest padding.
    const entityBatch = (count: number, seed: number): RewardBatch => {
      const values = observations(entities, count, new SeededRandom(seed));
      for (let i = 0; i < count; i++) values[1].fill(0, (i * 5 + (i % 6)) * 3, (i + 1) * 15);
      return { count, observations: values, environmentRewards: new Float32Array(count) };
    };
    const provider = new RndRewardProvider(rndSettings({ learning_rate: 3e-3 }, true), entities, 3);
    expect(provider.predictor.body.attention).not.toBeNull();
    const seen = entityBatch(12, 10);
    const unseen = entityBatch(12, 11);
    const before = mean(provider.evaluate(seen));
    for (let i = 0; i < 60; i++) provider.update(seen);
    const after = mean(provider.evaluate(seen));
    expect(after).toBeLessThan(before / 2);
    expect(mean(provider.evaluate(unseen))).toBeGreaterThan(after);

    const batch = entityBatch(7, 12);
    const analytic = provider.lossAndGradient(batch).gradient.slice();
    const lossAt = () => provider.lossAndGradient(batch).loss;
    for (const block of provider.predictor.body.attention!.blocks) {
      const blockGradient = blockValues(analytic, block);
      const norm = Math.hypot(...blockGradient);
      if (block.name.endsWith('rsa.fc_k.bias')) {
        // The keys' bias moves every score of a query alike, which the softmax ignores: no gradient.
        expect(norm).toBeLessThan(1e-6);
        continue;
      }
      expect(norm).toBeGreaterThan(1e-3);
      const numeric = directionalDifference(blockValues(provider.predictor.parameters, block), blockGradient.map((g) => g / norm), 1e-2, lossAt, () => provider.predictor.parametersChanged());
      expect(Math.abs(numeric - norm)).toBeLessThan(0.05 * norm);
    }
  });

  it('checkpoint arrays bring back its weights, Adam state and normalizer', () => {
    const trained = new RndRewardProvider(rndSettings({}, true), spec, 7);
    for (let i = 0; i < 5; i++) trained.update(batchOf(16, 20 + i));
    const restored = new RndRewardProvider(rndSettings({}, true), spec, 8);
    const probe = batchOf(8, 99);
    restored.loadStateArrays(new Map([...trained.stateArrays()].map(([key, values]) => [key, values.slice()])));
    expect(restored.adam.step).toBe(5);
    expect(Array.from(restored.evaluate(probe))).toEqual(Array.from(trained.evaluate(probe)));
    expect(restored.update(probe)).toEqual(trained.update(probe));
    expect(Array.from(restored.predictor.parameters)).toEqual(Array.from(trained.predictor.parameters));
  });

  it('ignores memory in its network settings, with upstream\'s warning', () => {
    const warnings: string[] = [];
    const logger = { debug: () => undefined, info: () => undefined, warning: (m: string) => warnings.push(m), error: () => undefined };
    const settings = rndSettings();
    const provider = new RndRewardProvider(
      { ...settings, network_settings: { ...settings.network_settings, memory: { memory_size: 8, sequence_length: 4 } } },
      spec,
      1,
      logger,
    );
    expect(provider.predictor.body.memory).toBeNull();
    expect(warnings).toEqual(['memory was specified in network_settings but is not supported by RND. It is being ignored.']);
  });
});

describe('a PPO checkpoint with RND', () => {
  it('holds the RND networks, Adam state and normalizer, and restores them', () => {
    const { options } = load(
      'behaviors:\n  B:\n    trainer_type: ppo\n    network_settings: {num_layers: 1, hidden_units: 8}\n' +
        '    reward_signals:\n      extrinsic: {strength: 1.0}\n      rnd: {strength: 0.01, network_settings: {hidden_units: 8, normalize: true}}\n',
    );
    const settings = settingsForBehavior(options, 'B', memoryLogger()) as PpoTrainerSettings;
    const saved = createPpoNetworks('1D', spec, settings, 1).optimizer;
    const rnd = saved.rewardProviders.get('rnd') as RndRewardProvider;
    for (let i = 0; i < 3; i++) rnd.update(batchOf(8, 40 + i));
    const restored = createPpoNetworks('1D', spec, settings, 2).optimizer;
    restored.loadState(saved.saveState(123));
    const back = restored.rewardProviders.get('rnd') as RndRewardProvider;
    expect(back.adam.step).toBe(3);
    expect(back.normalizer!.steps).toBe(rnd.normalizer!.steps);
    expect(Array.from(back.predictor.parameters)).toEqual(Array.from(rnd.predictor.parameters));
    expect(Array.from(back.target.parameters)).toEqual(Array.from(rnd.target.parameters));
  });
});
