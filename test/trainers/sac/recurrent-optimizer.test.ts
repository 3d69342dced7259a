/**
 * SAC's optimizer with memory, as upstream's update: the gradients over sequences (the actor's,
 * V's and the Q networks' LSTMs included) against finite differences; the masked means (policy
 * and entropy losses over real steps only, the Q and value losses plain means as upstream's
 * masked mean of a scalar mse_loss); the Q target from V's memories after one step on each
 * sequence's first observation; the checkpoint round trip with the LSTMs.
 */
import { memoryLogger } from '../../../src/common/logger';
import { ActionSpec, BehaviorSpec } from '../../../src/env/behavior-spec';
import { ActorCritic } from '../../../src/networks/actor-critic';
import { selectBackend } from '../../../src/networks/backend';
import { SacGradients, SacOptimizer, maskedCount } from '../../../src/trainers/sac/optimizer';
import type { ReplayRows } from '../../../src/trainers/sac/replay-buffer';
import { behavior, network } from '../../networks/model-fixtures';
import { sequenceBatchFor } from './fixtures/replay-batch';
import { centralDifference } from '../../helpers/finite-differences';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

const SEQUENCE = 3;
const MEMORY = 6;
const NOISE_SEED = 17;
const GAMMA = 0.9;

function optimizerFor(spec: BehaviorSpec): SacOptimizer {
  const model = new ActorCritic(spec, {
    network: network({ hidden_units: 8, num_layers: 1, memory: { memory_size: MEMORY, sequence_length: SEQUENCE } }),
    rewardSignals: ['extrinsic'],
    sharedCritic: false,
    seed: 4,
    conditionalSigma: true,
    tanhSquash: true,
  });
  return new SacOptimizer(model, spec, {
    hyperparameters: { learning_rate: 3e-3, learning_rate_schedule: 'constant', tau: 0.05, init_entcoef: 0.5 },
    maxSteps: 1000,
    signals: [{ gamma: GAMMA, strength: 1 }],
    seed: 6,
  });
}

/** `sequences` sequences of random experiences with random memories; `masks` per row (1 by default). */
function sequenceBatch(spec: BehaviorSpec, sequences: number, seed: number, masks?: number[]): ReplayRows {
  return sequenceBatchFor(spec, sequences, SEQUENCE, MEMORY, seed, masks);
}

/** The rows of sequences [from, to) of `batch`, with its masks replaced by `masks` when given. */
function sequencesOf(batch: ReplayRows, from: number, to: number, masks?: number[]): ReplayRows {
  const n = batch.count;
  const rows = (values: Float32Array) => {
    const width = values.length / n;
    return values.slice(from * SEQUENCE * width, to * SEQUENCE * width);
  };
  return {
    count: (to - from) * SEQUENCE,
    observations: batch.observations.map(rows),
    nextObservations: batch.nextObservations.map(rows),
    continuousActions: rows(batch.continuousActions),
    discreteActions: Int32Array.from(rows(Float32Array.from(batch.discreteActions))),
    actionMasks: rows(batch.actionMasks),
    rewards: rows(batch.rewards),
    dones: rows(batch.dones),
    memories: rows(batch.memories!),
    criticMemories: rows(batch.criticMemories!),
    masks: masks === undefined ? rows(batch.masks!) : Float32Array.from(masks),
  };
}

function losses(optimizer: SacOptimizer, batch: ReplayRows): SacGradients {
  optimizer.random.reseed(NOISE_SEED);
  const result = optimizer.lossesAndGradients(batch);
  return { ...result, modelGradient: Float32Array.from(result.modelGradient), q1Gradient: Float32Array.from(result.q1Gradient), q2Gradient: Float32Array.from(result.q2Gradient) };
}

function blockIndices(model: { readonly blocks: ActorCritic['blocks'] }, prefix: string): number[] {
  return model.blocks
    .filter((block) => block.name.startsWith(prefix))
    .flatMap((block) => Array.from({ length: block.shape.reduce((a, b) => a * b, 1) }, (_, k) => block.offset + k));
}

