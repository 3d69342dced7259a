/** Behaviors, models and minibatches for the network and PPO tests. */
import type { NetworkSettings } from '../../src/config/settings';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType, observationSize } from '../../src/env/behavior-spec';
import { ActorCritic, HeadGradients, HeadOutputs, SequenceMemories } from '../../src/networks/actor-critic';
import { ParameterBlock, blockValues } from '../../src/networks/layers/layer';
import type { CriticEstimates, GroupActionBatch } from '../../src/networks/poca-critic';
import { SeededRandom } from '../../src/common/random';
import { PpoMinibatch } from '../../src/trainers/ppo/loss';
import { centralDifference } from '../helpers/finite-differences';

export function vectorObservation(size: number, observationType = ObservationType.DEFAULT): ObservationSpec {
  return { shape: [size], dimensionProperty: [DimensionProperty.NONE], observationType, name: `vector${size}` };
}

/** An image as com.unity.ml-agents 2+ describes a camera: channel first. */
export function visualObservation(channels: number, height: number, width: number): ObservationSpec {
  return {
    shape: [channels, height, width],
    dimensionProperty: [DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE],
    observationType: ObservationType.DEFAULT,
    name: `camera${channels}x${height}x${width}`,
  };
}

/** A variable-length observation as Unity's BufferSensor describes it: [max entities, entity size], (VARIABLE_SIZE, NONE). */
export function entityObservation(maxEntities: number, size: number, observationType = ObservationType.DEFAULT): ObservationSpec {
  return {
    shape: [maxEntities, size],
    dimensionProperty: [DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE],
    observationType,
    name: `buffer${maxEntities}x${size}`,
  };
}

export function behavior(observationSizes: number[], actionSpec: ActionSpec): BehaviorSpec {
  return { observationSpecs: observationSizes.map((size) => vectorObservation(size)), actionSpec };
}

export function network(overrides: Partial<NetworkSettings> = {}): NetworkSettings {
  return {
    normalize: false,
    hidden_units: 16,
    num_layers: 2,
    vis_encode_type: 'simple',
    memory: null,
    goal_conditioning_type: 'hyper',
    deterministic: false,
    ...overrides,
  };
}

export function model(
  spec: BehaviorSpec,
  options: { network?: Partial<NetworkSettings>; rewardSignals?: string[]; sharedCritic?: boolean; seed?: number } = {},
): ActorCritic {
  return new ActorCritic(spec, {
    network: network(options.network),
    rewardSignals: options.rewardSignals ?? ['extrinsic'],
    sharedCritic: options.sharedCritic ?? false,
    seed: options.seed ?? 1,
  });
}

/** Random observations, one array per observation of the model's behavior. */
export function observations(spec: BehaviorSpec, count: number, random: SeededRandom): Float32Array[] {
  return spec.observationSpecs.map((obs) => new Float32Array(count * observationSize(obs)).map(() => 1 + 2 * random.gaussian()));
}

/**
 * A batch for POCA's critic: `count` samples of `slots` groupmate slots, each groupmate's action
 * drawn at random; `absent` lists the [sample, slot] pairs left empty. About a third of the
 * variable-length observations' entities are padding (zeros).
 */
export function groupBatch(spec: BehaviorSpec, count: number, slots: number, absent: ReadonlyArray<[number, number]>, seed: number): GroupActionBatch {
  const random = new SeededRandom(seed);
  const padded = (obs: Float32Array[]) => {
    spec.observationSpecs.forEach(({ shape }, k) => {
      if (shape.length !== 2) return;
      for (let e = 0; e < obs[k].length / shape[1]; e++) if (random.next() < 0.3) obs[k].fill(0, e * shape[1], (e + 1) * shape[1]);
    });
    return obs;
  };
  const groupObservations = padded(observations(spec, count * slots, random));
  for (const [i, m] of absent) {
    spec.observationSpecs.forEach((obs, k) => {
      const size = observationSize(obs);
      groupObservations[k].fill(NaN, (i * slots + m) * size, (i * slots + m + 1) * size);
    });
  }
  const { continuousSize, discreteBranches } = spec.actionSpec;
  return {
    count,
    slots,
    observations: padded(observations(spec, count, random)),
    groupObservations,
    groupContinuousActions: new Float32Array(count * slots * continuousSize).map(() => random.gaussian()),
    groupDiscreteActions: Int32Array.from({ length: count * slots * discreteBranches.length }, (_, j) => random.int(discreteBranches[j % discreteBranches.length])),
  };
}

