/**
 * The parameters held as one tensor for an update (device-parameters.ts), checked on wasm, where
 * the same code runs as on WebGPU but every read is synchronous: each kind of model's training
 * pass (the actor-critic's, POCA's critic's) takes its weights from that tensor alone, and several
 * Adams step it as they would step the arrays. test/networks/webgpu.test.ts checks whole updates on WebGPU (SwiftShader).
 */
import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../../src/common/logger';
import { SeededRandom } from '../../src/common/random';
import type { NetworkSettings } from '../../src/config/settings';
import { ActionSpec, BehaviorSpec, ObservationType } from '../../src/env/behavior-spec';
import { ActorCritic, HeadGradients, HeadOutputs, SequenceMemories } from '../../src/networks/actor-critic';
import { Adam } from '../../src/networks/adam';
import { selectBackend } from '../../src/networks/backend';
import { DeviceParameters, DeviceResidentModel } from '../../src/networks/device-parameters';
import { PocaCritic, PocaSequences } from '../../src/networks/poca-critic';
import { passReadingNothing, runPass, scoped } from '../../src/networks/tensor-io';
import { behavior, entityObservation, estimateLoss, groupBatch, model, network, observations, vectorObservation, visualObservation } from './model-fixtures';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

const COUNT = 8;

interface Case {
  readonly spec: BehaviorSpec;
  readonly network: Partial<NetworkSettings>;
}

const CASES: Record<string, Case> = {
  vector: { spec: behavior([6], ActionSpec.createContinuous(2)), network: { normalize: true } },
  // 2 sequences of 4 steps.
  memory: { spec: behavior([6], new ActionSpec(2, [3])), network: { memory: { memory_size: 8, sequence_length: 4 } } },
  'variable-length observations and a goal (hyper)': {
    spec: { observationSpecs: [vectorObservation(4), entityObservation(5, 3), vectorObservation(2, ObservationType.GOAL_SIGNAL)], actionSpec: ActionSpec.createDiscrete([3, 2]) },
    network: {},
  },
  camera: { spec: { observationSpecs: [visualObservation(3, 20, 20), vectorObservation(3)], actionSpec: ActionSpec.createDiscrete([3]) }, network: { num_layers: 1 } },
};

/** Each sequence's memories at random, for a model with memory; none without. */
function sequencesOf(net: ActorCritic, random: SeededRandom): SequenceMemories | undefined {
  const length = net.options.network.memory?.sequence_length;
  if (length === undefined) return undefined;
  const memories = () => new Float32Array((COUNT / length) * net.memorySize).map(() => random.gaussian());
  return { length, actor: memories(), critic: memories() };
}

/** A loss reading every head output it is given (the values too, when the critic runs) and log_sigma, each with its own weight. */
function loss(outputs: HeadOutputs, gradients: HeadGradients): number {
  const parts: Array<[Float32Array, Float32Array]> = [
    [outputs.means, gradients.means],
    [outputs.logits, gradients.logits],
    [outputs.logStd, gradients.logStd],
    ...outputs.values.map((values, s): [Float32Array, Float32Array] => [values, gradients.values[s]]),
  ];
  let total = 0;
  let k = 0;
  for (const [values, grads] of parts) {
    for (let i = 0; i < values.length; i++, k++) {
      const w = Math.sin(k + 1);
      total += w * Math.tanh(values[i]);
      grads[i] += w * (1 - Math.tanh(values[i]) ** 2);
    }
  }
  return total;
}

/** A training pass's gradient of loss(), with `actorOnly` as behavioral cloning runs it. */
function gradientOf(net: ActorCritic, batch: Float32Array[], sequences: SequenceMemories | undefined, actorOnly: boolean): Float32Array {
  return runPass(scoped(net.gradientPass(batch, COUNT, (outputs, gradients) => passReadingNothing(() => loss(outputs, gradients)), sequences, actorOnly))).gradient.slice();
}

/** Runs `passes` with `net`'s parameters held as one tensor and its array poisoned with NaN; puts both back after. */
function onHeldTensor<T>(net: DeviceResidentModel, passes: () => T): T {
  const values = net.parameters.slice();
  const device = tf.tensor1d(values);
  net.useDeviceParameters(device);
  net.parameters.fill(NaN);
  try {
    return passes();
  } finally {
    net.useDeviceParameters(null);
    net.parameters.set(values);
    device.dispose();
  }
}

/** A gradient finite and within 1e-6 of the largest of `wanted`'s values, labelled `what`. */
function expectGradientAsWanted(gradient: Float32Array, wanted: Float32Array, what: string): void {
  expect([what, gradient.every(Number.isFinite)]).toEqual([what, true]);
  const scale = wanted.reduce((most, g) => Math.max(most, Math.abs(g)), 0);
  const worst = gradient.reduce((most, g, i) => Math.max(most, Math.abs(g - wanted[i])), 0);
  expect([what, worst <= 1e-6 * scale]).toEqual([what, true]);
}

describe('training passes on the parameters held as one tensor', () => {
  it.each(Object.keys(CASES))('%s: every layer reads the tensor, not the array (poisoned with NaN), and gives the array\'s gradient', (name) => {
    const { spec, network } = CASES[name];
    const net = model(spec, { network });
    const random = new SeededRandom(3);
    const batch = observations(spec, COUNT, random);
    const sequences = sequencesOf(net, random);
    const expected = [gradientOf(net, batch, sequences, false), gradientOf(net, batch, sequences, true)];

    const [both, actorOnly] = onHeldTensor(net, () => [gradientOf(net, batch, sequences, false), gradientOf(net, batch, sequences, true)]);
    expectGradientAsWanted(both, expected[0], 'actor and critic');
    expectGradientAsWanted(actorOnly, expected[1], 'actor alone');
    // The actor's pass leaves the critic's gradient at zero.
    expect(actorOnly.some((g, i) => g === 0 && expected[0][i] !== 0)).toBe(true);
  });
});

