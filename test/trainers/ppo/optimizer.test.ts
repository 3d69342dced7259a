import * as path from 'path';
import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../../../src/common/logger';
import { ActionSpec, BehaviorSpec } from '../../../src/env/behavior-spec';
import { ActorCritic } from '../../../src/networks/actor-critic';
import { selectBackend } from '../../../src/networks/backend';
import { PpoMinibatch, ppoLoss } from '../../../src/trainers/ppo/loss';
import { NonFiniteLossError } from '../../../src/trainers/non-finite-loss';
import { PpoOptimizer, PpoOptimizerSettings } from '../../../src/trainers/ppo/optimizer';
import { ReferencePpoUpdate } from '../../helpers/ppo-reference-update';
import { tempDir } from '../../helpers/paths';
import { behavior, minibatch, model } from '../../networks/model-fixtures';

const SETTINGS: PpoOptimizerSettings = {
  hyperparameters: {
    learning_rate: 3e-4,
    beta: 5e-3,
    epsilon: 0.2,
    learning_rate_schedule: 'linear',
    beta_schedule: 'constant',
    epsilon_schedule: 'linear',
  },
  maxSteps: 10000,
};

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

/** The loss of a minibatch under the model's current weights. */
function lossOf(net: ActorCritic, batch: PpoMinibatch, epsilon: number, beta: number): number {
  return net.computeGradient(batch.observations, batch.count, (outputs, gradients) =>
    ppoLoss(outputs, batch, net.actionSpec, net.rewardSignals, epsilon, beta, gradients),
  ).loss.loss;
}

const CASES: Array<[string, BehaviorSpec, Parameters<typeof model>[1]]> = [
  ['continuous, separate critic, normalized', behavior([5, 3], ActionSpec.createContinuous(2)), { network: { normalize: true } }],
  ['discrete branches with masks, two reward signals', behavior([6], ActionSpec.createDiscrete([3, 4])), { rewardSignals: ['extrinsic', 'curiosity'] }],
  ['hybrid actions, shared critic, 3 layers', behavior([4], new ActionSpec(2, [3])), { sharedCritic: true, network: { num_layers: 3, normalize: true } }],
];

describe.each(CASES)('%s', (_, spec, options) => {
  it.each(['wasm', 'cpu'] as const)('has the gradient of tf.grad on the straightforward loss (within 1e-4), and its loss, on %s', async (backend) => {
    await selectBackend(backend, memoryLogger());
    const net = model(spec, options);
    const batch = minibatch(net, spec, 24, 4);
    net.updateNormalization(batch.observations, batch.count);
    const reference = new ReferencePpoUpdate(net, SETTINGS);
    const expected = reference.gradient(batch, 0.2, 5e-3);
    const { gradient, loss } = net.computeGradient(batch.observations, batch.count, (outputs, gradients) =>
      ppoLoss(outputs, batch, net.actionSpec, net.rewardSignals, 0.2, 5e-3, gradients),
    );
    for (const block of net.blocks) {
      const size = block.shape.reduce((a, b) => a * b, 1);
      for (let i = 0; i < size; i++) {
        const k = block.offset + i;
        if (Math.abs(gradient[k] - expected[k]) > 1e-4) {
          throw new Error(`${block.name}[${i}]: ours ${gradient[k]}, tf.grad ${expected[k]}`);
        }
      }
    }
    expect(expected.some((g) => Math.abs(g) > 1e-3)).toBe(true);
    const referenceLoss = tf.tidy(() => reference.loss(batch, 0.2, 5e-3).loss.dataSync()[0]);
    expect(loss.loss).toBeCloseTo(referenceLoss, 5);
    reference.dispose();
    net.dispose();
    await selectBackend('wasm', memoryLogger());
  });

  it('one update lowers the loss of its minibatch', () => {
    const net = model(spec, options);
    const batch = minibatch(net, spec, 32, 5);
    const optimizer = new PpoOptimizer(net, SETTINGS);
    const before = lossOf(net, batch, 0.2, 5e-3);
    optimizer.update(batch, 0);
    expect(lossOf(net, batch, 0.2, 5e-3)).toBeLessThan(before);
  });
});

