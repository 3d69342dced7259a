/**
 * The curiosity reward provider: upstream's test_curiosity behaviours (the reward falls on an
 * experience seen again and again; the inverse model learns the action and the forward model the
 * next state) for continuous, discrete, hybrid actions, images and variable-length observations,
 * its hand-derived gradient against finite differences (through the entity attention too), the
 * padding left out of its losses, and its checkpoint arrays.
 */
import { SeededRandom } from '../../../src/common/random';
import { memoryLogger } from '../../../src/common/logger';
import { selectBackend } from '../../../src/networks/backend';
import type { CuriositySettings } from '../../../src/config/settings';
import { ActionSpec, BehaviorSpec, ObservationType, observationSize } from '../../../src/env/behavior-spec';
import { blockValues } from '../../../src/networks/layers/layer';
import { CuriosityRewardProvider, FORWARD_LOSS_WEIGHT, LOSS_MULTIPLIER } from '../../../src/trainers/reward-signals/curiosity';
import { createRewardProvider } from '../../../src/trainers/reward-signals/registry';
import type { RewardBatch } from '../../../src/trainers/reward-signals/reward-provider';
import { centralDifference, directionalDifference } from '../../helpers/finite-differences';
import { entityObservation, network, vectorObservation, visualObservation } from '../../networks/model-fixtures';

const FORWARD_LOSS = 'Losses/Curiosity Forward Loss';
const INVERSE_LOSS = 'Losses/Curiosity Inverse Loss';

const CONTINUOUS: BehaviorSpec = { observationSpecs: [vectorObservation(10)], actionSpec: ActionSpec.createContinuous(5) };
const TWO_DISCRETE: BehaviorSpec = { observationSpecs: [vectorObservation(10)], actionSpec: ActionSpec.createDiscrete([2, 3]) };
const ONE_DISCRETE: BehaviorSpec = { observationSpecs: [vectorObservation(10)], actionSpec: ActionSpec.createDiscrete([2]) };
const HYBRID: BehaviorSpec = { observationSpecs: [vectorObservation(6), vectorObservation(3)], actionSpec: new ActionSpec(2, [3, 2]) };
/** Upstream's visual case: a vector and two cameras (here smaller than its 64x66 and 24x26, same roles). */
const VISUAL: BehaviorSpec = {
  observationSpecs: [vectorObservation(10), visualObservation(3, 24, 26), visualObservation(1, 20, 22)],
  actionSpec: ActionSpec.createContinuous(5),
};

/** A vector observation and a variable-length one of up to 4 entities of 3 values: the state encoder attends over the entities. */
const VAR_LEN: BehaviorSpec = { observationSpecs: [vectorObservation(4), entityObservation(4, 3)], actionSpec: new ActionSpec(2, [3]) };

/** A goal signal beside a vector observation: the state encoder is upstream's ConditionalEncoder (goal_conditioning_type hyper). */
const GOAL: BehaviorSpec = { observationSpecs: [vectorObservation(4), vectorObservation(2, ObservationType.GOAL_SIGNAL)], actionSpec: new ActionSpec(2, [3]) };

function settings(overrides: Partial<CuriositySettings> = {}, hiddenUnits = 32): CuriositySettings {
  return {
    gamma: 0.99,
    strength: 0.01,
    learning_rate: 3e-4,
    encoding_size: null,
    network_settings: network({ hidden_units: hiddenUnits, num_layers: 2 }),
    ...overrides,
  };
}

/**
 * Upstream's create_agent_buffer: `count` copies of one experience (observations, next
 * observations and action drawn at random); with `distinct`, every row drawn on its own.
 */
function batchOf(spec: BehaviorSpec, count: number, seed: number, distinct = false): RewardBatch {
  const random = new SeededRandom(seed);
  const rows = distinct ? count : 1;
  const draw = () => spec.observationSpecs.map((obs) => Float32Array.from({ length: rows * observationSize(obs) }, () => random.gaussian()));
  const repeat = (values: Float32Array) => {
    const out = new Float32Array((values.length / rows) * count);
    for (let i = 0; i < count; i++) out.set(values.subarray(((i % rows) * values.length) / rows, (((i % rows) + 1) * values.length) / rows), (i * values.length) / rows);
    return out;
  };
  const observations = draw().map(repeat);
  const nextObservations = draw().map(repeat);
  const action = spec.actionSpec.randomAction(rows, () => random.next());
  return {
    count,
    observations,
    nextObservations,
    environmentRewards: new Float32Array(count),
    continuousActions: repeat(action.continuous),
    discreteActions: Float32Array.from(repeat(Float32Array.from(action.discrete))),
    masks: new Float32Array(count).fill(1),
  };
}

