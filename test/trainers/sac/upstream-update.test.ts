/**
 * One SAC update against Unity ML-Agents' own: each fixture holds what upstream's
 * TorchSACOptimizer.update (release_21, torch) did on a hybrid behavior (one vector observation,
 * one continuous action, one branch of 2, a 1 x 16 network), from its weights, an 8-row minibatch
 * and fixed reparameterization noise: upstream-hybrid-update.json without memory,
 * upstream-hybrid-recurrent-update.json with memory (memory_size 16, two sequences of 4, the last
 * two rows padding). Ours, loaded with the same weights and fed the same rows, memories and noise,
 * must report the same four losses and the same gradients. upstream-hybrid-recurrent-updates.json
 * goes on from the recurrent fixture's weights for four updates in a row, each on its own
 * minibatch: the statistics each reported and every parameter after the fourth, so that the steps
 * (Adam's per parameter group, log alpha's, the target's soft update) are upstream's too.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../../src/common/logger';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../../src/env/behavior-spec';
import { ActorCritic } from '../../../src/networks/actor-critic';
import { selectBackend } from '../../../src/networks/backend';
import type { ParameterBlock } from '../../../src/networks/layers/layer';
import { SacOptimizer } from '../../../src/trainers/sac/optimizer';
import { actorCriticTorchName } from '../../helpers/torch-layouts';

interface Fixture {
  before: Record<'actor' | 'critic' | 'target' | 'q1' | 'q2', Record<string, number[]>>;
  logEntCoef: { discrete: number[]; continuous: number[] };
  batch: Record<'obs' | 'next_obs' | 'continuous' | 'discrete' | 'rewards' | 'dones' | 'eps', number[]> & {
    /** With memory: each row's memories and critic memories (memory_size each), its mask, and the sequence length. */
    memories?: number[];
    critic_memories?: number[];
    masks?: number[];
    sequence_length?: number;
  };
  losses: Record<string, number>;
  gradients: Record<'actor' | 'critic' | 'q1' | 'q2', Record<string, number[]>> & { log_ent_coef: { discrete: number[]; continuous: number[] } };
}

const readFixture = (name: string) => JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', name), 'utf8')) as Fixture;

/** Upstream's values for each of `blocks` whose name starts with `prefix`, written into `target`. */
function load(target: Float32Array, blocks: readonly ParameterBlock[], prefix: RegExp, values: Record<string, number[]>): number {
  let loaded = 0;
  for (const block of blocks.filter((b) => prefix.test(b.name))) {
    const upstream = values[actorCriticTorchName(block.name)];
    if (upstream === undefined) throw new Error(`The fixture has no ${actorCriticTorchName(block.name)} for ${block.name}.`);
    target.set(upstream, block.offset);
    loaded++;
  }
  return loaded;
}

function blockOf(gradient: Float32Array, block: ParameterBlock): number[] {
  return Array.from(gradient.subarray(block.offset, block.offset + block.shape.reduce((a, b) => a * b, 1)));
}

/**
 * Our SAC optimizer on the hybrid behavior the fixtures use (1 x 16 network, learning rate 5e-3
 * constant, tau 0.01), every network's parameters and log alpha loaded from upstream's `before`.
 */
