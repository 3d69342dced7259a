/**
 * SAC's optimizer: the hand-derived gradients of its four losses against finite differences
 * (continuous, discrete with action masks, hybrid, and with an image, whose encoders every
 * network has its own of), the soft update of the target, and the checkpoint round trip.
 */
import { memoryLogger } from '../../../src/common/logger';
import { ActionSpec, BehaviorSpec } from '../../../src/env/behavior-spec';
import { ActorCritic } from '../../../src/networks/actor-critic';
import { selectBackend } from '../../../src/networks/backend';
import { encodeCheckpoint } from '../../../src/networks/checkpoint-file';
import { SacGradients, SacOptimizer } from '../../../src/trainers/sac/optimizer';
import type { ReplayRows } from '../../../src/trainers/sac/replay-buffer';
import { batchFor } from './fixtures/replay-batch';
import { behavior, network, vectorObservation, visualObservation } from '../../networks/model-fixtures';
import { centralDifference } from '../../helpers/finite-differences';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

const NOISE_SEED = 42;

function sacModel(spec: BehaviorSpec, signals = ['extrinsic']): ActorCritic {
  return new ActorCritic(spec, {
    network: network({ hidden_units: 8, num_layers: 2 }),
    rewardSignals: signals,
    sharedCritic: false,
    seed: 3,
    conditionalSigma: true,
    tanhSquash: true,
  });
}

function optimizerFor(spec: BehaviorSpec, signals = ['extrinsic']): SacOptimizer {
  return new SacOptimizer(sacModel(spec, signals), spec, {
    hyperparameters: { learning_rate: 3e-3, learning_rate_schedule: 'constant', tau: 0.05, init_entcoef: 0.5 },
    maxSteps: 1000,
    signals: signals.map((_, s) => ({ gamma: 0.9 + 0.05 * s, strength: 1 + s })),
    seed: 5,
  });
}

function losses(optimizer: SacOptimizer, batch: ReplayRows): SacGradients {
  optimizer.random.reseed(NOISE_SEED);
  return optimizer.lossesAndGradients(batch);
}

/**
 * Compares analytic gradients with central differences of `loss` for the largest entries of
 * `analytic` among `indices`, perturbing `parameters` in place.
 */
function expectGradientMatches(
  parameters: Float32Array,
  indices: number[],
  analytic: Float32Array | Float64Array,
  loss: () => number,
  changed: () => void = () => undefined,
  { h = 1e-2, checks = 12 } = {},
): void {
  const checked = [...indices].sort((a, b) => Math.abs(analytic[b]) - Math.abs(analytic[a])).slice(0, checks);
  expect(Math.abs(analytic[checked[0]])).toBeGreaterThan(1e-4);
  for (const index of checked) {
    const numeric = centralDifference(parameters, index, h, loss, changed);
    expect(Math.abs(numeric - analytic[index])).toBeLessThanOrEqual(2e-3 + 0.05 * Math.abs(analytic[index]));
  }
}

function blockIndices(model: { readonly blocks: ActorCritic['blocks'] }, prefix: string): number[] {
  return model.blocks
    .filter((block) => block.name.startsWith(prefix))
    .flatMap((block) => Array.from({ length: block.shape.reduce((a, b) => a * b, 1) }, (_, k) => block.offset + k));
}

const cases: Array<[string, ActionSpec, string[]]> = [
  ['two continuous actions', ActionSpec.createContinuous(2), ['extrinsic']],
  ['two masked discrete branches', ActionSpec.createDiscrete([3, 2]), ['extrinsic']],
  ['hybrid actions and two reward signals', new ActionSpec(1, [3]), ['extrinsic', 'gail']],
];