/** A loss on POCA's critic's estimates (up to 2 signals, 64 samples) that weighs every value and squares every baseline, with its gradient. */
export function estimateLoss(seed: number): (estimates: CriticEstimates, gradients: CriticEstimates) => number {
  const random = new SeededRandom(seed);
  const weights = Array.from({ length: 2 }, () => Float32Array.from({ length: 64 }, () => random.gaussian()));
  return (estimates, gradients) => {
    let total = 0;
    estimates.values.forEach((values, s) => {
      values.forEach((v, i) => {
        total += weights[s][i] * v;
        gradients.values[s][i] += weights[s][i];
      });
      estimates.baselines[s].forEach((b, i) => {
        total += weights[1 - s][i] * b * b;
        gradients.baselines[s][i] += 2 * weights[1 - s][i] * b;
      });
    });
    return total;
  };
}

/**
 * A minibatch as the buffer would hold it: actions the model chose (one action per branch
 * forbidden at random), acting-time log probabilities and values moved a little, as if the
 * model had learned since, random advantages and returns.
 */
export function minibatch(net: ActorCritic, spec: BehaviorSpec, count: number, seed: number): PpoMinibatch {
  const random = new SeededRandom(seed);
  const obs = observations(spec, count, random);
  const branches = spec.actionSpec.discreteBranches;
  const maskWidth = branches.reduce((a, b) => a + b, 0);
  const actionMasks = new Float32Array(count * maskWidth).fill(1);
  for (let i = 0; i < count; i++) {
    let first = 0;
    for (const size of branches) {
      actionMasks[i * maskWidth + first + random.int(size)] = 0;
      first += size;
    }
  }
  const acted = net.act(obs, count, actionMasks);
  const values = net.values(obs, count);
  const nudge = (values: Float32Array, amount: number) => values.map((v) => v + random.range(-amount, amount));
  const perSignal = (make: (name: string) => Float32Array) =>
    Object.fromEntries(net.rewardSignals.map((name) => [name, make(name)]));
  return {
    count,
    observations: obs,
    continuousActions: acted.action.continuous,
    discreteActions: acted.action.discrete,
    actionMasks,
    oldContinuousLogProbs: nudge(acted.logProbs.continuous, 0.3),
    oldDiscreteLogProbs: nudge(acted.logProbs.discrete, 0.3),
    advantages: new Float32Array(count).map(() => random.gaussian()),
    returns: perSignal(() => new Float32Array(count).map(() => random.gaussian())),
    oldValues: perSignal((name) => nudge(values[name], 0.4)),
  };
}

/** A loss that reads every head output with its own weight. */
export function headLoss(random: SeededRandom): (outputs: HeadOutputs, gradients: HeadGradients) => number {
  const weights = new Float64Array(64).map(() => random.gaussian());
  return (outputs, gradients) => {
    const parts: Array<[Float32Array, Float32Array]> = [
      [outputs.means, gradients.means],
      [outputs.logits, gradients.logits],
      [outputs.values[0], gradients.values[0]],
    ];
    let total = 0;
    let k = 0;
    for (const [values, grads] of parts) {
      for (let i = 0; i < values.length; i++, k++) {
        const w = weights[k % weights.length];
        total += w * Math.tanh(values[i]);
        grads[i] += w * (1 - Math.tanh(values[i]) ** 2);
      }
    }
    return total;
  };
}

/**
 * Checks the 2 largest gradient entries of each of `blocks` (of a loss reading every head through
 * headLoss) against central differences of step `step`.
 */
export function expectBlockGradientsAsFiniteDifferences(
  net: ActorCritic,
  obs: Float32Array[],
  count: number,
  blocks: readonly ParameterBlock[],
  step: number,
  sequences?: SequenceMemories,
): void {
  const lossFunction = headLoss(new SeededRandom(7));
  expectGradientsAsFiniteDifferences(net, () => net.computeGradient(obs, count, lossFunction, sequences), blocks, step);
}

/**
 * Checks the 2 largest entries of each of `blocks` in the gradient `pass` gives against central
 * differences of step `step` of the loss it gives, for any network with a flat parameter vector.
 */
export function expectGradientsAsFiniteDifferences(
  net: { readonly parameters: Float32Array; parametersChanged(): void },
  pass: () => { readonly loss: number; readonly gradient: Float32Array },
  blocks: readonly ParameterBlock[],
  step: number,
): void {
  const loss = (): number => pass().loss;
  const gradient = Float32Array.from(pass().gradient);
  expect(blocks.length).toBeGreaterThan(3);
  for (const block of blocks) {
    const values = blockValues(gradient, block);
    const largest = [...values.keys()].sort((a, b) => Math.abs(values[b]) - Math.abs(values[a])).slice(0, 2);
    expect(Math.abs(values[largest[0]])).toBeGreaterThan(1e-5);
    for (const k of largest) {
      const expected = centralDifference(net.parameters, block.offset + k, step, loss, () => net.parametersChanged());
      if (Math.abs(expected - values[k]) > 2e-3 + 0.03 * Math.abs(expected)) {
        throw new Error(`${block.name}[${k}]: backward gives ${values[k]}, finite differences ${expected}`);
      }
    }
  }
}
