/**
 * Behavioral cloning (upstream's BCModule and test_bcmodule.py): its loss falls as the actor
 * learns the demonstrations (PPO's Gaussian actor, SAC's squashed one, discrete and hybrid
 * actions, with memory), its gradient against finite differences, the learning rate's annealing,
 * its defaults, its checkpoint arrays, and Unity's own test.demo.
 */
import * as fs from 'fs';
import * as path from 'path';
import { SeededRandom } from '../../src/common/random';
import type { BehavioralCloningSettings, NetworkSettings } from '../../src/config/settings';
import { ActionSpec, BehaviorSpec } from '../../src/env/behavior-spec';
import { ActorCritic } from '../../src/networks/actor-critic';
import { AgentBuffer, BufferKey, observationKey } from '../../src/trainers/buffer';
import { BehavioralCloning, PRETRAINING_LOSS_TAG } from '../../src/trainers/behavioral-cloning';
import { centralDifference } from '../helpers/finite-differences';
import { behavior, network } from '../networks/model-fixtures';

function cloningSettings(overrides: Partial<BehavioralCloningSettings> = {}): BehavioralCloningSettings {
  return { demo_path: '', steps: 0, strength: 1, samples_per_update: 0, num_epoch: null, batch_size: null, ...overrides };
}

/** PPO's actor (state-independent sigma), or SAC's (conditional sigma, tanh squash). */
function actor(spec: BehaviorSpec, kind: 'ppo' | 'sac', overrides: Partial<NetworkSettings> = {}): ActorCritic {
  return new ActorCritic(spec, {
    network: network({ hidden_units: 16, num_layers: 2, ...overrides }),
    rewardSignals: ['extrinsic'],
    sharedCritic: false,
    seed: 3,
    ...(kind === 'sac' ? { conditionalSigma: true, tanhSquash: true } : {}),
  });
}

/**
 * Demonstrations of a simple expert: each continuous action is 0.5 x the sign of the first
 * observation, each branch picks 0 or its last choice by the same sign.
 */
function expertDemonstrations(spec: BehaviorSpec, count: number, seed: number): AgentBuffer {
  const random = new SeededRandom(seed);
  const buffer = new AgentBuffer();
  for (let i = 0; i < count; i++) {
    const observations = spec.observationSpecs.map((obs) => Float32Array.from({ length: obs.shape[0] }, () => random.gaussian()));
    const sign = observations[0][0] > 0 ? 1 : -1;
    observations.forEach((obs, k) => buffer.get(observationKey(k)).append(obs));
    if (spec.actionSpec.continuousSize > 0) buffer.get(BufferKey.CONTINUOUS_ACTION).append(new Array(spec.actionSpec.continuousSize).fill(0.5 * sign));
    if (spec.actionSpec.discreteSize > 0) buffer.get(BufferKey.DISCRETE_ACTION).append(spec.actionSpec.discreteBranches.map((size) => (sign > 0 ? size - 1 : 0)));
    buffer.get(BufferKey.ENVIRONMENT_REWARDS).append(0);
    buffer.get(BufferKey.DONE).append(0);
  }
  return buffer;
}

const CASES: Array<[string, BehaviorSpec]> = [
  ['continuous', behavior([4], new ActionSpec(2, []))],
  ['discrete', behavior([4], new ActionSpec(0, [3, 2]))],
  ['hybrid', behavior([4, 2], new ActionSpec(1, [3]))],
];