describe.each(cases)('SAC gradients, %s', (_, actionSpec, signals) => {
  const spec = behavior([3, 2], actionSpec);

  it("the actor's gradient is the policy loss's, V's is the value loss's", () => {
    const optimizer = optimizerFor(spec, signals);
    const batch = batchFor(spec, 6, 11);
    const model = optimizer.model;
    const analytic = Float32Array.from(losses(optimizer, batch).modelGradient);
    const changed = () => model.parametersChanged();
    expectGradientMatches(model.parameters, blockIndices(model, 'actor.'), analytic, () => losses(optimizer, batch).policyLoss, changed);
    expectGradientMatches(model.parameters, blockIndices(model, 'critic.'), analytic, () => losses(optimizer, batch).valueLoss, changed);
  });

  it("each Q network's gradient is its loss's", () => {
    const optimizer = optimizerFor(spec, signals);
    const batch = batchFor(spec, 6, 12);
    const first = losses(optimizer, batch);
    const q1 = Float32Array.from(first.q1Gradient);
    const q2 = Float32Array.from(first.q2Gradient);
    const all = (n: number) => Array.from({ length: n }, (_, k) => k);
    expectGradientMatches(optimizer.q1.parameters, all(q1.length), q1, () => losses(optimizer, batch).q1Loss);
    expectGradientMatches(optimizer.q2.parameters, all(q2.length), q2, () => losses(optimizer, batch).q2Loss);
  });

  it("the entropy coefficients' gradient is the entropy loss's", () => {
    const optimizer = optimizerFor(spec, signals);
    const batch = batchFor(spec, 6, 13);
    const analytic = Float64Array.from(losses(optimizer, batch).entropyCoefficientGradient);
    const used = actionSpec.continuousSize > 0 ? [...actionSpec.discreteBranches.keys(), actionSpec.discreteBranches.length] : [...actionSpec.discreteBranches.keys()];
    expectGradientMatches(optimizer.logEntropyCoefficients, used, analytic, () => losses(optimizer, batch).entropyLoss);
  });
});

describe('a SAC update', () => {
  const spec = behavior([3], new ActionSpec(1, [2]));

  it('moves the target tau of the way to the new value network and leaves its actor alone', () => {
    const optimizer = optimizerFor(spec);
    const model = optimizer.model;
    const before = Float32Array.from(optimizer.target.parameters);
    const stats = optimizer.update(batchFor(spec, 8, 21), 10);
    const critic = blockIndices(model, 'critic.');
    for (const i of critic) expect(optimizer.target.parameters[i]).toBeCloseTo(0.05 * model.parameters[i] + 0.95 * before[i], 6);
    for (const i of blockIndices(model, 'actor.')) expect(optimizer.target.parameters[i]).toBe(before[i]);
    expect(critic.some((i) => optimizer.target.parameters[i] !== before[i])).toBe(true);
    expect(Object.keys(stats).sort()).toEqual([
      'Losses/Policy Loss',
      'Losses/Q1 Loss',
      'Losses/Q2 Loss',
      'Losses/Value Loss',
      'Policy/Continuous Entropy Coeff',
      'Policy/Discrete Entropy Coeff',
      'Policy/Learning Rate',
    ]);
    expect(stats['Policy/Learning Rate']).toBe(3e-3);
  });

  it('learns the entropy coefficient down when the policy is more random than the target entropy', () => {
    // A continuous policy starts with entropy far above -1 per action (sigma about 1 before tanh).
    const continuousSpec = behavior([3], ActionSpec.createContinuous(1));
    const optimizer = optimizerFor(continuousSpec);
    for (let k = 0; k < 20; k++) optimizer.update(batchFor(continuousSpec, 8, 30 + k), k);
    expect(Math.exp(optimizer.logEntropyCoefficients[0])).toBeLessThan(0.5);
  });

  it('saves and restores every network, optimizer and coefficient', () => {
    const optimizer = optimizerFor(spec);
    for (let k = 0; k < 3; k++) optimizer.update(batchFor(spec, 8, 40 + k), k);
    const bytes = optimizer.saveState(123);
    const restored = optimizerFor(spec);
    expect(restored.loadState(bytes)).toBe(123);
    expect(restored.model.parameters).toEqual(optimizer.model.parameters);
    expect(restored.target.parameters).toEqual(optimizer.target.parameters);
    expect(restored.q1.parameters).toEqual(optimizer.q1.parameters);
    expect(restored.q2.parameters).toEqual(optimizer.q2.parameters);
    expect(restored.logEntropyCoefficients).toEqual(optimizer.logEntropyCoefficients);
    expect(restored.q2Adam.secondMoment).toEqual(optimizer.q2Adam.secondMoment);
    expect(restored.entropyAdam.step).toBe(3);
  });

  it('refuses a PPO checkpoint', () => {
    const bytes = encodeCheckpoint({ kind: 'ppo', step: 1 }, new Map());
    expect(() => optimizerFor(spec).loadState(bytes)).toThrow(/of a ppo trainer, not of SAC/);
  });
});