/** Central differences of `loss` against `analytic` at the largest entries among `indices`. */
function expectGradientMatches(parameters: Float32Array, indices: number[], analytic: ArrayLike<number>, loss: () => number, changed: () => void = () => undefined): void {
  const checked = [...indices].sort((a, b) => Math.abs(analytic[b]) - Math.abs(analytic[a])).slice(0, 8);
  expect(Math.abs(analytic[checked[0]])).toBeGreaterThan(1e-4);
  for (const index of checked) {
    const numeric = centralDifference(parameters, index, 1e-2, loss, changed);
    expect(Math.abs(numeric - analytic[index])).toBeLessThanOrEqual(2e-3 + 0.05 * Math.abs(analytic[index]));
  }
}

const cases: Array<[string, ActionSpec]> = [
  ['continuous actions', ActionSpec.createContinuous(2)],
  ['discrete branches', ActionSpec.createDiscrete([3, 2])],
  ['hybrid actions', new ActionSpec(1, [3])],
];

describe.each(cases)('recurrent SAC gradients, %s', (_, actionSpec) => {
  const spec = behavior([3], actionSpec);
  // Two sequences, the second padded after its first step.
  const masks = [1, 1, 1, 1, 0, 0];

  it("the actor's (its LSTM's included) is the masked policy loss's, V's the value loss's", () => {
    const optimizer = optimizerFor(spec);
    const batch = sequenceBatch(spec, 2, 11, masks);
    const model = optimizer.model;
    const analytic = losses(optimizer, batch).modelGradient;
    const changed = () => model.parametersChanged();
    expect(blockIndices(model, 'actor.lstm.').length).toBeGreaterThan(0);
    expectGradientMatches(model.parameters, blockIndices(model, 'actor.lstm.'), analytic, () => losses(optimizer, batch).policyLoss, changed);
    expectGradientMatches(model.parameters, blockIndices(model, 'actor.'), analytic, () => losses(optimizer, batch).policyLoss, changed);
    expectGradientMatches(model.parameters, blockIndices(model, 'critic.lstm.'), analytic, () => losses(optimizer, batch).valueLoss, changed);
    expectGradientMatches(model.parameters, blockIndices(model, 'critic.'), analytic, () => losses(optimizer, batch).valueLoss, changed);
  });

  it("each Q network's (its LSTM's included) is its loss's, and the entropy coefficients' the masked entropy loss's", () => {
    const optimizer = optimizerFor(spec);
    const batch = sequenceBatch(spec, 2, 12, masks);
    const first = losses(optimizer, batch);
    const changed = (q: SacOptimizer['q1']) => () => q.parametersChanged();
    expectGradientMatches(optimizer.q1.parameters, blockIndices(optimizer.q1, 'body.lstm.'), first.q1Gradient, () => losses(optimizer, batch).q1Loss, changed(optimizer.q1));
    expectGradientMatches(optimizer.q1.parameters, blockIndices(optimizer.q1, ''), first.q1Gradient, () => losses(optimizer, batch).q1Loss, changed(optimizer.q1));
    expectGradientMatches(optimizer.q2.parameters, blockIndices(optimizer.q2, ''), first.q2Gradient, () => losses(optimizer, batch).q2Loss, changed(optimizer.q2));
    const used = actionSpec.continuousSize > 0 ? [...actionSpec.discreteBranches.keys(), actionSpec.discreteBranches.length] : [...actionSpec.discreteBranches.keys()];
    expectGradientMatches(optimizer.logEntropyCoefficients, used, first.entropyCoefficientGradient, () => losses(optimizer, batch).entropyLoss);
  });
});