describe('behavioral cloning', () => {
  for (const [label, spec] of CASES) {
    for (const kind of ['ppo', 'sac'] as const) {
      it(`its loss falls as the ${kind} actor learns the demonstrations (${label})`, () => {
        const cloning = new BehavioralCloning(actor(spec, kind), cloningSettings(), {
          behavior: 'Walker',
          learningRate: 3e-3,
          batchSize: 32,
          seed: 1,
          demonstrations: expertDemonstrations(spec, 128, 2),
        });
        const first = cloning.update(0)[PRETRAINING_LOSS_TAG];
        let last = first;
        for (let i = 0; i < 15; i++) last = cloning.update(0)[PRETRAINING_LOSS_TAG];
        expect(Number.isFinite(first)).toBe(true);
        expect(last).toBeLessThan(0.6 * first);
        // 128 rows in minibatches of 32, 3 epochs: 12 Adam steps an update.
        expect(cloning.adam.step).toBe(16 * 12);
      });
    }
  }

  it('trains an actor with memory from zero memories, on whole sequences', () => {
    const spec = CASES[2][1];
    const cloning = new BehavioralCloning(actor(spec, 'ppo', { memory: { memory_size: 8, sequence_length: 4 } }), cloningSettings(), {
      behavior: 'Walker',
      learningRate: 3e-3,
      batchSize: 32,
      seed: 1,
      demonstrations: expertDemonstrations(spec, 64, 2),
    });
    const first = cloning.update(0)[PRETRAINING_LOSS_TAG];
    for (let i = 0; i < 10; i++) cloning.update(0);
    expect(cloning.update(0)[PRETRAINING_LOSS_TAG]).toBeLessThan(first);
  });

  for (const [label, spec] of CASES) {
    for (const kind of ['ppo', 'sac'] as const) {
      it(`its gradient agrees with finite differences (${kind}, ${label})`, () => {
        const model = actor(spec, kind);
        const demonstrations = expertDemonstrations(spec, 6, 4);
        const cloning = new BehavioralCloning(model, cloningSettings(), { behavior: 'Walker', learningRate: 1e-3, batchSize: 6, seed: 1, demonstrations });
        const batch = {
          count: 6,
          observations: spec.observationSpecs.map((_, k) => demonstrations.get(observationKey(k)).rows),
          continuousActions: demonstrations.has(BufferKey.CONTINUOUS_ACTION) ? demonstrations.get(BufferKey.CONTINUOUS_ACTION).rows : new Float32Array(0),
          discreteActions: demonstrations.has(BufferKey.DISCRETE_ACTION) ? demonstrations.get(BufferKey.DISCRETE_ACTION).rows : new Float32Array(0),
        };
        const noise = cloning.drawNoise(6);
        const analytic = Float32Array.from(cloning.lossAndGradient(batch, noise).gradient);
        const loss = () => cloning.lossAndGradient(batch, noise).loss;
        const scale = Math.max(...analytic.map(Math.abs));
        let nonZero = 0;
        for (let index = 0; index < analytic.length; index += 5) {
          const numeric = centralDifference(model.parameters, index, 1e-2, loss, () => model.parametersChanged());
          expect(Math.abs(numeric - analytic[index])).toBeLessThan(3e-3 * scale + 2e-2 * Math.abs(analytic[index]));
          if (analytic[index] !== 0) nonZero++;
        }
        expect(nonZero).toBeGreaterThan(10);
      });
    }
  }
});