describe('PpoOptimizer', () => {
  const spec = behavior([6], new ActionSpec(1, [2]));

  it('reports upstream stats: |policy loss|, value loss, and the decayed learning rate, epsilon and beta', () => {
    const net = model(spec);
    const batch = minibatch(net, spec, 16, 6);
    const before = net.computeGradient(batch.observations, batch.count, (outputs) =>
      ppoLoss(outputs, batch, net.actionSpec, net.rewardSignals, 0.15, 5e-3, null),
    ).loss;
    const stats = new PpoOptimizer(net, SETTINGS).update(batch, 5000);
    expect(Object.keys(stats)).toEqual([
      'Losses/Policy Loss',
      'Losses/Value Loss',
      'Policy/Learning Rate',
      'Policy/Epsilon',
      'Policy/Beta',
    ]);
    // Halfway to max_steps: linear schedules are halfway to their floors (1e-10 and 0.1).
    expect(stats['Policy/Learning Rate']).toBeCloseTo((3e-4 - 1e-10) / 2 + 1e-10, 15);
    expect(stats['Policy/Epsilon']).toBeCloseTo(0.15, 12);
    expect(stats['Policy/Beta']).toBe(5e-3);
    expect(stats['Losses/Policy Loss']).toBeCloseTo(Math.abs(before.policyLoss), 6);
    expect(stats['Losses/Value Loss']).toBeCloseTo(before.valueLoss, 6);
  });

  it('decays to upstream floors: learning rate 1e-10, epsilon 0.1, beta 1e-5', () => {
    const optimizer = new PpoOptimizer(model(spec), {
      hyperparameters: { ...SETTINGS.hyperparameters, beta_schedule: 'linear' },
      maxSteps: 10000,
    });
    expect(optimizer.scheduleAt(0)).toEqual({ learningRate: 3e-4, epsilon: 0.2, beta: 5e-3 });
    const end = optimizer.scheduleAt(20000);
    expect(end.learningRate).toBeCloseTo(1e-10, 20);
    expect(end.epsilon).toBeCloseTo(0.1, 15);
    expect(end.beta).toBeCloseTo(1e-5, 15);
  });

  it('takes the same step as the straightforward update (tf autodiff, tf.train.adam)', () => {
    const net = model(spec, { network: { normalize: true } });
    const batch = minibatch(net, spec, 16, 7);
    net.updateNormalization(batch.observations, batch.count);
    const constant = { ...SETTINGS, hyperparameters: { ...SETTINGS.hyperparameters, learning_rate_schedule: 'constant' as const, epsilon_schedule: 'constant' as const } };
    const reference = new ReferencePpoUpdate(net, constant);
    const referenceStats = reference.update(batch);
    const stats = new PpoOptimizer(net, constant).update(batch, 0);
    const expected = reference.parameters();
    for (let k = 0; k < expected.length; k++) expect(Math.abs(net.parameters[k] - expected[k])).toBeLessThan(1e-6);
    expect(stats['Losses/Policy Loss']).toBeCloseTo(referenceStats['Losses/Policy Loss'], 5);
    expect(stats['Losses/Value Loss']).toBeCloseTo(referenceStats['Losses/Value Loss'], 5);
    reference.dispose();
  });

  it('refuses a NaN loss and leaves the weights as they were', () => {
    const net = model(spec);
    const batch = minibatch(net, spec, 8, 8);
    const weights = net.parameters.slice();
    const broken = { ...batch, advantages: batch.advantages.map((a, i) => (i === 3 ? NaN : a)) };
    expect(() => new PpoOptimizer(net, SETTINGS).update(broken, 42)).toThrow(NonFiniteLossError);
    expect(() => new PpoOptimizer(net, SETTINGS).update(broken, 42)).toThrow(/The PPO loss is NaN .* at step 42: the update was not applied/);
    expect(net.parameters).toEqual(weights);
  });

  it('says which minibatch array does not fit', () => {
    const net = model(spec);
    const batch = minibatch(net, spec, 8, 9);
    const optimizer = new PpoOptimizer(net, SETTINGS);
    expect(() => optimizer.update({ ...batch, advantages: new Float32Array(7) }, 0)).toThrow(
      "The PPO minibatch's advantages holds 7 values; 8 were expected for 8 samples.",
    );
    expect(() => optimizer.update({ ...batch, returns: {} }, 0)).toThrow("minibatch's returns.extrinsic holds no values");
  });

  it('saves and restores weights, optimizer state and normalizer in one file', () => {
    const normalizing = { network: { normalize: true } };
    const net = model(spec, normalizing);
    const optimizer = new PpoOptimizer(net, SETTINGS);
    const batches = [minibatch(net, spec, 16, 10), minibatch(net, spec, 16, 11)];
    net.updateNormalization(batches[0].observations, 16);
    optimizer.update(batches[0], 100);
    optimizer.update(batches[1], 200);
    const file = path.join(tempDir('ppo-checkpoint'), 'Behavior-200.mlts');
    optimizer.saveCheckpoint(file, 200);

    const restoredNet = model(spec, { ...normalizing, seed: 99 });
    const restored = new PpoOptimizer(restoredNet, SETTINGS);
    expect(restored.loadCheckpoint(file)).toBe(200);
    expect(restoredNet.parameters).toEqual(net.parameters);
    expect(restored.adam.step).toBe(2);
    expect(restored.adam.firstMoment).toEqual(optimizer.adam.firstMoment);
    expect(restored.adam.secondMoment).toEqual(optimizer.adam.secondMoment);
    expect(restoredNet.normalizer!.steps).toBe(17);
    expect(restoredNet.normalizer!.variance).toEqual(net.normalizer!.variance);
    // Training goes on exactly as it would have.
    optimizer.update(batches[0], 300);
    restored.update(batches[0], 300);
    expect(restoredNet.parameters).toEqual(net.parameters);

    const other = new PpoOptimizer(model(spec, { network: { normalize: true, num_layers: 1 } }), SETTINGS);
    expect(() => other.loadCheckpoint(file)).toThrow('numLayers is 2 in the checkpoint and 1 here');
    expect(() => other.loadState(new Uint8Array(20))).toThrow('not one of our checkpoints');
  });
});