function upstreamState(fixture: Pick<Fixture, 'before' | 'logEntCoef'>, memory: { memory_size: number; sequence_length: number } | null): { model: ActorCritic; optimizer: SacOptimizer } {
  const spec: BehaviorSpec = {
    observationSpecs: [{ shape: [1], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'obs' }],
    actionSpec: new ActionSpec(1, [2]),
  };
  const network = { normalize: false, hidden_units: 16, num_layers: 1, vis_encode_type: 'simple' as const, memory, goal_conditioning_type: 'hyper' as const, deterministic: false };
  const model = new ActorCritic(spec, { network, rewardSignals: ['extrinsic'], sharedCritic: false, seed: 1, conditionalSigma: true, tanhSquash: true });
  const optimizer = new SacOptimizer(model, spec, {
    hyperparameters: { learning_rate: 5e-3, learning_rate_schedule: 'constant', tau: 0.01, init_entcoef: 0.01 },
    maxSteps: 1000,
    signals: [{ gamma: 0.99, strength: 1 }],
    seed: 1,
  });
  // Every block of every network comes from upstream.
  expect(load(model.parameters, model.blocks, /^actor\./, fixture.before.actor) + load(model.parameters, model.blocks, /^critic\./, fixture.before.critic)).toBe(model.blocks.length);
  model.parametersChanged();
  load(optimizer.target.parameters, optimizer.target.blocks, /^critic\./, fixture.before.target);
  optimizer.target.parametersChanged();
  for (const [q, values] of [[optimizer.q1, fixture.before.q1], [optimizer.q2, fixture.before.q2]] as const) {
    expect(load(q.parameters, q.blocks, /./, values)).toBe(q.blocks.length);
    q.parametersChanged();
  }
  expect(Array.from(optimizer.logEntropyCoefficients)).toEqual([...fixture.logEntCoef.discrete, ...fixture.logEntCoef.continuous].map((v) => Math.fround(v)));
  return { model, optimizer };
}