const CRITIC_CASES: Record<string, Case> = {
  // 2 sequences of 4 steps, the value and the baseline passes each from memories of their own.
  memory: { spec: behavior([6], new ActionSpec(2, [3])), network: { memory: { memory_size: 8, sequence_length: 4 } } },
  // Each member's entities through the critic's entity attention, beside its vector values.
  'variable-length observations': { spec: { observationSpecs: [vectorObservation(4), entityObservation(5, 3)], actionSpec: ActionSpec.createDiscrete([3, 2]) }, network: {} },
  camera: { spec: { observationSpecs: [visualObservation(3, 20, 20), vectorObservation(3)], actionSpec: ActionSpec.createDiscrete([3]) }, network: { num_layers: 1 } },
};

describe("POCA's critic's training pass on its parameters held as one tensor", () => {
  it.each(Object.keys(CRITIC_CASES))('%s: every layer reads the tensor, not the array (poisoned with NaN), and gives the array\'s gradient', (name) => {
    const { spec, network: overrides } = CRITIC_CASES[name];
    const settings = network(overrides);
    const critic = new PocaCritic(spec, settings, ['extrinsic'], 3);
    // Samples 1 and 5 miss a groupmate.
    const batch = groupBatch(spec, COUNT, 2, [[1, 1], [5, 0]], 4);
    const random = new SeededRandom(6);
    const memories = () => new Float32Array((COUNT / 4) * critic.memorySize).map(() => random.gaussian());
    const sequences: PocaSequences | undefined = settings.memory === null ? undefined : { length: 4, value: memories(), baseline: memories() };
    const gradient = () => critic.computeGradient(batch, estimateLoss(9), sequences).gradient.slice();
    const expected = gradient();
    expect(expected.some((g) => g !== 0)).toBe(true);
    expectGradientAsWanted(onHeldTensor(critic, gradient), expected, name);
  });
});

describe('DeviceParameters', () => {
  /** A model's vector of `size` values whose passes would read `device`. */
  function holder(values: Float32Array): { parameters: Float32Array; device: tf.Tensor1D | null; useDeviceParameters(device: tf.Tensor1D | null): void } {
    return {
      parameters: values,
      device: null,
      useDeviceParameters(device) {
        this.device = device;
      },
    };
  }

  it('steps one vector with several Adams as each would step the arrays, and reads the vector and every moment back at once', () => {
    const random = new SeededRandom(9);
    const size = 50;
    const start = new Float32Array(size).map(() => random.gaussian());
    const gradients = [0, 1, 2].map(() => new Float32Array(size).map(() => random.gaussian()));
    // Arrays: the trainer's Adam, cloning's, then the trainer's again.
    const arrays = { parameters: start.slice(), first: new Adam(size), second: new Adam(size) };
    arrays.first.apply(arrays.parameters, gradients[0], 1e-2);
    arrays.second.apply(arrays.parameters, gradients[1], 3e-2);
    arrays.first.apply(arrays.parameters, gradients[2], 1e-2);

    const model = holder(start.slice());
    const [first, second] = [new Adam(size), new Adam(size)];
    const device = new DeviceParameters(model, first);
    try {
      expect(model.device).not.toBeNull();
      device.step(first, gradients[0].slice(), 1e-2);
      device.step(second, gradients[1].slice(), 3e-2);
      device.step(first, gradients[2].slice(), 1e-2);
      // The arrays wait for the read back.
      expect([...model.parameters]).toEqual([...start]);
      expect(second.firstMoment.every((m) => m === 0)).toBe(true);
      runPass(device.readBack());
    } finally {
      device.dispose();
    }
    expect(model.device).toBeNull();
    const close = (actual: Float32Array, expected: Float32Array) => actual.forEach((v, i) => expect(v).toBeCloseTo(expected[i], 6));
    close(model.parameters, arrays.parameters);
    close(first.firstMoment, arrays.first.firstMoment);
    close(first.secondMoment, arrays.first.secondMoment);
    close(second.firstMoment, arrays.second.firstMoment);
    close(second.secondMoment, arrays.second.secondMoment);
    expect([first.step, second.step]).toEqual([2, 1]);
  });

  it('puts back the step count of every Adam it stepped, for an update that fails', () => {
    const model = holder(new Float32Array(4));
    const [first, second] = [new Adam(4), new Adam(4)];
    second.step = 7;
    const device = new DeviceParameters(model, first);
    device.step(first, new Float32Array(4).fill(1), 1e-3);
    device.step(second, new Float32Array(4).fill(1), 1e-3);
    expect([first.step, second.step]).toEqual([1, 8]);
    device.restoreSteps();
    device.dispose();
    expect([first.step, second.step]).toEqual([0, 7]);
  });

  it('refuses an Adam of another size, naming both', () => {
    const device = new DeviceParameters(holder(new Float32Array(4)), new Adam(4));
    try {
      expect(() => device.step(new Adam(5), new Float32Array(4), 1e-3)).toThrow('An Adam of 5 values cannot step a parameter vector of 4.');
    } finally {
      device.dispose();
    }
  });
});
