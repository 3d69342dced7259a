/**
 * @jest-environment ./test/export/onnxruntime-environment.js
 *
 * The ONNX export of policies with variable-length observations: upstream's contract (each one
 * obs_<k> of [batch, entities, entity size], unnormalized); onnxruntime's deterministic actions
 * are those of our own forward pass, with padded entities (masked in the graph as in ours), with
 * and without other observations beside them (x_self), and with memory.
 */
import * as ort from 'onnxruntime-node';
import { memoryLogger } from '../../src/common/logger';
import { SeededRandom } from '../../src/common/random';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType } from '../../src/env/behavior-spec';
import { readModelContract } from '../../src/export/onnx-contract';
import { exportPolicy } from '../../src/export/onnx-export';
import { selectBackend } from '../../src/networks/backend';
import { model, observations, vectorObservation, visualObservation } from '../networks/model-fixtures';
import { policyFeeds, randomMasks } from './policy-inputs';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

function entities(maxEntities: number, size: number): ObservationSpec {
  return {
    shape: [maxEntities, size],
    dimensionProperty: [DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE],
    observationType: ObservationType.DEFAULT,
    name: `buffer${maxEntities}x${size}`,
  };
}

/** Zeroes entities at random (padding), and every entity of agent 0's first variable-length observation. */
function pad(spec: BehaviorSpec, obs: Float32Array[], count: number, random: SeededRandom): void {
  let first = true;
  spec.observationSpecs.forEach((o, k) => {
    if (o.shape.length !== 2) return;
    const [n, size] = o.shape;
    for (let i = 0; i < count; i++) {
      for (let j = 0; j < n; j++) {
        if ((first && i === 0) || random.next() < 0.4) obs[k].fill(0, (i * n + j) * size, (i * n + j + 1) * size);
      }
    }
    first = false;
  });
}

const beside: BehaviorSpec = {
  observationSpecs: [vectorObservation(3), entities(6, 4), vectorObservation(2), entities(3, 4)],
  actionSpec: new ActionSpec(2, [3, 2]),
};
const alone: BehaviorSpec = { observationSpecs: [entities(5, 3)], actionSpec: new ActionSpec(1, []) };
const withImageGoal: BehaviorSpec = {
  observationSpecs: [{ ...visualObservation(3, 20, 20), observationType: ObservationType.GOAL_SIGNAL }, entities(10, 5)],
  actionSpec: new ActionSpec(0, [2]),
};

describe.each([
  { label: 'two variable-length observations among vector ones, normalized', spec: beside, normalize: true, memory: false },
  { label: 'a variable-length observation alone (no x_self)', spec: alone, normalize: false, memory: false },
  { label: 'beside an image goal (hypernetwork on its encoding)', spec: withImageGoal, normalize: false, memory: false },
  { label: 'with memory', spec: beside, normalize: false, memory: true },
])('onnxruntime runs a policy with variable-length observations: $label', ({ spec, normalize, memory }) => {
  it('gives the deterministic actions of our own forward pass', async () => {
    const net = model(spec, {
      network: { normalize, deterministic: true, num_layers: 1, hidden_units: 16, memory: memory ? { memory_size: 8, sequence_length: 4 } : null },
      seed: 3,
    });
    const random = new SeededRandom(5);
    const count = 7;
    const obs = observations(spec, count, random);
    pad(spec, obs, count, random);
    net.updateNormalization(obs, count);
    // Biases away from their zero start, so that each one's place in the graph matters.
    for (const block of net.blocks.filter((b) => b.name.startsWith('actor.') && b.name.endsWith('bias'))) {
      for (let k = 0; k < block.shape.reduce((a, b) => a * b, 1); k++) net.parameters[block.offset + k] += 0.1 * random.gaussian();
    }
    net.parametersChanged();
    const masks = spec.actionSpec.discreteSize > 0 ? randomMasks(spec.actionSpec.discreteBranches, count, random, 0.4) : null;
    const memories = memory ? new Float32Array(count * 8).map(() => random.gaussian()) : undefined;
    const session = await ort.InferenceSession.create(exportPolicy(net, spec));
    try {
      const feeds = policyFeeds(spec, obs, count, masks);
      if (memories !== undefined) feeds.recurrent_in = new ort.Tensor('float32', memories, [count, 1, 8]);
      const outputs = await session.run(feeds);
      const ours = net.act(obs, count, masks, { memories });
      if (spec.actionSpec.continuousSize > 0) {
        const deterministic = outputs.deterministic_continuous_actions.data as Float32Array;
        expect(deterministic).toHaveLength(ours.envAction.continuous.length);
        ours.envAction.continuous.forEach((value, i) => expect(Math.abs(deterministic[i] - value)).toBeLessThan(1e-4));
      }
      if (masks !== null) {
        expect(Array.from(outputs.deterministic_discrete_actions.data as BigInt64Array, Number)).toEqual(Array.from(ours.action.discrete));
      }
      if (memories !== undefined) {
        const after = outputs.recurrent_out.data as Float32Array;
        ours.memories!.forEach((value, i) => expect(Math.abs(after[i] - value)).toBeLessThan(1e-4));
      }
    } finally {
      await session.release();
    }
    net.dispose();
  });
});

describe('the model contract with variable-length observations', () => {
  it('takes each as obs_<k> [batch, entities, entity size], in observation order', () => {
    const contract = readModelContract(exportPolicy(model(beside), beside));
    expect(contract.inputs.map((input) => `${input.name} ${JSON.stringify(input.shape)}`)).toEqual([
      'obs_0 [null,3]',
      'obs_1 [null,6,4]',
      'obs_2 [null,2]',
      'obs_3 [null,3,4]',
      'action_masks [null,5]',
    ]);
  });
});