describe('behavioral cloning\'s settings', () => {
  const spec = CASES[0][1];
  const demonstrations = expertDemonstrations(spec, 64, 2);

  it('takes the trainer\'s batch_size and 3 epochs unless told otherwise (upstream\'s test_bcmodule_defaults)', () => {
    const defaults = new BehavioralCloning(actor(spec, 'ppo'), cloningSettings(), { behavior: 'Walker', learningRate: 3e-4, batchSize: 1024, seed: 1, demonstrations });
    expect([defaults.batchSize, defaults.numEpoch]).toEqual([1024, 3]);
    const set = new BehavioralCloning(actor(spec, 'ppo'), cloningSettings({ num_epoch: 100, batch_size: 10000 }), { behavior: 'Walker', learningRate: 3e-4, batchSize: 1024, seed: 1, demonstrations });
    expect([set.batchSize, set.numEpoch]).toEqual([10000, 100]);
  });

  it('keeps learning_rate x strength with steps 0, and anneals it linearly over steps otherwise', () => {
    const constant = new BehavioralCloning(actor(spec, 'ppo'), cloningSettings({ strength: 0.5 }), { behavior: 'Walker', learningRate: 3e-4, batchSize: 16, seed: 1, demonstrations });
    expect(constant.learningRate).toBeCloseTo(1.5e-4, 12);
    constant.update(400);
    expect(constant.learningRate).toBeCloseTo(1.5e-4, 12);
    const annealed = new BehavioralCloning(actor(spec, 'ppo'), cloningSettings({ steps: 100 }), { behavior: 'Walker', learningRate: 3e-4, batchSize: 16, seed: 1, demonstrations });
    annealed.update(10);
    expect(annealed.learningRate).toBeCloseTo(3e-4 - (10 / 100) * (3e-4 - 1e-10), 12);
    annealed.update(100);
    expect(annealed.learningRate).toBeCloseTo(1e-10, 15);
    // The rate at its floor: cloning stops, and says so with a loss of 0.
    const steps = annealed.adam.step;
    expect(annealed.update(200)[PRETRAINING_LOSS_TAG]).toBe(0);
    expect(annealed.adam.step).toBe(steps);
  });

  it('runs at most samples_per_update rows a pass', () => {
    const limited = new BehavioralCloning(actor(spec, 'ppo'), cloningSettings({ samples_per_update: 32 }), { behavior: 'Walker', learningRate: 3e-4, batchSize: 16, seed: 1, demonstrations });
    limited.update(0);
    expect(limited.adam.step).toBe(2 * 3);
  });

  it('restores its Adam state and learning rate from its checkpoint arrays', () => {
    const trained = new BehavioralCloning(actor(spec, 'ppo'), cloningSettings({ steps: 50 }), { behavior: 'Walker', learningRate: 3e-4, batchSize: 16, seed: 1, demonstrations });
    trained.update(20);
    const restored = new BehavioralCloning(actor(spec, 'ppo'), cloningSettings({ steps: 50 }), { behavior: 'Walker', learningRate: 3e-4, batchSize: 16, seed: 1, demonstrations });
    restored.loadStateArrays(trained.stateArrays());
    expect(restored.learningRate).toBe(trained.learningRate);
    expect(restored.adam.step).toBe(trained.adam.step);
    expect(Array.from(restored.adam.secondMoment)).toEqual(Array.from(trained.adam.secondMoment));
  });
});

const REFERENCE_DEMO = path.resolve(__dirname, '../../../shared/reference/demos/test.demo');

(fs.existsSync(REFERENCE_DEMO) ? describe : describe.skip)('behavioral cloning on Unity\'s test.demo (../shared/reference)', () => {
  it('clones 3DBall\'s recorded actions for PPO and SAC (upstream\'s test_bcmodule_update)', () => {
    const spec = behavior([8], new ActionSpec(2, []));
    for (const kind of ['ppo', 'sac'] as const) {
      const cloning = new BehavioralCloning(actor(spec, kind), cloningSettings({ demo_path: REFERENCE_DEMO, samples_per_update: 256 }), { behavior: 'Walker', learningRate: 3e-4, batchSize: 64, seed: 1 });
      expect(cloning.demonstrations.numExperiences).toBe(2143);
      const first = cloning.update(0)[PRETRAINING_LOSS_TAG];
      let last = first;
      for (let i = 0; i < 10; i++) last = cloning.update(0)[PRETRAINING_LOSS_TAG];
      expect(last).toBeLessThan(first);
    }
  });

  it('refuses it for a behavior of other observations, naming the behavior, both specs and the file', () => {
    const spec = behavior([9], new ActionSpec(2, []));
    expect(() => new BehavioralCloning(actor(spec, 'ppo'), cloningSettings({ demo_path: REFERENCE_DEMO }), { behavior: 'Walker', learningRate: 3e-4, batchSize: 64, seed: 1 })).toThrow(
      /behaviors\.Walker\.behavioral_cloning\.demo_path: the demonstrations in .*test\.demo have observations \[\(8\)\], ActionSpec\(continuous: 2.*but behavior Walker, which trains on them, has observations \[\(9\)/,
    );
  });
});

if (!fs.existsSync(REFERENCE_DEMO)) console.log(`skipped the test.demo cases: ../shared/reference not present (looked for ${REFERENCE_DEMO})`);