describe('masked means, as upstream', () => {
  it('counts the unmasked rows, at least one', () => {
    expect(maskedCount(Float32Array.from([1, 1, 0, 1, 0]))).toBe(3);
    expect(maskedCount(Float32Array.from([0, 0]))).toBe(1);
  });

  it.each(cases)('%s: the policy and entropy losses average the real steps only; the Q and value losses every row', (_, actionSpec) => {
    const spec = behavior([3], actionSpec);
    const optimizer = optimizerFor(spec);
    const batch = sequenceBatch(spec, 2, 21, [1, 1, 1, 0, 0, 0]);
    const real = sequencesOf(batch, 0, 1);
    const padding = sequencesOf(batch, 1, 2);
    const both = losses(optimizer, batch);
    const alone = losses(optimizer, real);
    const paddingAlone = losses(optimizer, padding);
    // The real sequence draws the same noise first in both batches.
    expect(both.policyLoss).toBeCloseTo(alone.policyLoss, 5);
    expect(both.entropyLoss).toBeCloseTo(alone.entropyLoss, 5);
    for (const i of blockIndices(optimizer.model, 'actor.')) expect(both.modelGradient[i]).toBeCloseTo(alone.modelGradient[i], 5);
    // The Q losses see no noise: every row counts, padding included.
    expect(both.q1Loss).toBeCloseTo((alone.q1Loss + paddingAlone.q1Loss) / 2, 5);
    expect(both.q2Loss).toBeCloseTo((alone.q2Loss + paddingAlone.q2Loss) / 2, 5);
    if (actionSpec.continuousSize === 0) {
      // Without continuous actions the value loss sees no noise either.
      expect(both.valueLoss).toBeCloseTo((alone.valueLoss + paddingAlone.valueLoss) / 2, 5);
    } else {
      expect(Math.abs(both.valueLoss - alone.valueLoss)).toBeGreaterThan(1e-6);
    }
  });
});

describe('the Q target with memory', () => {
  it("bootstraps from the target over the next observations, from V's memories after each sequence's first step", () => {
    const spec = behavior([3], ActionSpec.createContinuous(1));
    const optimizer = optimizerFor(spec);
    // The target differs from V, so that using the wrong network's memories shows.
    for (const update of [1, 2]) optimizer.update(sequenceBatch(spec, 2, 30 + update), update);
    const batch = sequenceBatch(spec, 2, 33);
    const model = optimizer.model;
    const n = batch.count;
    const q1 = optimizer.q1.forward(model.networkInputs(batch.observations, n), batch.continuousActions, n);
    let expected = 0;
    for (let s = 0; s < 2; s++) {
      const rows = (values: Float32Array, from: number, length: number) => {
        const width = values.length / n;
        return values.slice(from * width, (from + length) * width);
      };
      const start = s * SEQUENCE;
      const criticStart = rows(batch.criticMemories!, start, 1);
      // One step of V on the first observation, one sequence at a time (the trajectory path).
      const afterFirst = model.criticValuesInSequences(batch.observations.map((obs) => rows(obs, start, 1)), 1, criticStart, 1).finalMemories;
      const next = optimizer.target.criticValuesInSequences(
        batch.nextObservations.map((obs) => rows(obs, start, SEQUENCE)),
        SEQUENCE,
        afterFirst,
        SEQUENCE,
      ).values.extrinsic;
      for (let t = 0; t < SEQUENCE; t++) {
        const i = start + t;
        const backup = batch.rewards[i] + (1 - batch.dones[i]) * GAMMA * next[t];
        expected += (0.5 * (q1[i] - backup) ** 2) / n;
      }
    }
    expect(losses(optimizer, batch).q1Loss).toBeCloseTo(expected, 5);
  });
});

describe('a recurrent SAC checkpoint', () => {
  it('saves and restores the networks with their LSTMs, and the restored ones compute the same losses', () => {
    const spec = behavior([3], new ActionSpec(1, [2]));
    const optimizer = optimizerFor(spec);
    for (let k = 0; k < 3; k++) optimizer.update(sequenceBatch(spec, 2, 40 + k, [1, 1, 1, 1, 1, 0]), k);
    const restored = optimizerFor(spec);
    expect(restored.loadState(optimizer.saveState(3))).toBe(3);
    expect(restored.model.parameters).toEqual(optimizer.model.parameters);
    expect(restored.target.parameters).toEqual(optimizer.target.parameters);
    expect(restored.q1.parameters).toEqual(optimizer.q1.parameters);
    expect(restored.q2.parameters).toEqual(optimizer.q2.parameters);
    expect(restored.q1.blocks.map((block) => block.name)).toContain('body.lstm.weight_hh');
    const batch = sequenceBatch(spec, 2, 50, [1, 1, 1, 1, 0, 0]);
    const expected = losses(optimizer, batch);
    const actual = losses(restored, batch);
    for (const key of ['policyLoss', 'valueLoss', 'q1Loss', 'q2Loss', 'entropyLoss'] as const) expect(actual[key]).toBeCloseTo(expected[key], 6);
  });
});