describe('SAC with an image (each network encodes it with its own encoder)', () => {
  // A vector, then a 2x20x20 camera (the simple encoder's smallest), hybrid actions.
  const spec: BehaviorSpec = { observationSpecs: [vectorObservation(3), visualObservation(2, 20, 20)], actionSpec: new ActionSpec(1, [2]) };
  // A step small enough not to take a convolution's outputs across the leaky ReLU's kink.
  const small = { h: 1e-3, checks: 4 };

  it("each Q network's gradient, its encoder's included, is its loss's", () => {
    const optimizer = optimizerFor(spec);
    const batch = batchFor(spec, 4, 51);
    const first = losses(optimizer, batch);
    for (const [q, analytic, loss] of [
      [optimizer.q1, Float32Array.from(first.q1Gradient), () => losses(optimizer, batch).q1Loss],
      [optimizer.q2, Float32Array.from(first.q2Gradient), () => losses(optimizer, batch).q2Loss],
    ] as const) {
      expect(q.blocks.map((block) => block.name)).toContain('body.encoders.1.conv_layers.0.weight');
      const changed = () => q.parametersChanged();
      for (const block of q.blocks.filter((b) => b.name.endsWith('.weight'))) {
        expectGradientMatches(q.parameters, blockIndices(q, block.name), analytic, loss, changed, small);
      }
    }
  });

  it("the actor's encoder learns from the policy loss, V's from the value loss", () => {
    const optimizer = optimizerFor(spec);
    const batch = batchFor(spec, 4, 52);
    const model = optimizer.model;
    const analytic = Float32Array.from(losses(optimizer, batch).modelGradient);
    const changed = () => model.parametersChanged();
    expectGradientMatches(model.parameters, blockIndices(model, 'actor.encoders.1.'), analytic, () => losses(optimizer, batch).policyLoss, changed, small);
    expectGradientMatches(model.parameters, blockIndices(model, 'critic.encoders.1.'), analytic, () => losses(optimizer, batch).valueLoss, changed, small);
  });

  it('updates every encoder, moves the target\'s critic encoder tau of the way, and saves and restores them', () => {
    const optimizer = optimizerFor(spec);
    const model = optimizer.model;
    const targetBefore = Float32Array.from(optimizer.target.parameters);
    const q1Before = Float32Array.from(optimizer.q1.parameters);
    optimizer.update(batchFor(spec, 8, 53), 1);
    const criticEncoder = blockIndices(model, 'critic.encoders.');
    expect(criticEncoder.length).toBeGreaterThan(0);
    for (const i of criticEncoder) expect(optimizer.target.parameters[i]).toBeCloseTo(0.05 * model.parameters[i] + 0.95 * targetBefore[i], 6);
    for (const i of blockIndices(model, 'actor.encoders.')) expect(optimizer.target.parameters[i]).toBe(targetBefore[i]);
    const q1Encoder = blockIndices(optimizer.q1, 'body.encoders.');
    expect(q1Encoder.filter((i) => optimizer.q1.parameters[i] !== q1Before[i]).length).toBeGreaterThan(q1Encoder.length / 2);

    optimizer.update(batchFor(spec, 8, 54), 2);
    const restored = optimizerFor(spec);
    expect(restored.loadState(optimizer.saveState(2))).toBe(2);
    expect(restored.q1.parameters).toEqual(optimizer.q1.parameters);
    expect(restored.q2Adam.firstMoment).toEqual(optimizer.q2Adam.firstMoment);
    expect(restored.target.parameters).toEqual(optimizer.target.parameters);
    // The restored networks compute what the saved ones do (their encoders read the new weights).
    const batch = batchFor(spec, 4, 55);
    const expected = losses(optimizer, batch);
    const actual = losses(restored, batch);
    expect(actual.q1Loss).toBeCloseTo(expected.q1Loss, 5);
    expect(actual.valueLoss).toBeCloseTo(expected.valueLoss, 5);
  });
});