/** The batch with each row's last entities of every variable-length observation zeroed (row i keeps i mod (entities + 1)), as Unity pads them. */
function withPaddedEntities(batch: RewardBatch): RewardBatch {
  const pad = (values: Float32Array, k: number) => {
    const obs = VAR_LEN.observationSpecs[k];
    if (obs.shape.length !== 2) return values;
    const [entities, size] = obs.shape;
    const padded = values.slice();
    for (let i = 0; i < batch.count; i++) padded.fill(0, (i * entities + (i % (entities + 1))) * size, (i + 1) * entities * size);
    return padded;
  };
  return { ...batch, observations: batch.observations.map(pad), nextObservations: batch.nextObservations!.map(pad) };
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe('the curiosity reward provider', () => {
  it('is built by the registry under its reward_signals key, with upstream\'s name, strength and done handling', () => {
    for (const spec of [CONTINUOUS, TWO_DISCRETE, ONE_DISCRETE, HYBRID, VISUAL]) {
      const provider = createRewardProvider('curiosity', settings({ strength: 0.1 }), '1D', spec, 1);
      expect(provider).toBeInstanceOf(CuriosityRewardProvider);
      expect(provider.name).toBe('Curiosity');
      expect(provider.strength).toBe(0.1);
      expect(provider.ignoreDone).toBe(true);
      expect(provider.trains).toBe(true);
    }
  });

  it.each([
    ['continuous, with two cameras', VISUAL],
    ['two discrete branches', TWO_DISCRETE],
    ['one discrete branch', ONE_DISCRETE],
    ['hybrid', HYBRID],
  ])('%s: the reward falls on an experience seen again and again (upstream\'s test_reward_decreases)', (_, spec) => {
    const provider = new CuriosityRewardProvider(settings(), spec, 42);
    const buffer = batchOf(spec, 5, 42);
    provider.update(buffer);
    const before = provider.evaluate(buffer)[0];
    expect(before).toBeGreaterThan(0);
    for (let i = 0; i < 20; i++) provider.update(buffer);
    expect(provider.evaluate(buffer)[0]).toBeLessThan(before);
  });

  it('the inverse model learns the continuous action (upstream\'s test_continuous_action_prediction)', () => {
    const provider = new CuriosityRewardProvider(settings({ strength: 0.1 }), CONTINUOUS, 42);
    const buffer = batchOf(CONTINUOUS, 5, 42);
    const first = provider.update(buffer)[INVERSE_LOSS];
    let stats: Record<string, number> = {};
    for (let i = 0; i < 200; i++) stats = provider.update(buffer);
    // The inverse loss sums the squared error over the 5 actions; upstream's bound is on its mean.
    expect(stats[INVERSE_LOSS] / 5).toBeLessThan(0.001);
    expect(stats[INVERSE_LOSS]).toBeLessThan(first);
  });

  it.each([
    ['continuous, with two cameras', VISUAL],
    ['two discrete branches', TWO_DISCRETE],
    ['one discrete branch', ONE_DISCRETE],
    ['hybrid', HYBRID],
  ])('%s: the forward model learns the next state and both losses fall (upstream\'s test_next_state_prediction)', (_, spec) => {
    const hidden = 32;
    const provider = new CuriosityRewardProvider(settings({ strength: 0.1 }, hidden), spec, 42);
    const buffer = batchOf(spec, 5, 42);
    const first = provider.update(buffer);
    let stats: Record<string, number> = {};
    for (let i = 0; i < 100; i++) stats = provider.update(buffer);
    // forward loss = mean 0.5 sum (s' - p)^2; upstream's bound is on the mean of (s' - p)^2 over features.
    expect((2 * stats[FORWARD_LOSS]) / hidden).toBeLessThan(0.001);
    expect(stats[FORWARD_LOSS]).toBeLessThan(first[FORWARD_LOSS]);
    expect(stats[INVERSE_LOSS]).toBeLessThan(first[INVERSE_LOSS]);
  });

  it('rewards nothing before its first update, then at most 1 / strength', () => {
    const provider = new CuriosityRewardProvider(settings({ strength: 0.5, learning_rate: 0 }, 64), HYBRID, 3);
    const buffer = batchOf(HYBRID, 6, 4, true);
    expect(Array.from(provider.evaluate(buffer))).toEqual([0, 0, 0, 0, 0, 0]);
    provider.update(buffer);
    // A far-off next state: the uncapped error is well above 2.
    const far = { ...buffer, nextObservations: buffer.nextObservations!.map((obs) => obs.map((x) => 50 * x)) };
    const rewards = provider.evaluate(far);
    expect(Math.max(...rewards)).toBe(2);
    expect(Math.min(...provider.evaluate(buffer))).toBeGreaterThan(0);
  });

  it.each([
    ['continuous', CONTINUOUS],
    ['discrete', TWO_DISCRETE],
    ['hybrid', HYBRID],
    ['images', VISUAL],
    ['a goal signal, conditioning the state encoder', GOAL],
  ])('%s: the hand-derived gradient of 10 (0.2 forward + 0.8 inverse) is the one finite differences find, in every block', (_, spec) => {
    const provider = new CuriosityRewardProvider(settings({}, 16), spec, 5);
    expect(provider.stateEncoder.goalConditioned).toBe(spec === GOAL);
    const batch = batchOf(spec, 7, 6, true);
    const { loss, forwardLoss, inverseLoss, gradient } = provider.lossAndGradient(batch);
    expect(loss).toBeCloseTo(LOSS_MULTIPLIER * (FORWARD_LOSS_WEIGHT * forwardLoss + (1 - FORWARD_LOSS_WEIGHT) * inverseLoss), 4);
    const analytic = gradient.slice();
    const parameters = provider.parameters;
    const lossAt = () => provider.lossAndGradient(batch).loss;
    // Parameters change in place: a checkpoint load makes the layers upload their weights again.
    const reload = () => provider.loadStateArrays(provider.stateArrays());
    const random = new SeededRandom(9);
    for (const block of provider.blocks) {
      const values = blockValues(parameters, block);
      const blockGradient = blockValues(analytic, block);
      if (block.name.includes('.encoders.')) {
        // Inside an image encoder, LeakyReLU's kinks lie within any single-entry step float32
        // resolves: the derivative along the block's whole gradient must be the gradient's norm.
        const norm = Math.hypot(...blockGradient);
        expect(norm).toBeGreaterThan(0);
        const numeric = directionalDifference(values, blockGradient.map((g) => g / norm), 1e-3, lossAt, reload);
        expect(Math.abs(numeric - norm)).toBeLessThan(0.05 * norm);
        continue;
      }
      for (let k = 0; k < 3; k++) {
        const index = block.offset + random.int(values.length);
        const numeric = centralDifference(parameters, index, 1e-2, lossAt, reload);
        expect(Math.abs(analytic[index] - numeric)).toBeLessThan(2e-3 + 2e-2 * Math.abs(numeric));
      }
    }
  });

  it('variable-length observations: the reward falls on an experience seen again and again; the gradient through the attention, padded entities among them, is the one finite differences find', () => {
    const seen = withPaddedEntities(batchOf(VAR_LEN, 5, 42, true));
    const provider = new CuriosityRewardProvider(settings({}, 16), VAR_LEN, 42);
    expect(provider.stateEncoder.attention).not.toBeNull();
    provider.update(seen);
    const before = provider.evaluate(seen)[0];
    expect(before).toBeGreaterThan(0);
    for (let i = 0; i < 20; i++) provider.update(seen);
    expect(provider.evaluate(seen)[0]).toBeLessThan(before);

    const batch = withPaddedEntities(batchOf(VAR_LEN, 7, 6, true));
    const analytic = provider.lossAndGradient(batch).gradient.slice();
    const lossAt = () => provider.lossAndGradient(batch).loss;
    const reload = () => provider.loadStateArrays(provider.stateArrays());
    const attentionBlocks = provider.stateEncoder.attention!.blocks;
    expect(attentionBlocks.map((b) => b.name)).toEqual(expect.arrayContaining(['curiosity.state_encoder.encoders.rsa.fc_q.weight', 'curiosity.state_encoder.encoders.1.self_ent_encoder.seq_layers.0.weight']));
    for (const block of attentionBlocks) {
      const blockGradient = blockValues(analytic, block);
      const norm = Math.hypot(...blockGradient);
      if (block.name.endsWith('rsa.fc_k.bias')) {
        // The keys' bias moves every score of a query alike, which the softmax ignores: no gradient.
        expect(norm).toBeLessThan(1e-6);
        continue;
      }
      expect(norm).toBeGreaterThan(1e-3);
      const numeric = directionalDifference(blockValues(provider.parameters, block), blockGradient.map((g) => g / norm), 1e-2, lossAt, reload);
      expect(Math.abs(numeric - norm)).toBeLessThan(0.05 * norm);
    }
  });

  it('leaves the padding of recurrent sequences (mask 0) out of both losses, as upstream', () => {
    const provider = new CuriosityRewardProvider(settings(), HYBRID, 5);
    const batch = batchOf(HYBRID, 5, 6, true);
    // Three rows of padding with values of their own after the batch's five.
    const padding = batchOf(HYBRID, 3, 7, true);
    const joined = (a: Float32Array, b: Float32Array) => Float32Array.of(...a, ...b);
    const withPadding: RewardBatch = {
      count: 8,
      observations: batch.observations.map((obs, k) => joined(obs, padding.observations[k])),
      nextObservations: batch.nextObservations!.map((obs, k) => joined(obs, padding.nextObservations![k])),
      environmentRewards: new Float32Array(8),
      continuousActions: joined(batch.continuousActions!, padding.continuousActions!),
      discreteActions: joined(Float32Array.from(batch.discreteActions!), Float32Array.from(padding.discreteActions!)),
      masks: Float32Array.of(1, 1, 1, 1, 1, 0, 0, 0),
    };
    const plain = provider.lossAndGradient(batch);
    const plainGradient = plain.gradient.slice();
    const masked = provider.lossAndGradient(withPadding);
    expect(masked.forwardLoss).toBeCloseTo(plain.forwardLoss, 5);
    expect(masked.inverseLoss).toBeCloseTo(plain.inverseLoss, 5);
    for (let i = 0; i < plainGradient.length; i += 97) expect(masked.gradient[i]).toBeCloseTo(plainGradient[i], 5);
  });

  it('checkpoint arrays bring back its weights and Adam state', () => {
    const trained = new CuriosityRewardProvider(settings(), VISUAL, 7);
    for (let i = 0; i < 4; i++) trained.update(batchOf(VISUAL, 6, 20 + i, true));
    const restored = new CuriosityRewardProvider(settings(), VISUAL, 8);
    expect(Array.from(restored.parameters)).not.toEqual(Array.from(trained.parameters));
    restored.loadStateArrays(new Map([...trained.stateArrays()].map(([key, values]) => [key, values.slice()])));
    expect(restored.adam.step).toBe(4);
    const probe = batchOf(VISUAL, 5, 99, true);
    expect(Array.from(restored.evaluate(probe))).toEqual(Array.from(trained.evaluate(probe)));
    expect(restored.update(probe)).toEqual(trained.update(probe));
    expect(Array.from(restored.parameters)).toEqual(Array.from(trained.parameters));
    expect(() => restored.loadStateArrays(new Map())).toThrow(/parameters/);
  });

  it('ignores memory in its network settings, with upstream\'s warning', () => {
    const warnings: string[] = [];
    const logger = { debug: () => undefined, info: () => undefined, warning: (m: string) => warnings.push(m), error: () => undefined };
    const base = settings();
    const provider = new CuriosityRewardProvider(
      { ...base, network_settings: { ...base.network_settings, memory: { memory_size: 8, sequence_length: 4 } } },
      CONTINUOUS,
      1,
      logger,
    );
    expect(provider.stateEncoder.memory).toBeNull();
    expect(warnings).toEqual(['memory was specified in network_settings but is not supported by Curiosity. It is being ignored.']);
  });

  it('says what is missing from a batch without next observations or actions', () => {
    const provider = new CuriosityRewardProvider(settings(), HYBRID, 1);
    const batch = batchOf(HYBRID, 3, 1);
    expect(() => provider.update({ ...batch, nextObservations: undefined })).toThrow(/needs each experience's next observations \(next_obs:i\)/);
    expect(() => provider.update({ ...batch, discreteActions: undefined })).toThrow(/needs the discrete actions of each experience \(3 x 2 values\), got none/);
  });
});