/** Replaces the optimizer's reparameterization noise by `noise`, drawn in order. */
function fixNoise(optimizer: SacOptimizer, noise: number[]): void {
  (optimizer as unknown as { random: { gaussian(): number } }).random = { gaussian: () => noise.shift()! };
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe("SAC's update against upstream's", () => {
  it.each([
    ['hybrid actions', 'upstream-hybrid-update.json'],
    ['hybrid actions with memory', 'upstream-hybrid-recurrent-update.json'],
  ])("gives upstream's losses and gradients on the same weights, minibatch and noise (%s)", (_, name) => {
    const fixture = readFixture(name);
    const sequenceLength = fixture.batch.sequence_length;
    const memory = sequenceLength === undefined ? null : { memory_size: fixture.batch.memories!.length / fixture.batch.obs.length, sequence_length: sequenceLength };
    const { optimizer, model } = upstreamState(fixture, memory);
    // The reparameterization noise upstream drew, in the order ours draws it (row by row).
    const noise = [...fixture.batch.eps];
    fixNoise(optimizer, noise);

    const n = fixture.batch.obs.length;
    const result = optimizer.lossesAndGradients({
      count: n,
      observations: [Float32Array.from(fixture.batch.obs)],
      nextObservations: [Float32Array.from(fixture.batch.next_obs)],
      continuousActions: Float32Array.from(fixture.batch.continuous),
      discreteActions: Int32Array.from(fixture.batch.discrete),
      actionMasks: new Float32Array(2 * n).fill(1),
      rewards: Float32Array.from(fixture.batch.rewards),
      dones: Float32Array.from(fixture.batch.dones),
      ...(memory === null
        ? {}
        : {
            memories: Float32Array.from(fixture.batch.memories!),
            criticMemories: Float32Array.from(fixture.batch.critic_memories!),
            masks: Float32Array.from(fixture.batch.masks!),
          }),
    });
    expect(noise).toEqual([]);
    expect(result.policyLoss).toBeCloseTo(fixture.losses['Losses/Policy Loss'], 5);
    expect(result.valueLoss).toBeCloseTo(fixture.losses['Losses/Value Loss'], 5);
    expect(result.q1Loss).toBeCloseTo(fixture.losses['Losses/Q1 Loss'], 5);
    expect(result.q2Loss).toBeCloseTo(fixture.losses['Losses/Q2 Loss'], 5);

    const close = (ours: number[], theirs: number[], what: string) => {
      expect(ours).toHaveLength(theirs.length);
      ours.forEach((v, i) => {
        if (Math.abs(v - theirs[i]) > 1e-5 + 1e-4 * Math.abs(theirs[i])) throw new Error(`${what}[${i}]: ours ${v}, upstream ${theirs[i]}`);
      });
    };
    for (const block of model.blocks) {
      const network = block.name.startsWith('actor.') ? fixture.gradients.actor : fixture.gradients.critic;
      close(blockOf(result.modelGradient, block), network[actorCriticTorchName(block.name)], block.name);
    }
    for (const [q, gradient, theirs] of [[optimizer.q1, result.q1Gradient, fixture.gradients.q1], [optimizer.q2, result.q2Gradient, fixture.gradients.q2]] as const) {
      for (const block of q.blocks) close(blockOf(gradient, block), theirs[actorCriticTorchName(block.name)], `q.${block.name}`);
    }
    close(Array.from(result.entropyCoefficientGradient), [...fixture.gradients.log_ent_coef.discrete, ...fixture.gradients.log_ent_coef.continuous], 'log alpha');
  });
});

/** upstream-hybrid-recurrent-updates.json: four updates in a row from the recurrent fixture's `before`. */
interface UpdatesFixture {
  updates: Array<
    Record<'obs' | 'next_obs' | 'continuous' | 'discrete' | 'rewards' | 'dones' | 'memories' | 'critic_memories' | 'masks' | 'eps', number[]> & {
      stats: Record<string, number>;
    }
  >;
  after: Fixture['before'];
  logEntCoef: { discrete: number[]; continuous: number[] };
}

describe("SAC's updates in a row against upstream's", () => {
  it("reaches upstream's parameters after four updates: Adam's steps, log alpha's and the target's soft update (with memory)", () => {
    const start = readFixture('upstream-hybrid-recurrent-update.json');
    const fixture = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'upstream-hybrid-recurrent-updates.json'), 'utf8')) as UpdatesFixture;
    const { model, optimizer } = upstreamState(start, { memory_size: 16, sequence_length: 4 });
    for (const [u, update] of fixture.updates.entries()) {
      const noise = [...update.eps];
      fixNoise(optimizer, noise);
      const n = update.obs.length;
      const stats = optimizer.update(
        {
          count: n,
          observations: [Float32Array.from(update.obs)],
          nextObservations: [Float32Array.from(update.next_obs)],
          continuousActions: Float32Array.from(update.continuous),
          discreteActions: Int32Array.from(update.discrete),
          actionMasks: new Float32Array(2 * n).fill(1),
          rewards: Float32Array.from(update.rewards),
          dones: Float32Array.from(update.dones),
          memories: Float32Array.from(update.memories),
          criticMemories: Float32Array.from(update.critic_memories),
          masks: Float32Array.from(update.masks),
        },
        u,
      );
      expect(noise).toEqual([]);
      for (const [key, value] of Object.entries(update.stats)) {
        const ours = (stats as unknown as Record<string, number>)[key];
        if (Math.abs(ours - value) > 1e-5 + 1e-4 * Math.abs(value)) throw new Error(`update ${u}, ${key}: ours ${ours}, upstream ${value}`);
      }
    }
    // Parameters move by up to 4 x 5e-3 here: a wrong step size, order or target rate shows far above this tolerance.
    const close = (ours: Float32Array, block: ParameterBlock, theirs: number[] | undefined, what: string) => {
      if (theirs === undefined) throw new Error(`The fixture has no ${what}.`);
      blockOf(ours, block).forEach((v, i) => {
        if (Math.abs(v - theirs[i]) > 2e-5) throw new Error(`${what}[${i}]: ours ${v}, upstream ${theirs[i]}`);
      });
    };
    for (const block of model.blocks) {
      const network = block.name.startsWith('actor.') ? fixture.after.actor : fixture.after.critic;
      close(model.parameters, block, network[actorCriticTorchName(block.name)], block.name);
    }
    for (const block of optimizer.target.blocks.filter((b) => b.name.startsWith('critic.'))) {
      close(optimizer.target.parameters, block, fixture.after.target[actorCriticTorchName(block.name)], `target ${block.name}`);
    }
    for (const [q, theirs] of [[optimizer.q1, fixture.after.q1], [optimizer.q2, fixture.after.q2]] as const) {
      for (const block of q.blocks) close(q.parameters, block, theirs[actorCriticTorchName(block.name)], `q ${block.name}`);
    }
    const alphas = [...fixture.logEntCoef.discrete, ...fixture.logEntCoef.continuous];
    Array.from(optimizer.logEntropyCoefficients).forEach((v, i) => expect(v).toBeCloseTo(alphas[i], 6));
  });
});
